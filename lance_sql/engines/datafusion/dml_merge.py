"""``MERGE INTO ns [AS t] USING <source> [AS s] ON <cond> WHEN ... THEN ...`` on a namespace.

DataFusion 55's ``Dml: MergeInto`` plan keeps only the source, so sqlglot reads
the statement's structure and each expression's text is cut from the statement
as written (sqlglot's printer would change it: integer ``a / b`` became a float
division). The result counts updated + deleted + inserted rows.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from lance_sql.engines.datafusion.dml_target import (
    resolved_name,
    schema_column,
    source_rows,
    writable_namespace,
)
from lance_sql.engines.datafusion.sql_tokens import closing_of, depths_of
from lance_sql.errors import PlanningError, SchemaMismatchError
from lance_sql.tables.namespace.field_map import canonical_schema
from lance_sql.tables.namespace.merge_rows import MergeClause, MergeSql, merge_rows, plan_merge
from lance_sql.tables.namespace.mutation import run
from lance_sql.tables.namespace.sql_eval import ROW


@dataclass(frozen=True)
class ClauseText:
    condition: str | None
    set_values: list[str]  # UPDATE SET: the values, in order
    insert_values: list[str]  # INSERT ... VALUES: the values, in order


@dataclass(frozen=True)
class MergeText:
    on: str
    clauses: list[ClauseText]


def merge_text(query: str, name: str) -> MergeText:
    """The ON condition and each WHEN clause's condition and values, cut as written."""
    tokens = [t for t in sqlglot.tokenize(query) if t.token_type != TokenType.SEMICOLON]
    # CASE ... END nests as brackets do: its WHEN and THEN are not the clauses'
    depth = depths_of((t.token_type.name for t in tokens), ("L_PAREN", "CASE"), ("R_PAREN", "END"))
    top = [i for i, d in enumerate(depth) if d == 0]
    kinds = [tokens[i].token_type for i in top]

    def cut(a: int, b: int) -> str:
        if a >= b:
            raise PlanningError(f"MERGE INTO {name!r}: an empty expression")
        return query[tokens[a].start : tokens[b - 1].end + 1]

    try:
        using = top[kinds.index(TokenType.USING)]
        on = next(i for i in top if i > using and tokens[i].token_type == TokenType.ON)
    except (ValueError, StopIteration):
        raise PlanningError(f"MERGE INTO {name!r}: no USING ... ON") from None
    whens = [i for i in top if i > on and tokens[i].token_type == TokenType.WHEN]
    if not whens:
        raise PlanningError(f"MERGE INTO {name!r}: no WHEN clause")
    ends = [*whens[1:], len(tokens)]
    clauses = [
        _clause_text(tokens, depth, w, e, cut, name) for w, e in zip(whens, ends, strict=True)
    ]
    return MergeText(cut(on + 1, whens[0]), clauses)


def _clause_text(
    tokens: list[Token], depth: list[int], start: int, end: int, cut: Any, name: str
) -> ClauseText:
    top = [i for i in range(start + 1, end) if depth[i] == 0]
    then = next((i for i in top if tokens[i].token_type == TokenType.THEN), None)
    if then is None:
        raise PlanningError(f"MERGE INTO {name!r}: a WHEN clause without THEN")
    cond_at = next((i for i in top if i < then and tokens[i].token_type == TokenType.AND), None)
    condition = None if cond_at is None else cut(cond_at + 1, then)
    action = tokens[then + 1].token_type if then + 1 < end else None
    set_values: list[str] = []
    insert_values: list[str] = []
    if action == TokenType.UPDATE:
        items = [i for i in top if i > then + 2 and tokens[i].token_type == TokenType.COMMA]
        bounds = [then + 2, *items, end]  # then+2 is SET
        for a, b in itertools.pairwise(bounds):
            eq = next(
                (
                    i
                    for i in range(a + 1, b)
                    if depth[i] == 0 and tokens[i].token_type == TokenType.EQ
                ),
                None,
            )
            if eq is None:
                raise PlanningError(f"MERGE INTO {name!r}: a SET item without '='")
            set_values.append(cut(eq + 1, b))
    elif action == TokenType.INSERT:
        values = next(
            (i for i in range(then + 1, end) if tokens[i].token_type == TokenType.VALUES), None
        )
        if values is None or tokens[values + 1].token_type != TokenType.L_PAREN:
            raise PlanningError(f"MERGE INTO {name!r}: INSERT without VALUES (...)")
        inner = depth[values + 1] + 1
        close = closing_of(depth, values + 1)
        if close is None or close >= end:
            raise PlanningError(f"MERGE INTO {name!r}: INSERT VALUES ( is never closed")
        commas = [
            i
            for i in range(values + 2, close)
            if depth[i] == inner and tokens[i].token_type == TokenType.COMMA
        ]
        bounds = [values + 1, *commas, close]
        insert_values = [cut(a + 1, b) for a, b in itertools.pairwise(bounds)]
    return ClauseText(condition, set_values, insert_values)


