"""Where ``murmur3`` / ``murmur3_multi`` are called in a SQL text, and select-list structure.

A tokenizer (sqlglot's Postgres one), never a parser: only name tokens are
replaced and aliases added, every other byte of the query is kept.
"""

from __future__ import annotations

import itertools
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Call:
    """One call of a dispatched function in the query text."""

    function: str  # "murmur3" or "murmur3_multi"
    start: int  # the name token's span in the text, end exclusive
    end: int
    arity: int
    key: str  # SELECT scope, function and argument tokens: equal keys, same expression


@dataclass(frozen=True)
class Token:
    kind: str  # sqlglot's TokenType name
    text: str
    start: int  # span in the query text, end exclusive
    end: int


def tokens_of(sql: str, offset: int = 0) -> list[Token]:
    """Tokens with positions; statements sqlglot keeps as one opaque string
    (``EXPLAIN ...``) are tokenized again after their keyword."""
    from sqlglot.dialects.postgres import Postgres

    out: list[Token] = []
    for tok in Postgres().tokenizer().tokenize(sql):
        kind = tok.token_type.name
        out.append(Token(kind, tok.text, offset + tok.start, offset + tok.end + 1))
        if kind == "COMMAND":
            rest = tok.end + 1
            return out + tokens_of(sql[rest:], offset + rest)
    return out


def sqlglot_tokens(sql: str) -> list[Any]:
    """sqlglot's (default dialect) tokens of ``sql``; none when it cannot tokenize it."""
    import sqlglot

    try:
        return list(sqlglot.tokenize(sql))
    except Exception:
        return []


def select_scopes(tokens: list[Token]) -> list[int]:
    """For each token, the id of the SELECT it belongs to (subqueries and set operations
    each get their own): same-text calls are only grouped within one SELECT."""
    scopes = []
    stack: list[int] = []
    current = 0
    next_id = 1
    for tok in tokens:
        if tok.kind == "L_PAREN":
            stack.append(current)
        elif tok.kind == "R_PAREN" and stack:
            current = stack.pop()
        elif tok.kind == "SELECT":
            current = next_id
            next_id += 1
        scopes.append(current)
    return scopes


def find_calls(sql: str, functions: Container[str]) -> tuple[list[Call], set[str]]:
    """Calls of ``functions`` in ``sql`` (unqualified), and the identifiers the query names."""
    tokens = tokens_of(sql)
    depths = depths_of(t.kind for t in tokens)
    names: set[str] = set()
    calls: list[Call] = []
    scopes = select_scopes(tokens)
    for i, tok in enumerate(tokens):
        if tok.kind not in ("VAR", "IDENTIFIER"):
            continue
        name = tok.text if tok.kind == "IDENTIFIER" else tok.text.lower()
        names.add(name)
        if name not in functions:
            continue
        if i + 1 >= len(tokens) or tokens[i + 1].kind != "L_PAREN":
            continue
        if i > 0 and tokens[i - 1].kind == "DOT":
            continue
        level = depths[i + 1]
        end = closing_of(depths, i + 1)
        end = len(tokens) if end is None else end
        commas = sum(
            t.kind == "COMMA" and d == level + 1
            for t, d in zip(tokens[i + 2 : end], depths[i + 2 : end], strict=True)
        )
        arity = 0 if end == i + 2 else commas + 1
        arg_tokens = [f"{t.kind}:{t.text}" for t in tokens[i + 1 : end + 1]]
        key = f"{scopes[i]}:{name}" + " ".join(arg_tokens)
        calls.append(Call(name, tok.start, tok.end, arity, key))
    return calls, names


def splice(sql: str, calls: list[Call], names: list[str | None]) -> str:
    parts: list[str] = []
    pos = 0
    for call, name in zip(calls, names, strict=True):
        parts.append(sql[pos : call.start])
        parts.append(name if name is not None else sql[call.start : call.end])
        pos = call.end
    parts.append(sql[pos:])
    return "".join(parts)


