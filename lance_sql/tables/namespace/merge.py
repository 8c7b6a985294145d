"""``ns.update(set=..., where=...)`` and ``ns.merge(source, on=[...], ...)``.

Both rewrite matched rows as delete + insert, so a row whose partition values change
moves, in the same single ``__manifest`` commit. SQL text is planned once by the query
engine (:mod:`.sql_eval`); in ``merge`` qualify columns as ``target.col``/``source.col``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import SchemaMismatchError
from lance_sql.tables.namespace.blobs import with_blob_bytes
from lance_sql.tables.namespace.delete import matching_rows, remove
from lance_sql.tables.namespace.field_map import canonical_schema
from lance_sql.tables.namespace.merge_rows import (
    MergeClause,
    MergeKeyError,
    MergeResult,
    MergeSql,
    cast_to_stored,
    merge_rows,
    plan_merge,
)
from lance_sql.tables.namespace.mutation import ROWID, Mutation, run
from lance_sql.tables.namespace.partition_rows import iter_batches
from lance_sql.tables.namespace.sql_eval import (
    ROW,
    EnginePlan,
    SqlExpressionError,
    quote,
    update_plan,
)


def _check_set(ns: Any, set: Mapping[str, str]) -> None:
    unknown = [c for c in set if c not in ns.schema.names]
    if unknown:
        raise SchemaMismatchError(f"cannot set unknown column(s) {unknown}")


def update(ns: Any, set: Mapping[str, str] | EnginePlan, where: Any = None) -> int:
    """Set columns to SQL expressions (or to the values an :class:`EnginePlan` computes) in
    the rows ``where`` matches; returns rows updated."""
    ns._check_writable()
    what = f"UPDATE SET {set.text}" if isinstance(set, EnginePlan) else f"update SET {dict(set)!r}"
    if not isinstance(set, EnginePlan):
        _check_set(ns, set)
        if not set:
            return 0
    plan = set if isinstance(set, EnginePlan) else update_plan(ns.schema, set, what=what)

    def values(old: pa.Table) -> pa.Table:
        return old if plan is None else plan.replace(old, what=what)

    def build(m: Mutation) -> int:
        total = 0
        for hit in matching_rows(m, where, full_covered=True):
            if not hit.rows.num_rows:
                continue
            old = with_blob_bytes(ns, m.entries[hit.object_id], hit.rows).drop_columns([ROWID])
            new = cast_to_stored(ns, values(old))
            remove(m, hit)
            m.insert(new)
            total += old.num_rows
        return total

    return run(ns, build)


def merge_sql(
    ns: Any,
    on: Sequence[str],
    when_matched_update: bool | str | Mapping[str, str] | None,
    when_matched_delete: bool | str,
    when_not_matched_insert: bool,
) -> MergeSql:
    """``ns.merge``'s options as the MERGE statement they mean."""
    if not on:
        raise ValueError("merge needs at least one key column in 'on'")
    clauses = []
    if when_matched_delete:
        cond = None if when_matched_delete is True else str(when_matched_delete)
        clauses.append(MergeClause("matched", "delete", cond))
    if when_matched_update:
        values = None
        if isinstance(when_matched_update, Mapping):
            _check_set(ns, when_matched_update)
            values = tuple(when_matched_update.items())
        elif when_matched_update is not True and when_matched_update != "*":
            raise SqlExpressionError(
                "when_matched_update must be True, '*' or a mapping of column to SQL, "
                f"got {when_matched_update!r}"
            )
        clauses.append(MergeClause("matched", "update", None, values))
    if when_not_matched_insert:
        clauses.append(MergeClause("not_matched", "insert"))
    on_sql = " AND ".join(f"target.{quote(k)} = source.{quote(k)}" for k in on)
    return MergeSql("target", "source", on_sql, tuple(clauses), "merge")


def _source_table(ns: Any, source: Any, on: Sequence[str]) -> pa.Table:
    if isinstance(source, pa.Table):
        table = source
    else:
        batches = list(iter_batches(source))
        table = pa.Table.from_batches(batches) if batches else pa.table({})
    table = table.cast(canonical_schema(table.schema))  # views: pyarrow's take lacks kernels
    missing = [k for k in on if k not in table.column_names or k not in ns.schema.names]
    if missing:
        raise SchemaMismatchError(f"merge key column(s) {missing} missing from source or target")
    for k in on:  # keys compare (and prune) in the namespace's types
        want = ns.schema.field(k).type
        col = table.column(k)
        if not col.type.equals(want):
            try:
                col = col.cast(want)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaMismatchError(
                    f"merge key {k!r} has type {col.type}, the namespace has {want}"
                ) from exc
            table = table.set_column(table.column_names.index(k), k, col)
    return table


def _match_keys(table: pa.Table, on: Sequence[str]) -> pa.Table:
    """The key columns as SQL equality compares them: float -0.0 becomes 0.0 (x + 0.0)."""
    cols = []
    for k in on:
        col = table.column(k)
        if pa.types.is_floating(col.type):
            col = pc.add(col, pa.scalar(0.0, col.type))
        cols.append(col)
    return pa.table(cols, names=list(on))


def merge(
    ns: Any,
    source: Any,
    on: Sequence[str],
    *,
    when_matched_update: bool | str | Mapping[str, str] | None = None,
    when_matched_delete: bool | str = False,
    when_not_matched_insert: bool = False,
) -> MergeResult:
    """MERGE ``source`` into ``ns`` on equal ``on`` columns (NULL keys never match).

    ``when_matched_delete``: True, or a SQL condition over ``target.`` /
    ``source.`` columns; checked first. ``when_matched_update``: True (or
    ``"*"``) replaces a matched row by the source row (target columns the
    source lacks are kept), a mapping sets columns to SQL expressions.
    ``when_not_matched_insert``: insert source rows no target row matched.
    """
    ns._check_writable()
    on = list(on)
    sql = merge_sql(ns, on, when_matched_update, when_matched_delete, when_not_matched_insert)
    src = _source_table(ns, source, on)
    keyed = _match_keys(src, on).drop_null()  # NULL keys never match
    if keyed.group_by(on).aggregate([]).num_rows != keyed.num_rows:
        raise MergeKeyError("the merge source holds some key more than once; nothing was written")
    src = src.append_column(ROW, pa.array(np.arange(src.num_rows), pa.int64()))
    plan = plan_merge(ns, src, sql)
    return run(ns, lambda m: merge_rows(m, ns, plan, src))


__all__ = ["MergeKeyError", "MergeResult", "merge", "merge_sql", "update"]
