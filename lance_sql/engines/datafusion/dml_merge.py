"""``MERGE INTO ns [AS t] USING <source> [AS s] ON <cond> WHEN ... THEN ...`` on a namespace.

DataFusion 55 plans ``MERGE INTO`` into a ``Dml: op=[MergeInto]`` plan whose
only input is the source; the ON condition and the WHEN clauses are not in
it. So the clauses are read with ``sqlglot``, their expressions' texts are
cut from the statement as written (:func:`.dml_text.merge_text`: sqlglot's
printer would change them, e.g. integer ``a / b`` into a float division) and
every one of them is evaluated by DataFusion (:mod:`lance_sql.tables.namespace.sql_eval`),
with the target rows registered under the target's alias and the source rows
(DataFusion's own plan of the source, run as a :class:`LanceDataFrame`)
under the source's alias:

* the ON condition joins the rows of each candidate partition table with the
  source (column equalities ``t.k = s.k`` in it prune the partitions read);
* each matched pair takes the FIRST ``WHEN MATCHED [AND cond]`` clause whose
  condition holds (``UPDATE SET c = expr, ...`` / ``DELETE``); each source
  row no target row matched takes the first ``WHEN NOT MATCHED [AND cond]
  THEN INSERT [(cols)] VALUES (...)`` whose condition holds (Spark's
  ``UPDATE SET *`` / ``INSERT *`` do not parse in DataFusion 55);
* each target row no source row matched takes the first ``WHEN NOT MATCHED
  BY SOURCE [AND cond] THEN UPDATE SET ... | DELETE`` whose condition holds
  (every partition table is then read);
* a target row matched by two source rows is refused when the statement has
  a MATCHED clause (as Spark and Iceberg do) with :class:`MergeKeyError`;
* updated rows are deleted and re-inserted (a row whose partition values
  change moves), all in ONE ``__manifest`` commit (:class:`Mutation`).

The result counts updated + deleted + inserted rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from sqlglot import exp

from lance_sql.engines.datafusion.dml_target import type_names
from lance_sql.engines.datafusion.dml_text import MergeText, cast_sql, merge_text
from lance_sql.errors import PlanningError, SchemaMismatchError
from lance_sql.tables.namespace.blobs import with_blob_bytes
from lance_sql.tables.namespace.delete import matching_rows
from lance_sql.tables.namespace.merge import MergeKeyError
from lance_sql.tables.namespace.mutation import ROWID, Mutation, run
from lance_sql.tables.namespace.sql_eval import SqlExpressionError, quote, run_sql

_ROW = "__lance_sql_row"
_PAIR = "__lance_sql_pair"


@dataclass(frozen=True)
class Clause:
    """One WHEN clause: ``action`` is ``update``, ``delete`` or ``insert``."""

    matched: bool
    condition: str | None
    action: str
    sets: dict[str, str] | None = None  # update: column -> SQL
    columns: list[str] | None = None  # insert: the columns given values
    values: list[str] | None = None  # insert: SQL per column
    by_source: bool = False  # WHEN NOT MATCHED BY SOURCE: a target row no source row matched


@dataclass(frozen=True)
class MergeStatement:
    target_alias: str
    source_alias: str
    on: str
    keys: list[tuple[str, str]]  # (target column, source column) equalities of ON
    clauses: list[Clause]


def _sql(e: exp.Expression) -> str:
    return e.sql(dialect="postgres")


def parse_merge(query: str, schema: pa.Schema, name: str) -> MergeStatement:
    """The parts of a MERGE statement (sqlglot), checked against the namespace schema."""
    try:
        tree = sqlglot.parse_one(query)
    except sqlglot.errors.ParseError as exc:
        raise PlanningError(f"MERGE INTO {name!r} cannot be parsed: {exc}") from exc
    if not isinstance(tree, exp.Merge):
        raise PlanningError(f"MERGE INTO {name!r}: not a MERGE statement")
    target = tree.this
    talias = _sql_name(target)
    using = tree.args["using"]
    salias = _sql_name(using)
    if not salias:
        raise PlanningError(f"MERGE INTO {name!r}: give the source an alias (USING (...) AS s)")
    if talias == salias:
        raise PlanningError(f"MERGE INTO {name!r}: target and source need different names")
    on = tree.args.get("on")
    if on is None:
        raise PlanningError(f"MERGE INTO {name!r}: an ON condition is needed")
    whens = tree.args.get("whens")
    clauses = [_clause(w, schema, name) for w in (whens.expressions if whens else [])]
    if not clauses:
        raise PlanningError(f"MERGE INTO {name!r}: no WHEN clause")
    text = merge_text(query, name)
    return MergeStatement(
        talias, salias, text.on, _keys(on, talias, salias), _verbatim(clauses, text, name)
    )


def _verbatim(clauses: list[Clause], text: MergeText, name: str) -> list[Clause]:
    """``clauses`` (sqlglot's reading) with their SQL texts as written in the statement."""
    if len(text.clauses) != len(clauses):
        raise PlanningError(f"MERGE INTO {name!r}: the WHEN clauses could not be read")
    out = []
    for clause, cut in zip(clauses, text.clauses, strict=True):
        sets, values = clause.sets, clause.values
        if sets is not None:
            if len(cut.set_values) != len(sets):
                raise PlanningError(f"MERGE INTO {name!r}: the SET items could not be read")
            sets = dict(zip(sets, cut.set_values, strict=True))
        if values is not None:
            if len(cut.insert_values) != len(values):
                raise PlanningError(f"MERGE INTO {name!r}: the INSERT values could not be read")
            values = list(cut.insert_values)
        if (clause.condition is None) != (cut.condition is None):
            raise PlanningError(f"MERGE INTO {name!r}: a WHEN condition could not be read")
        out.append(replace(clause, condition=cut.condition, sets=sets, values=values))
    return out


def _sql_name(node: exp.Expression) -> str:
    """A table's alias (else name) as DataFusion resolves it: unquoted means lower case."""
    alias = node.args.get("alias")
    ident = alias.this if isinstance(alias, exp.TableAlias) else node.this
    if not isinstance(ident, exp.Identifier):
        return node.alias_or_name
    return ident.name if ident.quoted else ident.name.lower()


def _keys(on: exp.Expression, talias: str, salias: str) -> list[tuple[str, str]]:
    conjuncts = on.flatten() if isinstance(on, exp.And) else [on]
    out = []
    for c in conjuncts:
        if not isinstance(c, exp.EQ):
            continue
        a, b = c.this, c.expression
        if not (isinstance(a, exp.Column) and isinstance(b, exp.Column)):
            continue
        if _resolved(a, "table") == salias and _resolved(b, "table") == talias:
            a, b = b, a
        if _resolved(a, "table") == talias and _resolved(b, "table") == salias:
            out.append((_resolved(a, "this"), _resolved(b, "this")))
    return out


def _resolved(col: exp.Column, part: str) -> str:
    """A column's name or qualifier as DataFusion resolves it (unquoted: lower case)."""
    ident = col.args.get(part)
    if not isinstance(ident, exp.Identifier):
        return ""
    return ident.name if ident.quoted else ident.name.lower()


def _column(col: str, schema: pa.Schema, name: str) -> str:
    if col in schema.names:
        return col
    folded = [n for n in schema.names if n.lower() == col.lower()]
    if len(folded) == 1:
        return folded[0]
    raise SchemaMismatchError(f"MERGE INTO {name!r}: no column {col!r} in the target")


def _clause(w: exp.When, schema: pa.Schema, name: str) -> Clause:
    if w.args.get("source"):  # NOT MATCHED BY SOURCE: UPDATE / DELETE of the target row
        as_matched = w.copy()
        as_matched.set("source", False)
        as_matched.set("matched", True)
        return replace(_clause(as_matched, schema, name), matched=False, by_source=True)
    matched = bool(w.args.get("matched"))
    cond = w.args.get("condition")
    condition = None if cond is None else _sql(cond)
    then = w.args.get("then")
    if isinstance(then, exp.Var) and then.name.upper() == "DELETE" and matched:
        return Clause(True, condition, "delete")
    if isinstance(then, exp.Update) and matched:
        items = then.expressions
        sets: dict[str, str] = {}
        for item in items:
            if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
                raise PlanningError(f"MERGE INTO {name!r}: cannot read SET item {item.sql()}")
            sets[_column(item.this.name, schema, name)] = _sql(item.expression)
        return Clause(True, condition, "update", sets=sets)
    if isinstance(then, exp.Insert) and not matched:
        cols_node = then.this
        values = then.expression
        if not isinstance(values, exp.Tuple):
            raise PlanningError(f"MERGE INTO {name!r}: cannot read INSERT {then.sql()}")
        vals = [_sql(v) for v in values.expressions]
        if isinstance(cols_node, exp.Tuple):
            cols = [_column(c.name, schema, name) for c in cols_node.expressions]
        else:
            cols = list(schema.names)
        if len(cols) != len(vals):
            raise SchemaMismatchError(
                f"MERGE INTO {name!r}: INSERT gives {len(vals)} values for {len(cols)} columns"
            )
        return Clause(False, condition, "insert", columns=cols, values=vals)
    raise PlanningError(f"MERGE INTO {name!r}: unsupported clause {w.sql()}")


def merge_action(ctx: Any, table: Any, name: str, plan: Any, query: str) -> Callable[[], int]:
    """What runs when the MERGE statement's DataFrame is executed (returns rows affected)."""
    from lance_sql.engines.datafusion.dml_target import (
        plain_schema,
        source_rows,
        writable_namespace,
    )

    statement = parse_merge(query, table.schema, name)
    source_plan = plan.inputs()[0]

    def action() -> int:
        ns = writable_namespace(table, name)
        src = source_rows(ctx, source_plan, f"MERGE INTO {name!r} USING")
        src = src.cast(plain_schema(src.schema))  # no view types: pyarrow cannot take them
        src = src.append_column(_ROW, pa.array(np.arange(src.num_rows), pa.int64()))
        return run(ns, lambda m: _merge(m, ns, src, statement, name))

    return action


def _prefilter(ns: Any, src: pa.Table, keys: Sequence[tuple[str, str]]) -> pc.Expression | None:
    """Target rows can match only where every ON key equality's column is a source value.

    Floating-point keys are left out: DataFusion's ``=`` holds for -0.0 and
    0.0 and for NaN and NaN, pyarrow's ``is_in`` does not.
    """
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


def _case(clauses: Sequence[Clause]) -> str:
    whens = " ".join(f"WHEN ({c.condition or 'TRUE'}) THEN {i}" for i, c in enumerate(clauses))
    return f"CASE {whens} ELSE -1 END"


def _merge(m: Mutation, ns: Any, src: pa.Table, st: MergeStatement, name: str) -> int:
    t, s = quote(st.target_alias), quote(st.source_alias)
    matched_clauses = [c for c in st.clauses if c.matched]
    by_source = [c for c in st.clauses if c.by_source]
    seen = np.zeros(src.num_rows, dtype=bool)
    done = 0
    # BY SOURCE clauses need every target row; otherwise only those the ON keys may match
    prefilter = None if by_source else _prefilter(ns, src, st.keys)
    if src.num_rows or by_source:
        for hit in matching_rows(m, prefilter, full_covered=True):
            target = hit.rows
            if not target.num_rows:
                continue
            entry = m.entries[hit.object_id]
            target = target.append_column(_ROW, pa.array(np.arange(target.num_rows), pa.int64()))
            case = f", {_case(matched_clauses)} AS k" if matched_clauses else ""
            pairs = run_sql(
                {st.target_alias: target, st.source_alias: src},
                f"SELECT {t}.{quote(_ROW)} AS tr, {s}.{quote(_ROW)} AS sr{case} "
                f"FROM {t} JOIN {s} ON {st.on}",
                what=f"MERGE INTO {name!r} ON {st.on}",
            )
            tr = pairs.column("tr").to_numpy()
            sr = pairs.column("sr").to_numpy()
            seen[sr] = True
            gone: list[np.ndarray] = []
            if matched_clauses and len(tr):
                if len(np.unique(tr)) != len(tr):
                    raise MergeKeyError(
                        f"MERGE INTO {name!r}: a target row (partition table {hit.object_id!r}) "
                        "matches more than one source row; nothing was written"
                    )
                k = pairs.column("k").to_numpy()
                gone.append(_apply(m, entry, ns, target, src, tr, sr, k, matched_clauses, st, name))
            if by_source:
                lone = np.setdiff1d(np.arange(target.num_rows), tr)
                if len(lone):
                    alone = target.take(pa.array(lone))
                    k = (
                        run_sql(
                            {st.target_alias: alone},
                            f"SELECT {_case(by_source)} AS k FROM {t} ORDER BY {t}.{quote(_ROW)}",
                            what=f"MERGE INTO {name!r} WHEN NOT MATCHED BY SOURCE",
                        )
                        .column("k")
                        .to_numpy()
                    )
                    gone.append(
                        _apply(m, entry, ns, target, None, lone, None, k, by_source, st, name)
                    )
            rows = np.concatenate(gone) if gone else np.array([], dtype=np.int64)
            if len(rows):
                m.delete_rowids(entry, target.column(ROWID).take(pa.array(rows)))
                done += len(rows)
    rest = src.filter(pa.array(~seen)) if src.num_rows else src
    inserts = [c for c in st.clauses if not c.matched and not c.by_source]
    if inserts and rest.num_rows:
        k = run_sql(
            {st.source_alias: rest},
            f"SELECT {_case(inserts)} AS k FROM {s} ORDER BY {quote(_ROW)}",
            what=f"MERGE INTO {name!r} WHEN NOT MATCHED",
        )
        codes = k.column("k").to_numpy()
        for i, clause in enumerate(inserts):
            rows = rest.filter(pa.array(codes == i))
            if rows.num_rows:
                m.insert(_inserted(ns, rows, clause, st.source_alias, name))
                done += rows.num_rows
    return done


def _apply(
    m: Mutation,
    entry: Any,
    ns: Any,
    target: pa.Table,
    src: pa.Table | None,
    tr: np.ndarray,
    sr: np.ndarray | None,
    k: np.ndarray,
    clauses: Sequence[Clause],
    st: MergeStatement,
    name: str,
) -> np.ndarray:
    """Stage the updates of the target rows ``tr`` (paired with source rows ``sr``; none for
    BY SOURCE clauses) whose clause ``k`` applies; returns the rows that go (updated or
    deleted), as indexes into ``target`` (rows of partition table ``entry``). An updated
    row keeps its blobs' bytes unless a SET gives new ones."""
    for i, clause in enumerate(clauses):
        sel = k == i
        if clause.action != "update" or not sel.any():
            continue
        t_rows = target.take(pa.array(tr[sel]))
        t_rows = with_blob_bytes(ns, entry, t_rows).drop_columns([ROWID, _ROW])
        s_rows = None if src is None or sr is None else src.take(pa.array(sr[sel]))
        m.insert(_updated(ns, t_rows, s_rows, clause, st, name))
    return tr[k >= 0]


def _fit(ns: Any, columns: dict[str, pa.ChunkedArray | pa.Array], n: int, name: str) -> pa.Table:
    """A table of the namespace's stored schema (blob columns hold bytes): given columns
    cast, the others NULL."""
    arrays = []
    for f in ns._schema:
        col = columns.get(f.name)
        if col is None:
            arrays.append(pa.nulls(n, f.type))
            continue
        if not col.type.equals(f.type):
            try:
                col = col.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise SchemaMismatchError(
                    f"MERGE INTO {name!r}: column {f.name!r} gets {col.type}, "
                    f"the table has {f.type}: {exc}"
                ) from exc
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=ns._schema)


