"""``MAP(K, V)`` column types in ``CREATE TABLE`` column lists.

DataFusion 55's SQL parser reads ``MAP(VARCHAR, VARCHAR)`` but its planner
refuses it ("Unsupported SQL type Map(...)"), although maps work everywhere
else (Python API, reads, ``map(...)`` values). lance-sql plans a column list
with DataFusion's own ``CREATE TABLE`` (so every type means what it means in
DataFusion DDL); each ``MAP(K, V)`` is first replaced by a placeholder struct
``STRUCT<__lance_map_N VARCHAR>``, the list is planned, and each placeholder in
the planned types (at any depth: inside structs and lists too) becomes the map
of ``K`` and ``V`` as DataFusion plans those (maps inside them included). The
map has DataFusion's shape: non-nullable keys, nullable values, unsorted.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa

from lance_sql.format.schema import map_child_fields

_PREFIX = "__lance_map_"
_MAP = re.compile(r"\bMAP\s*\(", re.IGNORECASE)


def _split_maps(text: str) -> tuple[str, list[tuple[str, str]]]:
    """``text`` with each top-level ``MAP(K, V)`` replaced by a placeholder; the (K, V) texts."""
    out, maps, pos = [], [], 0
    while True:
        m = _find(text, pos)
        if m is None:
            out.append(text[pos:])
            return "".join(out), maps
        start, open_paren = m
        close, comma = _close_and_comma(text, open_paren)
        if comma is None:
            raise ValueError(f"MAP type needs a key and a value type: {text[start : close + 1]}")
        out.append(text[pos:start])
        out.append(f"STRUCT<{_PREFIX}{len(maps)} VARCHAR>")
        maps.append((text[open_paren + 1 : comma].strip(), text[comma + 1 : close].strip()))
        pos = close + 1


def _find(text: str, pos: int) -> tuple[int, int] | None:
    """The next ``MAP(`` outside quotes: (its start, its parenthesis)."""
    quote = None
    i = pos
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        else:
            m = _MAP.match(text, i)
            if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
                return i, m.end() - 1
        i += 1
    return None


def _close_and_comma(text: str, open_paren: int) -> tuple[int, int | None]:
    depth, comma = 0, None
    for i in range(open_paren, len(text)):
        ch = text[i]
        if ch in "(<":
            depth += 1
        elif ch in ")>":
            depth -= 1
            if depth == 0:
                return i, comma
        elif ch == "," and depth == 1 and comma is None:
            comma = i
    raise ValueError(f"unbalanced parentheses in {text[open_paren:]!r}")


def column_schema(columns: str, plan: Any) -> pa.Schema:
    """The schema of the column list ``columns`` (``(a INT, m MAP(VARCHAR, INT), ...)``).

    ``plan(text)`` plans a column list with DataFusion and returns its schema.
    """
    text, maps = _split_maps(columns)
    schema = plan(text)
    if not maps:
        return schema
    types = []
    for key, value in maps:
        kv = column_schema(f"(k {key}, v {value})", plan)
        types.append(pa.map_(pa.field("key", kv.field("k").type, False), kv.field("v").type))
    return pa.schema([f.with_type(_replace(f.type, types)) for f in schema], schema.metadata)


def _replace(t: pa.DataType, maps: list[pa.DataType]) -> pa.DataType:
    if pa.types.is_struct(t) and t.num_fields == 1 and t.field(0).name.startswith(_PREFIX):
        return maps[int(t.field(0).name[len(_PREFIX) :])]
    return map_child_fields(t, lambda f: f.with_type(_replace(f.type, maps)))


__all__ = ["column_schema"]
