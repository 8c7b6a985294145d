"""Evolving a namespace: new partition spec versions and top-level column changes, each one
``__manifest`` commit; partition tables are never touched (read by field id)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lance_sql.errors import SpecError
from lance_sql.spec.arrow_json import dumps, field_ids, schema_to_json
from lance_sql.spec.partition_field import PartitionField
from lance_sql.spec.transforms.spec_text import spec_fields
from lance_sql.tables.blob_columns import stored_schema
from lance_sql.tables.namespace import nested_evolution as nested
from lance_sql.tables.namespace.field_map import last_field_id, with_last_field_id
from lance_sql.tables.namespace.layout import NAMESPACE
from lance_sql.tables.namespace.manifest_table import (
    commit_rows,
    conform_rows,
    manifest_schema,
    mirror_properties,
    update_properties,
)
from lance_sql.tables.namespace.properties import SCHEMA_KEY, check_column_name
from lance_sql.tables.namespace.spec import PartitionSpec
from lance_sql.tables.namespace.spec_build import build_spec

if TYPE_CHECKING:
    from lance_sql.tables.namespace.namespace import PartitionedNamespace


def add_spec(
    ns: PartitionedNamespace, fields: Iterable[Mapping[str, Any] | PartitionField] | str
) -> PartitionSpec:
    """Create spec version N+1 (field ids reused per the spec); new data goes under it.

    ``fields``: field dicts or spec text, as ``PartitionedNamespace.create`` takes them.
    """
    ns.refresh()
    new_id = max(ns._specs) + 1
    spec = build_spec(spec_fields(fields), spec_id=new_id, schema=ns._schema, previous=ns._specs)
    mschema = manifest_schema([*ns.all_fields(), *spec.fields])
    rows = conform_rows(ns._snapshot.rows, mschema)
    rows = pa.concat_tables([rows, spec_row(spec, mschema)])
    snap = commit_rows(
        ns._snapshot,
        rows,
        schema=mschema,
        properties={spec.key: spec.to_json_string()},
        storage_options=ns.storage_options,
    )  # one commit: the new rows, columns and spec property together
    snap = mirror_properties(
        snap, {spec.key: spec.to_json_string()}, storage_options=ns.storage_options
    )
    ns._set_snapshot(snap)
    return spec


def spec_row(spec: PartitionSpec, mschema: pa.Schema) -> pa.Table:
    """The ``__manifest`` row (of schema ``mschema``) of ``spec``'s version namespace."""
    row = {"object_id": spec.namespace_name, "object_type": NAMESPACE, "metadata": "{}"}
    loose = pa.schema([pa.field(f.name, f.type, True) for f in mschema])
    return conform_rows(pa.Table.from_pylist([row], schema=loose), mschema)


def rename_column(ns: PartitionedNamespace, old: str, new: str) -> None:
    """Rename a namespace column, or a field inside a struct column (``"s.a"``, new name
    ``"b"``). The field keeps its id; partition tables are not rewritten (older ones are
    read through the field's former name, which no other field may take)."""
    ns.refresh()
    names = ns._schema.names
    if not new:
        raise SpecError("a column name must not be empty", key=SCHEMA_KEY)
    if "." in old and old not in names:
        _rename_nested(ns, old, new)
        return
    if old not in names:
        raise SpecError(f"no column named {old!r}", key=SCHEMA_KEY)
    if new in names:
        raise SpecError(f"a column named {new!r} already exists", key=SCHEMA_KEY)
    check_column_name(new)
    fields = [f.with_name(new) if f.name == old else f for f in ns._schema]
    schema = pa.schema(fields, ns._schema.metadata)
    _commit_schema(ns, _moved_dropped(schema, old, new))


