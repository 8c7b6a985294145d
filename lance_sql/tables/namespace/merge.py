"""``ns.update(set=..., where=...)`` and ``ns.merge(source, on=[...], ...)``.

Both rewrite matched rows as *delete + insert*: the old rows get Lance row
deletes (or their partition leaves ``__manifest`` when every row of it is
rewritten) and the new rows are appended through the writer, which puts each
into the partition of the current spec its new values belong to. So a row
whose partition values change moves between partitions, in the same single
``__manifest`` commit as everything else (:class:`.mutation.Mutation`).

SQL text (SET expressions, conditions) is evaluated by DataFusion
(:mod:`.sql_eval`). In ``merge`` update expressions, qualify columns as
``target.col`` and ``source.col``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import LanceSqlError, SchemaMismatchError
from lance_sql.tables.namespace.blobs import with_blob_bytes
from lance_sql.tables.namespace.delete import matching_rows
from lance_sql.tables.namespace.field_map import canonical_schema
from lance_sql.tables.namespace.mutation import ROWID, Mutation, run
from lance_sql.tables.namespace.partition_rows import conform_batch, iter_batches
from lance_sql.tables.namespace.schema_rule import extra_fields
from lance_sql.tables.namespace.sql_eval import (
    EnginePlan,
    SqlExpressionError,
    quote,
    run_sql,
    update_plan,
)

_ROW = "__lance_sql_row"


class MergeKeyError(LanceSqlError):
    """The merge source holds a key more than once (a target row would match twice)."""


@dataclass(frozen=True)
class MergeResult:
    updated: int
    deleted: int
    inserted: int

    @property
    def rows(self) -> int:
        return self.updated + self.deleted + self.inserted


def _cast_to(ns: Any, table: pa.Table) -> pa.Table:
    cols = []
    for f in ns._schema:  # the stored form: blob columns hold bytes here
        col = table.column(f.name)
        if extra := extra_fields(col.type, f.type):  # a cast would drop them
            raise SchemaMismatchError(
                f"new values of column {f.name!r} ({col.type}) carry fields {extra} the "
                f"namespace type {f.type} lacks; add them first (add_columns) or leave them out"
            )
        if not col.type.equals(f.type):
            try:
                col = col.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaMismatchError(
                    f"new values of column {f.name!r} ({col.type}) do not fit {f.type}: {exc}"
                ) from exc
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=ns._schema)


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
            entry = m.entries[hit.object_id]
            if not hit.rows.num_rows:
                continue
            old = with_blob_bytes(ns, m.entries[hit.object_id], hit.rows).drop_columns([ROWID])
            new = _cast_to(ns, values(old))
            if hit.whole:
                m.drop(entry)
            else:
                m.delete_rowids(entry, hit.rows.column(ROWID))
            m.insert(new)
            total += old.num_rows
        return total

    return run(ns, build)


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


def _key_filter(source: pa.Table, on: Sequence[str]) -> pc.Expression:
    """A superset filter over the target: every key column in the source's values."""
    expr = None
    for k in on:
        if pa.types.is_floating(source.column(k).type):
            continue  # is_in tells -0.0 from 0.0; SQL equality does not (the join decides)
        values = pc.unique(source.column(k).drop_null())
        term = pc.field(k).isin(values)
        expr = term if expr is None else expr & term
    return pc.scalar(True) if expr is None else expr


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
    if not on:
        raise ValueError("merge needs at least one key column in 'on'")
    src = _source_table(ns, source, on)
    keyed = src.filter(pc.invert(_any_null(src, on))) if src.num_rows else src
    if keyed.num_rows and _match_keys(keyed, on).group_by(on).aggregate([]).num_rows != (
        keyed.num_rows
    ):
        raise MergeKeyError("the merge source holds some key more than once; nothing was written")
    src = src.append_column(_ROW, pa.array(np.arange(src.num_rows), pa.int64()))
    clauses = (when_matched_update, when_matched_delete, when_not_matched_insert)

    def build(m: Mutation) -> MergeResult:
        return _merge_into(m, ns, src, keyed, on, *clauses)

    return run(ns, build)


def _merge_into(
    m: Mutation,
    ns: Any,
    src: pa.Table,
    keyed: pa.Table,
    on: list[str],
    when_matched_update: bool | str | Mapping[str, str] | None,
    when_matched_delete: bool | str,
    when_not_matched_insert: bool,
) -> MergeResult:
    matched_src: set[int] = set()
    updated = deleted = 0
    if keyed.num_rows:
        for hit in matching_rows(m, _key_filter(keyed, on), full_covered=True):
            target = with_blob_bytes(ns, m.entries[hit.object_id], hit.rows)
            tm = match_table(ns, target, src, on, when_matched_update, when_matched_delete)
            matched_src.update(tm.matched.tolist())
            if len(tm.gone):
                m.delete_rowids(m.entries[hit.object_id], tm.gone)
            if tm.new is not None:
                m.insert(tm.new)
            updated += tm.updated
            deleted += tm.deleted
    inserted = 0
    if when_not_matched_insert:
        rest = src.filter(pa.array(~np.isin(np.arange(src.num_rows), list(matched_src))))
        rest = rest.drop_columns([_ROW])
        if rest.num_rows:
            rows = pa.Table.from_batches([conform_batch(b, ns._schema) for b in rest.to_batches()])
            m.insert(rows)
            inserted = rows.num_rows
    return MergeResult(updated, deleted, inserted)


