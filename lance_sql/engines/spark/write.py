"""``df.write.format("lance_ns")``: tasks stage Lance files, the driver commits once.

The target (the namespace at the root, or one the write creates: its ``__manifest`` is
committed with its partition rows, so of two concurrent creators one fails) is planned
once on the driver. Tasks stage uncommitted files journaled per attempt
(:mod:`.write_journal`) under one write id, so a new partition several tasks write ends
as one table. ``replaceWhere`` deletes what the filter matches in the same commit.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from lance_sql.engines.spark.options import _root, open_namespace, storage_options, text_option
from lance_sql.errors import LanceSqlError, NotFoundError, SpecError

OPTION = "replaceWhere"
SPEC_OPTIONS = ("spec", "partitionBy")  # options giving the spec of a namespace to create


@dataclass
class StagedCommit(WriterCommitMessage):
    """One task attempt's staged write (``StagedWrite.to_json()``), row count and journal id."""

    staged: str
    rows: int
    attempt: str = ""


def spark_encoding(f: pa.Field) -> pa.DataType | None:
    """The Arrow type Spark delivers a namespace field as (None when it is the type itself)."""
    from lance_sql.engines.spark.types import spark_arrow_type
    from lance_sql.errors import UnsupportedFeatureError

    try:
        t = spark_arrow_type(f.type, f.name)
    except UnsupportedFeatureError:
        return None
    return None if t.equals(f.type) else t


class LanceNamespaceWriter(DataSourceArrowWriter):
    """Created on the driver, pickled to every task."""

    def __init__(self, options: dict[str, str], overwrite: bool, spark_schema: Any = None) -> None:
        from lance_sql.engines.spark.types import spark_target_schema
        from lance_sql.tables.namespace.schema_rule import check_schema

        self.options = dict(options)
        self.mode = "overwrite" if overwrite else "append"
        self.dynamic = overwrite and _dynamic(self.options)
        self.where = _replace_where(self.options, overwrite, self.dynamic)
        if self.where is not None:
            self.mode = "append"  # tasks stage appends; the commit deletes what `where` matches
        arrow = None if spark_schema is None else spark_target_schema(spark_schema)
        self.plan = plan_write(self.options, arrow)
        self.root = self.plan.root
        self.schema = self.plan.schema
        if arrow is not None:  # fail on the driver, before any task writes
            check_schema(arrow, self.schema, encoded=spark_encoding, source=self._source)
        if self.where is not None:
            check_filter(self.root, self.where, self.schema)
        self.write_id = uuid.uuid4().hex

    @property
    def _source(self) -> str:
        return f"lance_ns {self.root}: the DataFrame"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedCommit:
        from lance_sql.engines.spark.write_journal import AttemptLease

        plan = self.plan
        with AttemptLease(plan.root, self.write_id, None, plan.storage_options) as lease:
            return self._write(iterator, lease)

    def _write(self, iterator: Iterator[pa.RecordBatch], lease: Any) -> StagedCommit:
        from lance_sql.engines.spark.options import int_option
        from lance_sql.engines.spark.write_journal import stage_journaled
        from lance_sql.tables.namespace.schema_rule import conform_all
        from lance_sql.tables.namespace.writer import DEFAULT_BUFFER_BYTES

        plan = self.plan
        rows = conform_all(iterator, plan.schema, encoded=spark_encoding, source=self._source)
        if self.where is not None:  # refuse rows outside the filter before the commit
            rows = checked(rows, plan.root, self.where)
        staged = stage_journaled(
            rows,
            lease,
            plan.snapshot,
            plan.schema,
            plan.spec,
            mode=self.mode,
            buffer_bytes=int_option(self.options, "buffer_bytes") or DEFAULT_BUFFER_BYTES,
        )
        return StagedCommit(staged.to_json(), staged.rows, lease.attempt)

    def commit(self, messages: list[StagedCommit | None]) -> None:
        from lance_sql.engines.spark.write_journal import finish_write
        from lance_sql.tables.namespace.writer import NamespaceWriter

        stages = self._staged(messages)
        plan = self.plan
        if plan.create:
            snap = commit_create(plan, stages, self.mode)
        else:
            from lance_sql.tables.namespace.manifest_table import read_manifest

            latest = read_manifest(plan.root, storage_options=plan.storage_options)
            if self.where is not None:
                snap = commit_replace_where(plan, self.where, stages)
            elif self.dynamic and not any(st.partitions for st in stages):
                snap = latest  # no rows: no partition to replace, nothing to commit
            else:  # dynamic: replace the current-spec partitions the stages hold, keep the rest
                snap = NamespaceWriter(
                    latest,
                    plan.schema,
                    plan.spec,
                    mode=self.mode,
                    storage_options=plan.storage_options,
                    keep_untouched=self.dynamic,
                ).commit_stages(stages)
        attempts = [m.attempt for m in messages if isinstance(m, StagedCommit) and m.attempt]
        finish_write(plan.root, self.write_id, plan.storage_options, stages, attempts, snap)

    def abort(self, messages: list[StagedCommit | None]) -> None:
        from lance_sql.engines.spark.write_journal import finish_write
        from lance_sql.tables.namespace.staging import abort_staged

        stages = self._staged(messages)
        # (without a namespace at the root, as for a create, abort_staged leaves all alone)
        abort_staged(self.root, stages, storage_options=self.plan.storage_options)
        finish_write(self.root, self.write_id, self.plan.storage_options)

    @staticmethod
    def _staged(messages: list[StagedCommit | None]) -> list[Any]:
        from lance_sql.tables.namespace.staging import StagedWrite

        return [
            StagedWrite.from_json(m.staged)
            for m in messages
            if isinstance(m, StagedCommit) and m.staged
        ]