def parse_merge(query: str, schema: pa.Schema, name: str) -> MergeSql:
    """The parts of a MERGE statement (sqlglot reads the structure, :func:`merge_text` cuts
    the expressions' texts), checked against the namespace schema."""
    try:
        tree = sqlglot.parse_one(query)
    except sqlglot.errors.ParseError as exc:
        raise PlanningError(f"MERGE INTO {name!r} cannot be parsed: {exc}") from exc
    if not isinstance(tree, exp.Merge):
        raise PlanningError(f"MERGE INTO {name!r}: not a MERGE statement")
    talias, salias = _sql_name(tree.this), _sql_name(tree.args["using"])
    if not salias:
        raise PlanningError(f"MERGE INTO {name!r}: give the source an alias (USING (...) AS s)")
    if talias == salias:
        raise PlanningError(f"MERGE INTO {name!r}: target and source need different names")
    if tree.args.get("on") is None:
        raise PlanningError(f"MERGE INTO {name!r}: an ON condition is needed")
    whens = tree.args.get("whens")
    whens = whens.expressions if whens else []
    if not whens:
        raise PlanningError(f"MERGE INTO {name!r}: no WHEN clause")
    text = merge_text(query, name)
    if len(text.clauses) != len(whens):
        raise PlanningError(f"MERGE INTO {name!r}: the WHEN clauses could not be read")
    clauses = tuple(
        _clause(w, cut, schema, name) for w, cut in zip(whens, text.clauses, strict=True)
    )
    return MergeSql(talias, salias, text.on, clauses, f"MERGE INTO {name!r}")


def _sql_name(node: exp.Expression) -> str:
    """A table's alias (else name) as DataFusion resolves it: unquoted means lower case."""
    alias = node.args.get("alias")
    ident = alias.this if isinstance(alias, exp.TableAlias) else node.this
    return resolved_name(ident) if isinstance(ident, exp.Identifier) else node.alias_or_name


def _column(col: str, schema: pa.Schema, name: str) -> str:
    missing = f"MERGE INTO {name!r}: no column {col!r} in the target"
    return schema_column(col, schema, lambda: SchemaMismatchError(missing))


def _clause(w: exp.When, cut: ClauseText, schema: pa.Schema, name: str) -> MergeClause:
    """One WHEN clause: sqlglot's structure with the texts ``cut`` as written."""
    by_source = bool(w.args.get("source"))  # NOT MATCHED BY SOURCE: UPDATE / DELETE target rows
    matched = bool(w.args.get("matched")) or by_source
    when = "by_source" if by_source else "matched" if matched else "not_matched"
    if (w.args.get("condition") is None) != (cut.condition is None):
        raise PlanningError(f"MERGE INTO {name!r}: a WHEN condition could not be read")
    then = w.args.get("then")
    if isinstance(then, exp.Var) and then.name.upper() == "DELETE" and matched:
        return MergeClause(when, "delete", cut.condition)
    if isinstance(then, exp.Update) and matched:
        cols = []
        for item in then.expressions:
            if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
                raise PlanningError(f"MERGE INTO {name!r}: cannot read SET item {item.sql()}")
            cols.append(_column(item.this.name, schema, name))
        return MergeClause(when, "update", cut.condition, _values(cols, cut.set_values, name))
    if isinstance(then, exp.Insert) and not matched:
        if not isinstance(then.expression, exp.Tuple):
            raise PlanningError(f"MERGE INTO {name!r}: cannot read INSERT {then.sql()}")
        cols = list(schema.names)
        if isinstance(then.this, exp.Tuple):
            cols = [_column(c.name, schema, name) for c in then.this.expressions]
        if len(cols) != len(then.expression.expressions):
            raise SchemaMismatchError(
                f"MERGE INTO {name!r}: INSERT gives {len(then.expression.expressions)} values "
                f"for {len(cols)} columns"
            )
        return MergeClause(when, "insert", cut.condition, _values(cols, cut.insert_values, name))
    raise PlanningError(f"MERGE INTO {name!r}: unsupported clause {w.sql()}")


def _values(columns: list[str], texts: list[str], name: str) -> tuple[tuple[str, str], ...]:
    if len(texts) != len(columns):
        raise PlanningError(f"MERGE INTO {name!r}: the SET or INSERT values could not be read")
    return tuple(zip(columns, texts, strict=True))


def merge_action(ctx: Any, table: Any, name: str, plan: Any, query: str) -> Callable[[], int]:
    """What runs when the MERGE statement's DataFrame is executed (returns rows affected)."""
    statement = parse_merge(query, table.schema, name)
    source_plan = plan.inputs()[0]

    def action() -> int:
        ns = writable_namespace(table, name)
        src = source_rows(ctx, source_plan, f"MERGE INTO {name!r} USING")
        src = src.cast(canonical_schema(src.schema))  # no view types: pyarrow cannot take them
        src = src.append_column(ROW, pa.array(np.arange(src.num_rows), pa.int64()))
        merge = plan_merge(ns, src, statement)
        return run(ns, lambda m: merge_rows(m, ns, merge, src).rows)

    return action
