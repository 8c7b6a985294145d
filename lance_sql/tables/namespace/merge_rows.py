"""The one MERGE: a :class:`MergeSql` planned by the query engine, run per partition table.

``ns.merge``, SQL ``MERGE INTO`` and Spark's merge tasks all describe the statement as a
:class:`MergeSql`; updated rows are deleted and re-inserted (a row whose partition values
change moves), all in ONE ``__manifest`` commit. Semantics: docs/sql.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import LanceSqlError, SchemaMismatchError
from lance_sql.tables.namespace.blobs import with_blob_bytes
from lance_sql.tables.namespace.delete import matching_rows
from lance_sql.tables.namespace.mutation import ROWID, Mutation
from lance_sql.tables.namespace.overwrite import collect
from lance_sql.tables.namespace.schema_rule import extra_fields
from lance_sql.tables.namespace.sql_eval import ROW, EnginePlan, merge_plan, values_fit


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


def cast_to_stored(ns: Any, table: pa.Table, what: str = "new values") -> pa.Table:
    """``table``'s columns in the namespace's stored types (blob columns hold bytes); a
    namespace column ``table`` lacks is NULL."""
    cols = []
    for f in ns._schema:  # the stored form: blob columns hold bytes here
        if f.name not in table.column_names:
            cols.append(pa.nulls(table.num_rows, f.type))
            continue
        col = table.column(f.name)
        if extra := extra_fields(col.type, f.type):  # a cast would drop them
            raise SchemaMismatchError(
                f"{what} of column {f.name!r} ({col.type}) carry fields {extra} the "
                f"namespace type {f.type} lacks; add them first (add_columns) or leave them out"
            )
        if not col.type.equals(f.type):
            try:
                col = col.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaMismatchError(
                    f"{what} of column {f.name!r} ({col.type}) do not fit {f.type}: {exc}"
                ) from exc
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=ns._schema)


When = Literal["matched", "not_matched", "by_source"]


@dataclass(frozen=True)
class MergeClause:
    """One WHEN clause, its SQL as the user wrote it. ``when``: ``matched`` (a target row
    and a source row it matched), ``not_matched`` (a source row no target row matched) or
    ``by_source`` (a target row no source row matched); ``action``: ``update``,
    ``delete`` or ``insert``; ``values``: (column, SQL) pairs set or inserted (None: the
    source row itself, with the target's other columns kept on update)."""

    when: When
    action: Literal["update", "delete", "insert"]
    condition: str | None = None
    values: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True)
class MergeSql:
    """A MERGE as written: SQL texts over the aliases ``target`` and ``source``."""

    target: str
    source: str
    on: str
    clauses: tuple[MergeClause, ...]
    what: str  # the statement, for messages

    def of(self, when: When) -> list[MergeClause]:
        return [c for c in self.clauses if c.when == when]


@dataclass(frozen=True)
class MergePlan:
    """A :class:`MergeSql` as the engine planned it (each table numbered in
    :data:`~.sql_eval.ROW`). ``pairs``: ON-joined rows -> (target ROW, source ROW, index
    of the applying ``matched`` clause or -1); ``lone_target`` / ``lone_source``: unmatched
    rows -> (index of the applying clause or -1, ROW); ``values``: per clause, its new
    values (then ROW), None: nothing to compute; ``keys``: ON's (target, source) equalities."""

    sql: MergeSql
    keys: tuple[tuple[str, str], ...]
    pairs: EnginePlan
    lone_target: EnginePlan | None
    lone_source: EnginePlan | None
    values: tuple[EnginePlan | None, ...]


def plan_merge(ns: Any, src: pa.Table, sql: MergeSql) -> MergePlan:
    """``sql`` planned by the engine over the namespace's columns and ``src``'s."""
    return merge_plan(ns._schema, src.schema, sql, what=sql.what)