def _dynamic(options: dict[str, str]) -> bool:
    """Whether an overwrite replaces only the partitions it writes (``partitionOverwriteMode``)."""
    mode = (text_option(options, "partitionOverwriteMode") or "static").lower()
    if mode not in ("static", "dynamic"):
        raise LanceSqlError(
            f"lance_ns {options.get('path')}: option partitionOverwriteMode={mode!r} is not "
            "static or dynamic"
        )
    return mode == "dynamic"


def _replace_where(options: dict[str, str], overwrite: bool, dynamic: bool) -> str | None:
    """The ``replaceWhere`` filter (overwrite only, not with dynamic partitions), or None."""
    where = text_option(options, OPTION)
    if where is not None and (not overwrite or dynamic):
        raise LanceSqlError(
            f"lance_ns {options.get('path')}: option {OPTION} needs mode('overwrite') "
            "without partitionOverwriteMode=dynamic"
        )
    return where


def check_filter(root: str, where: str, schema: pa.Schema) -> None:
    """Plan ``where`` over ``schema`` as the row operations' condition (no rows read)."""
    from lance_sql.tables.namespace.sql_eval import SqlExpressionError, row_condition

    try:
        row_condition(schema, where)
    except SqlExpressionError as exc:
        raise LanceSqlError(f"lance_ns {root}: option {OPTION}: {exc}") from exc


def checked(batches: Iterable[pa.RecordBatch], root: str, where: str) -> Iterator[pa.RecordBatch]:
    """``batches`` (namespace schema), refusing the first one with a row outside ``where``."""
    from lance_sql.tables.namespace.overwrite import RowsOutsideFilterError
    from lance_sql.tables.namespace.sql_eval import matching_mask

    for batch in batches:
        if batch.num_rows:
            mask = matching_mask(pa.Table.from_batches([batch]), where)
            outside = batch.num_rows - int(mask.true_count)
            if outside:
                raise RowsOutsideFilterError(
                    f"lance_ns {root}: {outside} row(s) of the DataFrame do not match option "
                    f"{OPTION} ({where}); nothing was written"
                )
        yield batch


def commit_replace_where(plan: Any, where: str, stages: Sequence[Any]) -> Any:
    """Delete the rows ``where`` matches and adopt ``stages``, in one ``__manifest`` commit."""
    from lance_sql.tables.namespace.delete import delete_matching
    from lance_sql.tables.namespace.mutation import Mutation
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    ns = PartitionedNamespace.open(plan.root, storage_options=plan.storage_options)
    m = Mutation(ns)
    delete_matching(m, where)
    snap = m.commit(stages)  # the staged files join their partitions after the drops
    ns._set_snapshot(snap)
    return snap


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
