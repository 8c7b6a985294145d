"""The SQL text of a DELETE's condition and an UPDATE's SET values, from DataFusion's plan.

The namespace's row operations take SQL text over the namespace columns and
evaluate it with DataFusion (:mod:`lance_sql.tables.namespace.sql_eval`). The
text comes from DataFusion's own unparser (``plan_to_sql``) of the statement's
*unoptimized* input plan, where literals are still as written (an optimized
plan folds a zoned timestamp literal into a value whose zone the unparser
drops). That output has one fixed shape, ``SELECT <items> FROM <table>
[WHERE <condition>]``; it is cut at its top-level ``FROM`` / ``WHERE`` /
commas / ``AS`` with sqlglot's tokenizer, and every piece is kept verbatim
(never re-printed by another SQL dialect), except that

* the table qualifier (``t.col``) is dropped: the text runs over the rows
  alone;
* typed ``murmur3`` calls (``__lance_murmur3__int64(``) get their SQL name
  back (``murmur3(``), which the row operations dispatch again.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import sqlglot
from sqlglot.tokens import Token, TokenType

from lance_sql.errors import PlanningError, SchemaMismatchError, UnsupportedFeatureError, first_line
from lance_sql.tables.namespace.schema_rule import extra_fields

_NAMES = (TokenType.VAR, TokenType.IDENTIFIER)


@dataclass(frozen=True)
class Unparsed:
    """``SELECT <items> FROM <table> [WHERE <where>]`` as pieces of text."""

    items: list[tuple[str, list[Token]]]  # (item text without alias, its tokens)
    where: str | None


def unparse(node: Any, name: str, ctx: Any = None) -> Unparsed:
    """The unparser's text of ``node`` (a DELETE's or UPDATE's input plan), in pieces.

    ``ctx``: a session that knows the table; the text is then planned again
    there and refused unless it means what ``node`` means (:func:`check_round_trip`).
    """
    from datafusion.unparser import Dialect, Unparser

    try:
        text = str(Unparser(Dialect.default()).plan_to_sql(node))
        tokens = list(sqlglot.tokenize(text))
    except Exception as exc:
        first = first_line(exc)
        raise UnsupportedFeatureError(
            f"the statement on {name!r} cannot be printed for the row operations: {first}"
        ) from exc
    if ctx is not None:
        check_round_trip(ctx, node, text, name)
    if any(t.token_type in (TokenType.SELECT, TokenType.EXISTS) for t in tokens[1:]):
        raise UnsupportedFeatureError(
            f"a subquery in a DELETE or UPDATE of namespace {name!r} is not supported"
        )
    top = _top_level(tokens)
    kinds = [tokens[i].token_type for i in top]
    if not tokens or tokens[0].token_type != TokenType.SELECT or TokenType.FROM not in kinds:
        raise PlanningError(f"the statement on {name!r} has an unexpected plan: {text}")
    at_from = top[kinds.index(TokenType.FROM)]
    at_where = top[kinds.index(TokenType.WHERE)] if TokenType.WHERE in kinds else None
    source = tokens[at_from + 1 : at_where]
    table = [t for t in source if t.token_type in _NAMES]
    if not table or any(t.token_type not in (*_NAMES, TokenType.DOT) for t in source):
        raise UnsupportedFeatureError(  # a join or a second table: never guess a qualifier
            f"the statement on {name!r} reads more than its table; not supported"
        )
    qualifier = table[-1].text
    where = None
    if at_where is not None:
        where = _text(text, tokens[at_where + 1 :], qualifier)
    items = []
    for part in _split(tokens[1:at_from]):
        part = _drop_alias(part)
        items.append((_text(text, part, qualifier), part))
    return Unparsed(items, where)


_STRING_LITERAL = re.compile(r'(?:LargeUtf8|Utf8View|Utf8)\("(?:[^"\\]|\\.)*"\)')


def _meaning(plan: Any) -> tuple[list[str], list[str], int]:
    """(the Filter lines, every string literal, the SIMILAR TOs) of a plan's display.

    SET values are compared by their string literals and SIMILAR TOs only (the
    unparser prints ``s SIMILAR TO p`` as ``s LIKE p``); their outer casts may
    differ harmlessly (each value is cast to its column afterwards).
    """
    text = plan.display_indent()
    filters = [line.strip() for line in text.splitlines() if line.strip().startswith("Filter:")]
    return filters, sorted(_STRING_LITERAL.findall(text)), text.count(" SIMILAR TO ")


def check_round_trip(ctx: Any, node: Any, text: str, name: str) -> None:
    """Refuse ``text`` (the unparser's SQL of ``node``) unless it plans back to the same
    condition and string literals.

    DataFusion 55's unparser prints a string literal holding two quotes in a row
    wrongly: ``'a''''b'`` (the value ``a''b``) comes out as ``'a''b'``, so the row
    operation would delete or update the rows where ``s = 'a''b'`` instead.
    """
    from datafusion import SessionContext

    try:
        again = SessionContext.sql(ctx, text).logical_plan()
    except Exception as exc:
        first = first_line(exc)
        raise UnsupportedFeatureError(
            f"the statement on {name!r} cannot be printed for the row operations: {first}"
        ) from exc
    if _meaning(again) != _meaning(node):
        raise UnsupportedFeatureError(
            f"the statement on {name!r} cannot be printed faithfully for the row operations "
            f"(DataFusion's unparser gave {text!r}); a string literal with two quotes in a "
            "row ('a''''b') is one known cause"
        )