def _rename_nested(ns: PartitionedNamespace, old: str, new: str) -> None:
    if "." in new:
        raise SpecError(
            f"the new name {new!r} must be a field name, not a path (it stays beside {old!r})",
            key=SCHEMA_KEY,
        )
    top, *rest = old.split(".")
    if top not in ns._schema.names:
        raise SpecError(f"no column named {top!r} (in {old!r})", key=SCHEMA_KEY)
    target = ".".join([*old.split(".")[:-1], new])
    dropped = nested.dropped_paths(ns._schema)
    if target in dropped:
        raise SpecError(
            f"nested field {target!r} was dropped or renamed and cannot be used again (older "
            "partition tables still hold its values): choose another name",
            key=SCHEMA_KEY,
        )
    i = ns._schema.names.index(top)
    schema = ns._schema.set(i, nested.rename_path(ns._schema.field(i), rest, new, old))
    schema = _moved_dropped(schema, old, target)
    schema = nested.with_dropped(schema, nested.dropped_paths(schema) | {old})
    _commit_schema(ns, with_last_field_id(schema, _last_field_id(ns)))


def _moved_dropped(schema: pa.Schema, old: str, new: str) -> pa.Schema:
    """Remembered nested paths under ``old`` follow it to ``new`` (a renamed parent)."""
    dropped = nested.dropped_paths(schema)
    moved = {new + p[len(old) :] if p.startswith(old + ".") else p for p in dropped}
    return nested.with_dropped(schema, moved) if moved != dropped else schema


def add_columns(ns: PartitionedNamespace, fields: Sequence[pa.Field]) -> None:
    """Add nullable top-level columns; existing partitions read them as NULL. New ids follow
    the highest id ever assigned, so a dropped column's id is never reused."""
    ns.refresh()
    next_id = _last_field_id(ns) + 1
    added = []
    names = set(ns._schema.names)
    current = list(ns._schema)
    dropped = nested.dropped_paths(ns._schema)
    for f in fields:
        if f.name in names and f.name in ns._schema.names:  # fields inside a struct column
            i = ns._schema.names.index(f.name)
            current[i], next_id, count = nested.merge_field(current[i], f, next_id, dropped)
            if not count:
                raise SpecError(f"a column named {f.name!r} already exists", key=SCHEMA_KEY)
            continue
        if f.name in names:
            raise SpecError(f"a column named {f.name!r} already exists", key=SCHEMA_KEY)
        check_column_name(f.name)
        names.add(f.name)
        stored = stored_schema(pa.schema([f.with_nullable(True)])).field(0)
        new, next_id = nested.new_field(stored, next_id)
        added.append(new)
    schema = pa.schema([*current, *added], ns._schema.metadata)
    _commit_schema(ns, with_last_field_id(schema, next_id - 1))


def drop_columns(ns: PartitionedNamespace, names: Sequence[str]) -> None:
    """Remove top-level columns from the namespace schema (partition tables untouched); a
    partition field whose source was dropped computes NULL and prunes as unknown."""
    ns.refresh()
    paths = [n for n in names if n not in ns._schema.names and "." in n]
    missing = [n for n in names if n not in ns._schema.names and n not in paths]
    if missing:
        raise SpecError(f"no column(s) named {missing}", key=SCHEMA_KEY)
    last = _last_field_id(ns)
    kept = [f for f in ns._schema if f.name not in set(names)]
    schema = pa.schema(kept, ns._schema.metadata)
    for path in paths:  # fields inside struct columns: a.b.c
        top, *rest = path.split(".")
        if top not in schema.names:
            raise SpecError(f"no column named {top!r} (in {path!r})", key=SCHEMA_KEY)
        i = schema.names.index(top)
        schema = schema.set(i, nested.drop_path(schema.field(i), rest, path))
        schema = nested.with_dropped(schema, nested.dropped_paths(schema) | {path})
    _commit_schema(ns, with_last_field_id(schema, last))


def _last_field_id(ns: PartitionedNamespace) -> int:
    used = [sid for spec in ns._specs.values() for f in spec.fields for sid in f.source_ids]
    return last_field_id(ns._schema, used)


def _commit_schema(ns: PartitionedNamespace, schema: pa.Schema) -> None:
    field_ids(schema, key=SCHEMA_KEY)
    snap = update_properties(
        ns._snapshot,
        {SCHEMA_KEY: dumps(schema_to_json(schema))},
        storage_options=ns.storage_options,
    )
    ns._set_snapshot(snap)