@dataclass(frozen=True)
class TableMatch:
    """The merge's effect on one partition table's candidate rows."""

    gone: pa.Array  # ``_rowid`` of the target rows deleted or rewritten
    new: pa.Table | None  # rewritten rows (namespace schema) to insert
    updated: int
    deleted: int
    matched: np.ndarray  # ``_ROW`` numbers of the source rows some target row matched


def match_table(
    ns: Any,
    target: pa.Table,
    src: pa.Table,
    on: list[str],
    when_matched_update: bool | str | Mapping[str, str] | None,
    when_matched_delete: bool | str,
) -> TableMatch:
    """Join one table's ``target`` rows (namespace columns + ``_rowid``) with ``src`` (+ ``_ROW``)
    on the keys and apply the matched clauses (also what Spark merge tasks run per table)."""
    none = TableMatch(pa.array([], pa.uint64()), None, 0, 0, np.array([], np.int64))
    if not target.num_rows:
        return none
    target = target.append_column(_ROW, pa.array(np.arange(target.num_rows), pa.int64()))
    pairs = (
        _match_keys(target, on)
        .append_column(_ROW, target.column(_ROW))
        .join(
            _match_keys(src, on).append_column(_ROW, pa.array(np.arange(src.num_rows))),
            keys=on,
            join_type="inner",
            right_suffix="_s",
        )
    )
    if not pairs.num_rows:
        return none
    t_idx = pairs.column(_ROW).to_numpy()
    s_idx = pairs.column(_ROW + "_s").to_numpy()  # positions in src (its _ROW: any numbers)
    matched = src.column(_ROW).take(pa.array(s_idx)).to_numpy()
    t_rows = target.take(t_idx).drop_columns([_ROW])
    s_rows = src.take(s_idx).drop_columns([_ROW])
    dele = _clause_mask(when_matched_delete, t_rows, s_rows)
    upd = np.zeros(len(t_idx), dtype=bool)
    if when_matched_update:
        upd = ~dele
    gone = dele | upd
    if not gone.any():
        return TableMatch(none.gone, None, 0, 0, matched)
    new = None
    if upd.any():
        new = _updated_rows(
            ns,
            t_rows.filter(pa.array(upd)).drop_columns([ROWID]),
            s_rows.filter(pa.array(upd)),
            when_matched_update,
        )
    ids = t_rows.column(ROWID).filter(pa.array(gone)).combine_chunks()
    return TableMatch(ids, new, int(upd.sum()), int(dele.sum()), matched)


def _any_null(table: pa.Table, on: Sequence[str]) -> pa.ChunkedArray | pa.Array:
    mask = None
    for k in on:
        isnull = pc.is_null(table.column(k))
        mask = isnull if mask is None else pc.or_(mask, isnull)
    return mask


def _pair_tables(t_rows: pa.Table, s_rows: pa.Table) -> dict[str, pa.Table]:
    idx = pa.array(np.arange(t_rows.num_rows), pa.int64())
    target = t_rows.drop_columns([c for c in (ROWID,) if c in t_rows.column_names])
    return {
        "target": target.append_column(_ROW, idx),
        "source": s_rows.append_column(_ROW, idx),
    }


def _clause_mask(clause: bool | str, t_rows: pa.Table, s_rows: pa.Table) -> np.ndarray:
    n = t_rows.num_rows
    if clause is True:
        return np.ones(n, dtype=bool)
    if not clause:
        return np.zeros(n, dtype=bool)
    out = run_sql(
        _pair_tables(t_rows, s_rows),
        f"SELECT target.{quote(_ROW)} FROM target JOIN source "
        f"ON target.{quote(_ROW)} = source.{quote(_ROW)} WHERE {clause}",
        what=f"merge condition {clause!r}",
    )
    mask = np.zeros(n, dtype=bool)
    mask[out.column(0).to_numpy()] = True
    return mask


def _updated_rows(
    ns: Any, t_rows: pa.Table, s_rows: pa.Table, clause: bool | str | Mapping[str, str]
) -> pa.Table:
    if clause is True or clause == "*":
        cols = [
            s_rows.column(f.name) if f.name in s_rows.column_names else t_rows.column(f.name)
            for f in ns.schema
        ]
        table = pa.Table.from_arrays(cols, names=ns.schema.names)
        return pa.Table.from_batches(
            [conform_batch(b, ns._schema) for b in table.to_batches()], schema=ns._schema
        )
    if not isinstance(clause, Mapping):
        raise SqlExpressionError(
            f"when_matched_update must be True, '*' or a mapping of column to SQL, got {clause!r}"
        )
    _check_set(ns, clause)
    select = ", ".join(
        f"({clause.get(f.name, 'target.' + quote(f.name))}) AS {quote(f.name)}" for f in ns.schema
    )
    out = run_sql(
        _pair_tables(t_rows, s_rows),
        f"SELECT {select} FROM target JOIN source ON target.{quote(_ROW)} = "
        f"source.{quote(_ROW)} ORDER BY target.{quote(_ROW)}",
        what=f"merge update {dict(clause)!r}",
    )
    return _cast_to(ns, out)


__all__ = ["MergeKeyError", "MergeResult", "TableMatch", "match_table", "merge", "update"]