def key_filter(ns: Any, src: pa.Table, keys: Sequence[tuple[str, str]]) -> pc.Expression | None:
    """Target rows can match only where every ON key equality's column is a source value
    (None: every row may match). Floating-point keys are left out: SQL ``=`` holds for
    -0.0 and 0.0 and for NaN and NaN, pyarrow's ``is_in`` does not."""
    expr = None
    for tcol, scol in keys:
        if tcol not in ns.schema.names or scol not in src.column_names:
            continue
        if pa.types.is_floating(ns.schema.field(tcol).type):
            continue
        try:
            values = pc.unique(src.column(scol).drop_null()).cast(ns.schema.field(tcol).type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        term = pc.field(tcol).isin(values)
        expr = term if expr is None else expr & term
    return expr


def merge_rows(m: Mutation, ns: Any, plan: MergePlan, src: pa.Table) -> MergeResult:
    """Stage the whole MERGE ``plan`` of ``src`` (numbered ``0..n-1`` in ROW) in ``m``."""
    sql = plan.sql
    by_source = bool(sql.of("by_source"))
    seen = np.zeros(src.num_rows, dtype=bool)
    updated = deleted = 0
    if src.num_rows or by_source:
        # BY SOURCE clauses need every target row; otherwise only those the ON keys may match
        prefilter = None if by_source else key_filter(ns, src, plan.keys)
        for hit in matching_rows(m, prefilter, full_covered=True):
            entry = m.entries[hit.object_id]
            tm = merge_table(ns, entry, plan, hit.rows, src)
            seen[tm.matched] = True
            if len(tm.gone):
                m.delete_rowids(entry, tm.gone)
            if tm.new is not None:
                m.insert(tm.new)
            updated += tm.updated
            deleted += tm.deleted
    inserted = 0
    rest = src.filter(pa.array(~seen))
    if plan.lone_source is not None and rest.num_rows:
        codes = _codes(plan.lone_source, {sql.source: rest}, src.num_rows, f"{sql.what} insert")
        codes = codes[rest.column(ROW).to_numpy()]
        for i, clause in enumerate(sql.of("not_matched")):
            rows = rest.filter(pa.array(codes == i))
            if rows.num_rows:
                m.insert(_new_rows(ns, plan, clause, None, rows))
                inserted += rows.num_rows
    return MergeResult(updated, deleted, inserted)


@dataclass(frozen=True)
class TableMatch:
    """The merge's effect on one partition table's candidate rows."""

    gone: pa.Array  # ``_rowid`` of the target rows deleted or rewritten
    new: pa.Table | None  # rewritten rows (namespace schema) to insert
    updated: int
    deleted: int
    matched: np.ndarray  # ROW numbers of the source rows some target row matched


def merge_table(
    ns: Any, entry: Any, plan: MergePlan, target: pa.Table, src: pa.Table
) -> TableMatch:
    """The ``matched`` and ``by_source`` clauses of ``plan`` over the rows ``target`` of
    partition table ``entry`` (namespace columns + ``_rowid``) and the source rows ``src``
    (numbered in ROW: any distinct numbers). Also what Spark merge tasks run per table."""
    sql = plan.sql
    n = target.num_rows
    if not n:
        return TableMatch(pa.array([], pa.uint64()), None, 0, 0, np.array([], np.int64))
    ids = src.column(ROW).to_numpy()
    src = src.set_column(src.column_names.index(ROW), ROW, pa.array(np.arange(len(ids))))
    numbered = target.drop_columns([ROWID]).append_column(ROW, pa.array(np.arange(n)))
    pairs = plan.pairs.run({sql.target: numbered, sql.source: src}, what=f"{sql.what} ON")
    tr, sr = pairs.column(0).to_numpy(), pairs.column(1).to_numpy()
    matched = sql.of("matched")
    if matched and len(np.unique(tr)) != len(tr):
        raise MergeKeyError(
            f"{sql.what}: a target row (partition table {entry.object_id!r}) matches more "
            "than one source row; nothing was written"
        )
    steps = [(matched, tr, sr, pairs.column(2).to_numpy())]
    lone = np.setdiff1d(np.arange(n), tr)
    if plan.lone_target is not None and len(lone):
        alone = numbered.take(pa.array(lone))
        codes = _codes(plan.lone_target, {sql.target: alone}, n, f"{sql.what} BY SOURCE")
        steps.append((sql.of("by_source"), lone, None, codes[lone]))
    gone, new = [], []
    updated = deleted = 0
    for clauses, rows, pair, codes in steps:
        for i, clause in enumerate(clauses):
            sel = codes == i
            if not sel.any():
                continue
            gone.append(rows[sel])
            if clause.action == "delete":
                deleted += int(sel.sum())
                continue
            old = target.take(pa.array(rows[sel]))
            paired = None if pair is None else src.take(pa.array(pair[sel]))
            new.append(_new_rows(ns, plan, clause, with_blob_bytes(ns, entry, old), paired))
            updated += int(sel.sum())
    rows = np.concatenate(gone) if gone else np.array([], np.int64)
    return TableMatch(
        target.column(ROWID).take(pa.array(rows)).combine_chunks(),
        pa.concat_tables(new) if new else None,
        updated,
        deleted,
        ids[sr],
    )


def _codes(plan: EnginePlan, tables: Mapping[str, pa.Table], n: int, what: str) -> np.ndarray:
    """The clause index (-1: none) of each row number ``0..n-1`` by a lone-rows plan."""
    out = plan.run(tables, what=what)
    codes = np.full(n, -1, dtype=np.int64)
    codes[out.column(1).to_numpy()] = out.column(0).to_numpy()
    return codes


def _new_rows(
    ns: Any, plan: MergePlan, clause: MergeClause, old: pa.Table | None, src: pa.Table | None
) -> pa.Table:
    """The rows an update (``old``: the target rows + ``_rowid``; ``src``: their source
    rows, None for BY SOURCE) or an insert (``old`` None) writes, in the stored schema."""
    sql = plan.sql
    assert src is not None or old is not None
    base = src.drop_columns([ROW]) if old is None else old.drop_columns([ROWID])
    if clause.values is None:  # the source row itself (update: the target's other columns kept)
        assert src is not None
        for name in src.column_names:
            if name in base.column_names:
                base = base.set_column(base.column_names.index(name), name, src.column(name))
        return collect(ns, base)
    pair = pa.array(np.arange(base.num_rows), pa.int64())
    tables = {}
    if old is not None:
        tables[sql.target] = old.drop_columns([ROWID]).append_column(ROW, pair)
    if src is not None:
        tables[sql.source] = src.drop_columns([ROW]).append_column(ROW, pair)
    values = plan.values[plan.sql.clauses.index(clause)]
    assert values is not None
    with values_fit(sql.what, [c for c, _ in clause.values]):
        out = values.run(tables, what=f"{sql.what} values")
    out = out.take(pc.sort_indices(out.column(ROW)))
    if old is not None:  # update: the columns not set keep their values
        for name in base.column_names:
            if name not in out.column_names:
                out = out.append_column(name, base.column(name))
    return cast_to_stored(ns, out.drop_columns([ROW]), f"{sql.what}: new values")
