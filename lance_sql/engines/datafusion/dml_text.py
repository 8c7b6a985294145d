"""The texts of a MERGE statement's clauses, cut from the statement as written.

datafusion-python 55 plans ``MERGE INTO`` but keeps only its source in the
plan (:mod:`.dml_merge`), so the ON condition and each WHEN clause's condition
and values are cut from the statement itself with sqlglot's tokenizer and kept
verbatim (never re-printed by another SQL dialect), then evaluated by
DataFusion (:mod:`lance_sql.tables.namespace.sql_eval`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot.tokens import Token, TokenType

from lance_sql.errors import PlanningError


def cast_sql(expr: str, type_name: str) -> str:
    """``expr`` cast by DataFusion to the type DataFusion names ``type_name``."""
    return f"arrow_cast(({expr}), '{type_name.replace(chr(39), chr(39) * 2)}')"


@dataclass(frozen=True)
class ClauseText:
    condition: str | None
    set_values: list[str]  # UPDATE SET: the values, in order
    insert_values: list[str]  # INSERT ... VALUES: the values, in order


@dataclass(frozen=True)
class MergeText:
    on: str
    clauses: list[ClauseText]


def _depths(tokens: list[Token]) -> list[int]:
    """Nesting depth of each token (parentheses and CASE ... END); an opening or closing
    token gets the depth outside it."""
    out, depth = [], 0
    for t in tokens:
        if t.token_type in (TokenType.R_PAREN, TokenType.END):
            depth -= 1
        out.append(depth)
        if t.token_type in (TokenType.L_PAREN, TokenType.CASE):
            depth += 1
    return out


def merge_text(query: str, name: str) -> MergeText:
    """The ON condition and each WHEN clause's condition and values of a MERGE, as written.

    sqlglot reads the statement's structure (:mod:`.dml_merge`); the texts are
    cut from the statement itself, because printing them again in another SQL
    dialect changes them (``a / b`` of integers became a float division).
    """
    tokens = [t for t in sqlglot.tokenize(query) if t.token_type != TokenType.SEMICOLON]
    depth = _depths(tokens)
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
        close = next(
            i
            for i in range(values + 2, end)
            if tokens[i].token_type == TokenType.R_PAREN and depth[i] == inner - 1
        )
        commas = [
            i
            for i in range(values + 2, close)
            if depth[i] == inner and tokens[i].token_type == TokenType.COMMA
        ]
        bounds = [values + 1, *commas, close]
        insert_values = [cut(a + 1, b) for a, b in itertools.pairwise(bounds)]
    return ClauseText(condition, set_values, insert_values)


__all__ = ["ClauseText", "MergeText", "cast_sql", "merge_text"]