#: Tokens that end a select list at its own nesting depth.
SELECT_LIST_END = {
    "FROM", "WHERE", "GROUP_BY", "HAVING", "WINDOW", "QUALIFY", "ORDER_BY", "LIMIT", "OFFSET",
    "FETCH", "UNION", "INTERSECT", "EXCEPT", "INTO", "SEMICOLON",
}  # fmt: skip
#: Tokens after which a trailing identifier is an alias (``murmur3(x) h``).
ENDS_EXPRESSION = {"R_PAREN", "R_BRACKET", "VAR", "IDENTIFIER", "NUMBER", "STRING"}


OPEN = ("L_PAREN", "L_BRACKET", "L_BRACE")
CLOSE = ("R_PAREN", "R_BRACKET", "R_BRACE")


def depths_of(
    kinds: Iterable[str], opening: Container[str] = OPEN, closing: Container[str] = CLOSE
) -> list[int]:
    """The bracket depth each token (by its kind, sqlglot's TokenType name) stands at; an
    opening or closing token stands at the depth outside it. ``opening`` / ``closing``: the
    kinds that count as brackets (``CASE`` ... ``END`` may)."""
    out = []
    depth = 0
    for kind in kinds:
        if kind in closing:
            depth -= 1
        out.append(depth)
        if kind in opening:
            depth += 1
    return out


def closing_of(depths: Sequence[int], opening: int) -> int | None:
    """The token closing the bracket opened at token ``opening`` (None: never closed)."""
    level = depths[opening]
    return next((j for j in range(opening + 1, len(depths)) if depths[j] == level), None)


def select_items(tokens: list[Token], select: int) -> list[list[Token]]:
    """The items of the select list that starts after token ``select`` (a SELECT)."""
    depths = depths_of(t.kind for t in tokens)
    start = select + 1
    if start < len(tokens) and tokens[start].kind in ("DISTINCT", "ALL"):
        start += 1
        if start + 1 < len(tokens) and tokens[start].kind == "ON":  # DISTINCT ON (...)
            close = closing_of(depths, start + 1)
            start = len(tokens) if close is None else close + 1
    level = depths[select]
    items: list[list[Token]] = [[]]
    for tok, depth in zip(tokens[start:], depths[start:], strict=True):
        if depth < level or (depth == level and tok.kind in SELECT_LIST_END):
            break
        if tok.kind == "COMMA" and depth == level:
            items.append([])
            continue
        items[-1].append(tok)
    return [item for item in items if item]


def has_alias(item: list[Token]) -> bool:
    if len(item) < 2:
        return False
    if item[-2].kind == "ALIAS":
        return True
    return item[-1].kind in ("VAR", "IDENTIFIER") and item[-2].kind in ENDS_EXPRESSION


def has_typed_call(item: list[Token]) -> bool:
    return any(
        tok.kind == "VAR" and tok.text.startswith("__lance_murmur3") and nxt.kind == "L_PAREN"
        for tok, nxt in itertools.pairwise(item)
    )


def query_text(sql: str, tokens: list[Token], depths: list[int], select: int) -> str | None:
    """A query DataFusion can plan on its own whose output columns are ``select``'s list
    (None for statements other than queries)."""
    first = tokens[0].kind
    if depths[select] == 0:
        if first in ("SELECT", "WITH"):
            return sql
        if first != "CREATE":
            return None
        for i in range(1, select + 1):  # CREATE ... AS [WITH ...] SELECT
            if (
                depths[i] == 0
                and tokens[i - 1].kind == "ALIAS"
                and tokens[i].kind in ("SELECT", "WITH")
            ):
                return sql[tokens[i].start :]
        return None
    level = depths[select]
    end = next(
        (j for j in range(select, len(tokens)) if depths[j] < level), len(tokens)
    )  # the closing bracket
    body = sql[tokens[select].start : tokens[end].start if end < len(tokens) else len(sql)]
    with_at = next((i for i, t in enumerate(tokens) if t.kind == "WITH" and depths[i] == 0), None)
    if with_at is None:
        return body
    main = next(
        (i for i in range(with_at, len(tokens)) if tokens[i].kind == "SELECT" and depths[i] == 0),
        None,
    )
    if main is None:
        return body
    return sql[tokens[with_at].start : tokens[main].start] + " " + body
