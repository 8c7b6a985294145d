"""What a ``lance_ns`` write writes into: the namespace at its root, or one it creates.

Planned once on the driver and pickled to every task, so all stage against one snapshot.
A created namespace's ``__manifest`` is committed with its partition rows: readers never
see it without them, and of two concurrent creators one fails.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lance_sql.engines.spark.options import _root, open_namespace, storage_options, text_option
from lance_sql.errors import LanceSqlError, NotFoundError, SpecError

#: Write options that give the partition spec of a namespace the write creates.
SPEC_OPTIONS = ("spec", "partitionBy")


@dataclass(frozen=True)
class WritePlan:
    """The snapshot, schema and spec every task stages against."""

    root: str
    storage_options: dict[str, str] | None
    snapshot: Any  # ManifestSnapshot (version 0 and not yet on disk when ``create``)
    schema: pa.Schema
    spec: Any  # PartitionSpec
    create: bool


def spec_option(options: Mapping[str, str]) -> str | None:
    """The spec a write names (``spec`` or ``partitionBy``), None when none; both is an error."""
    given = {k: v for k in SPEC_OPTIONS if (v := text_option(options, k))}
    if len(given) > 1:
        raise LanceSqlError(
            f"lance_ns {options.get('path')}: give the partition spec once "
            f"(options {sorted(given)} both set)"
        )
    return next(iter(given.values()), None)


def plan_write(options: Mapping[str, str], arrow_schema: pa.Schema) -> WritePlan:
    """The plan for writing a DataFrame of ``arrow_schema`` as the options say."""
    root = _root(options)
    opts = storage_options(options)
    spec_text = spec_option(options)
    try:
        ns = open_namespace(options)
    except NotFoundError:
        if spec_text is None:
            raise LanceSqlError(
                f"lance_ns {root}: no namespace there; to create one with this write, give "
                "its partition spec, e.g. .option('partitionBy', 'bucket(16, id), days(ts)') "
                "or .option('spec', '<spec JSON>')"
            ) from None
        return _create_plan(root, opts, arrow_schema, spec_text)
    if spec_text is not None:
        _check_same_spec(root, ns, spec_text)
    return WritePlan(str(ns.root), opts, ns.snapshot, ns._schema, ns.current_spec, False)


def _check_same_spec(root: str, ns: Any, text: str) -> None:
    """A spec option on an existing namespace must be its current spec (no implicit evolution)."""
    from lance_sql.tables.namespace.spec_build import spec_of

    wanted = spec_of(text, ns.schema, spec_id=ns.current_spec.id)
    have = ns.current_spec.fields
    same = len(wanted.fields) == len(have) and all(
        a.same_definition(b) for a, b in zip(wanted.fields, have, strict=True)
    )
    if not same:
        raise SpecError(
            f"lance_ns {root}: the namespace is partitioned by "
            f"{json.dumps([f.to_json() for f in have])}, not by the write's spec option "
            f"{text!r}; change a spec with PartitionedNamespace.add_spec",
            key="spec",
        )


def _create_plan(
    root: str, opts: dict[str, str] | None, arrow_schema: pa.Schema, text: str
) -> WritePlan:
    from lance_sql.tables.namespace.namespace import first_snapshot
    from lance_sql.tables.namespace.properties import normalize_schema
    from lance_sql.tables.namespace.spec_build import spec_of

    schema = normalize_schema(
        pa.schema([pa.field(f.name, f.type, f.nullable) for f in arrow_schema])
    )
    spec = spec_of(text, schema)
    return WritePlan(root, opts, first_snapshot(root, schema, spec), schema, spec, True)


def commit_create(plan: WritePlan, stages: list[Any], mode: str) -> Any:
    """Create ``__manifest`` with the staged partitions in one commit; return the snapshot.
    A namespace created at the root meanwhile: :class:`CommitConflictError`, nothing visible."""
    from lance_sql.errors import CommitConflictError
    from lance_sql.tables.namespace.manifest_table import (
        create_manifest,
        mirror_properties,
        read_manifest,
    )
    from lance_sql.tables.namespace.writer import commit_staged

    if not any(st.partitions for st in stages):  # an empty DataFrame still creates it
        return create_manifest(
            plan.root,
            plan.snapshot.lance_schema,
            plan.snapshot.properties,
            plan.snapshot.rows,
            storage_options=plan.storage_options,
        )
    try:
        snap = commit_staged(
            plan.snapshot,
            plan.schema,
            plan.spec,
            stages,
            mode=mode,
            storage_options=plan.storage_options,
        )
    except (OSError, CommitConflictError) as exc:
        try:
            read_manifest(plan.root, storage_options=plan.storage_options)
        except LanceSqlError:
            raise exc from None
        raise CommitConflictError(
            f"lance_ns {plan.root}: a namespace was created there while this write ran; "
            "nothing of this write was committed"
        ) from exc
    return mirror_properties(snap, plan.snapshot.properties, storage_options=plan.storage_options)