def _values(tables: dict[str, pa.Table], sql: str, name: str, columns: list[str]) -> pa.Table:
    """Run the SELECT computing new values; a failed cast names the columns at fault."""
    try:
        return run_sql(tables, sql, what=f"MERGE INTO {name!r} values")
    except SqlExpressionError as exc:
        if "cast" not in str(exc).lower():
            raise
        raise SchemaMismatchError(
            f"MERGE INTO {name!r}: a value does not fit its column {columns}: {exc}"
        ) from exc


def _updated(
    ns: Any,
    t_rows: pa.Table,
    s_rows: pa.Table | None,
    clause: Clause,
    st: MergeStatement,
    name: str,
) -> pa.Table:
    n = t_rows.num_rows
    assert clause.sets is not None
    idx = pa.array(np.arange(n), pa.int64())
    t, s = quote(st.target_alias), quote(st.source_alias)
    types = type_names(ns._schema)
    select = ", ".join(
        f"{cast_sql(clause.sets[f.name], types[f.name])} AS {quote(f.name)}"
        if f.name in clause.sets
        else f"{t}.{quote(f.name)} AS {quote(f.name)}"
        for f in ns.schema
    )
    tables = {st.target_alias: t_rows.append_column(_PAIR, idx)}
    rows = t
    if s_rows is not None:  # BY SOURCE clauses see the target row alone
        tables[st.source_alias] = s_rows.drop_columns([_ROW]).append_column(_PAIR, idx)
        rows = f"{t} JOIN {s} ON {t}.{quote(_PAIR)} = {s}.{quote(_PAIR)}"
    out = _values(
        tables,
        f"SELECT {select} FROM {rows} ORDER BY {t}.{quote(_PAIR)}",
        name,
        sorted(clause.sets),
    )
    return _fit(ns, {c: out.column(c) for c in out.column_names}, n, name)


def _inserted(ns: Any, rows: pa.Table, clause: Clause, alias: str, name: str) -> pa.Table:
    rows = rows.drop_columns([_ROW])
    assert clause.columns is not None and clause.values is not None
    types = type_names(ns._schema)
    select = ", ".join(
        f"{cast_sql(v, types[c])} AS {quote(c)}"
        for c, v in zip(clause.columns, clause.values, strict=True)
    )
    out = _values({alias: rows}, f"SELECT {select} FROM {quote(alias)}", name, clause.columns)
    return _fit(ns, {c: out.column(c) for c in out.column_names}, rows.num_rows, name)


__all__ = ["Clause", "MergeStatement", "merge_action", "parse_merge"]