#: brackets the unparser prints: calls, array literals ``[1, 2]``, struct and map literals
#: ``{a: 1}`` / ``MAP {'k': 'v'}``
_OPEN = (TokenType.L_PAREN, TokenType.L_BRACKET, TokenType.L_BRACE)
_CLOSE = (TokenType.R_PAREN, TokenType.R_BRACKET, TokenType.R_BRACE)


def _top_level(tokens: list[Token]) -> list[int]:
    """Indexes of the tokens outside every bracket."""
    out, depth = [], 0
    for i, t in enumerate(tokens):
        if t.token_type in _OPEN:
            depth += 1
        elif t.token_type in _CLOSE:
            depth -= 1
        elif depth == 0:
            out.append(i)
    return out


def _split(tokens: list[Token]) -> list[list[Token]]:
    parts: list[list[Token]] = [[]]
    depth = 0
    for t in tokens:
        if t.token_type in _OPEN:
            depth += 1
        elif t.token_type in _CLOSE:
            depth -= 1
        if depth == 0 and t.token_type == TokenType.COMMA:
            parts.append([])
        else:
            parts[-1].append(t)
    return [p for p in parts if p]


def _drop_alias(part: list[Token]) -> list[Token]:
    if len(part) >= 3 and part[-2].token_type == TokenType.ALIAS and part[-1].token_type in _NAMES:
        return part[:-2]
    return part


def _text(source: str, tokens: list[Token], qualifier: str) -> str:
    """``tokens``' text from ``source``, verbatim but for the table qualifier and typed calls."""
    from lance_sql.engines.datafusion.sql_dispatch import readable_name

    if not tokens:
        return ""
    pieces: list[str] = []
    pos = tokens[0].start
    skip = set()
    for i, t in enumerate(tokens[:-1]):
        nxt = tokens[i + 1]
        prev = tokens[i - 1] if i else None
        if (
            t.token_type in _NAMES
            and t.text == qualifier
            and nxt.token_type == TokenType.DOT
            and (prev is None or prev.token_type != TokenType.DOT)
        ):
            skip.update((i, i + 1))
    for i, t in enumerate(tokens):
        if i in skip:
            pieces.append(source[pos : t.start])
            pos = t.end + 1
    pieces.append(source[pos : tokens[-1].end + 1])
    return readable_name("".join(pieces)).strip()


