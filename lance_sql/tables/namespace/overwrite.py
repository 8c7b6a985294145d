"""Partition overwrites: ``ns.overwrite(data, partitions="dynamic")`` and ``where=...``,
each one ``__manifest`` commit. Details: docs/namespaces.md, "Dynamic overwrite and
overwrite by filter"."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lance_sql.errors import LanceSqlError
from lance_sql.tables.namespace.delete import delete_matching
from lance_sql.tables.namespace.mutation import Mutation, run
from lance_sql.tables.namespace.partition_rows import iter_batches, partition_keys, partition_values
from lance_sql.tables.namespace.schema_rule import conform
from lance_sql.tables.namespace.sql_eval import matching_mask
from lance_sql.tables.namespace.write_layout import tables_by_key


class RowsOutsideFilterError(LanceSqlError):
    """``overwrite(data, where=...)`` got rows the filter does not match."""


def collect(ns: Any, data: Any) -> pa.Table:
    """``data`` (any writable form) as one table with exactly the namespace schema."""
    batches = [conform(b, ns._schema) for b in iter_batches(data)]  # blobs: bytes
    return pa.Table.from_batches(batches, schema=ns._schema)


def overwrite_some(ns: Any, data: Any, where: Any = None) -> int:
    """Replace the rows matching ``where`` by ``data`` (None: the current-spec partitions
    ``data`` has rows for, "dynamic"); returns the new version."""
    ns._check_writable()
    table = collect(ns, data)
    if where is not None and table.num_rows:
        mask = matching_mask(table, where)
        outside = table.num_rows - int(mask.true_count)
        if outside:
            raise RowsOutsideFilterError(
                f"{outside} of {table.num_rows} rows of the data do not match the overwrite "
                f"filter {where!s}; nothing was written"
            )

    def build(m: Mutation) -> None:
        if where is None:
            _drop_partitions_of(ns, m, table)
        else:
            delete_matching(m, where)
        m.insert(table)

    run(ns, build)
    return ns.manifest_version


def _drop_partitions_of(ns: Any, m: Mutation, table: pa.Table) -> None:
    """Drop the partition tables of the current spec that ``table`` has rows for."""
    spec = ns.current_spec
    keys: set[tuple[Any, ...]] = set()
    for batch in table.to_batches():
        values = partition_values(batch, spec, ns.schema)
        keys.update(partition_keys(values, batch.num_rows))
    if not spec.fields and table.num_rows:
        keys.add(())
    # the tables of those partitions, found by their keys (not by visiting every table)
    fids = [f.field_id for f in spec.fields]
    tables = tables_by_key(m.snapshot, spec.namespace_name, fids, keys)
    for entry in filter(None, map(tables.get, keys)):
        m.drop(entry)