def is_column(tokens: list[Token], column: str) -> bool:
    """True when an item's tokens are just a reference to ``column`` (qualified or not)."""
    names = [t for t in tokens if t.token_type != TokenType.DOT]
    return (
        len(names) in (1, 2)
        and all(t.token_type in _NAMES for t in names)
        and (names[-1].text == column)
        and len(tokens) == 2 * len(names) - 1
    )


def where_sql(node: Any, name: str, ctx: Any = None) -> str | None:
    """A DELETE's condition (None: every row); ``ctx`` as in :func:`unparse`."""
    return unparse(node, name, ctx).where


def update_sql(
    node: Any, schema: pa.Schema, name: str, ctx: Any = None
) -> tuple[dict[str, str], str | None]:
    """An UPDATE's SET values (changed columns only) and condition."""
    node, recast = _without_nested_casts(node, schema, name, ctx)
    parts = unparse(node, name, ctx)
    if len(parts.items) != len(schema):
        raise PlanningError(
            f"UPDATE of {name!r}: {len(parts.items)} values for {len(schema)} columns"
        )
    sets = {
        field.name: text
        for field, (text, tokens) in zip(schema, parts.items, strict=True)
        if not is_column(tokens, field.name)
    }
    if recast:
        from lance_sql.engines.datafusion.dml_target import type_names

        names = type_names(schema)
        for column in recast & sets.keys():
            sets[column] = cast_sql(sets[column], names[column])
    return sets, parts.where


def cast_sql(expr: str, type_name: str) -> str:
    """``expr`` cast by DataFusion to the type DataFusion names ``type_name``."""
    return f"arrow_cast(({expr}), '{type_name.replace(chr(39), chr(39) * 2)}')"


def _nested(t: pa.DataType) -> bool:
    return pa.types.is_nested(t) or isinstance(t, pa.BaseExtensionType)


def _without_nested_casts(
    node: Any, schema: pa.Schema, name: str, ctx: Any
) -> tuple[Any, set[str]]:
    """An UPDATE's input plan without the outer casts of its nested-type SET values, and
    the columns whose cast was taken off.

    DataFusion 55's unparser cannot print a cast to a struct, list or map type
    (with or without field-id metadata); DataFusion casts every SET value to its
    column's type, so the value is printed bare and cast again by name
    (``arrow_cast``, :func:`cast_sql`), which means the same. A value carrying
    struct fields the column lacks is refused (the cast would drop them).
    """
    from datafusion import Expr, SessionContext

    variant = node.to_variant()
    if ctx is None or type(variant).__name__ != "Projection":
        return node, set()
    items, recast = [], set()
    for raw, field in zip(variant.projections(), schema, strict=False):
        alias = raw.to_variant()
        if type(alias).__name__ == "Alias" and _nested(field.type):
            inner = alias.expr().to_variant()
            if type(inner).__name__ == "Cast":
                items.append(Expr(inner.expr()).alias(alias.alias()))
                recast.add(field.name)
                continue
        items.append(Expr(raw))
    if not recast:
        return node, recast
    base = SessionContext.create_dataframe_from_logical_plan(ctx, node.inputs()[0])
    bare = base.select(*items)
    given = bare.schema()
    for column in sorted(recast):  # the cast would drop them, as INSERT's would
        extra = extra_fields(given.field(column).type, schema.field(column).type)
        if extra:
            raise SchemaMismatchError(
                f"UPDATE of {name!r}: the new value of column {column!r} carries fields "
                f"{extra} the column lacks; add them first (add_columns) or leave them out"
            )
    return bare.logical_plan(), recast


# -- MERGE: the clauses' texts, verbatim ---------------------------------------------------------
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


__all__ = [
    "ClauseText",
    "MergeText",
    "Unparsed",
    "cast_sql",
    "check_round_trip",
    "is_column",
    "merge_text",
    "unparse",
    "update_sql",
    "where_sql",
]
