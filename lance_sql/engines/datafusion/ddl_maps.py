"""``MAP(K, V)`` column types in ``CREATE TABLE`` column lists.

DataFusion 55's planner refuses ``MAP(...)`` in DDL, so each one is planned as a
placeholder struct ``STRUCT<__lance_map_N VARCHAR>`` and then replaced (at any
depth) by the map of ``K`` and ``V`` as DataFusion plans those: non-nullable
keys, nullable values, unsorted.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from lance_sql.engines.datafusion.sql_tokens import closing_of, depths_of, tokens_of
from lance_sql.format.schema import map_child_fields

_PREFIX = "__lance_map_"


def _split_maps(text: str) -> tuple[str, list[tuple[str, str]]]:
    """``text`` with each top-level ``MAP(K, V)`` replaced by a placeholder; the (K, V) texts."""
    tokens = tokens_of(text)
    depths = depths_of((t.kind for t in tokens), ("L_PAREN", "LT"), ("R_PAREN", "GT"))
    out, maps, pos = [], [], 0
    for i, tok in enumerate(tokens[:-1]):
        if tok.kind != "MAP" or tok.start < pos or tokens[i + 1].kind != "L_PAREN":
            continue
        close = closing_of(depths, i + 1)
        if close is None:
            raise ValueError(f"unbalanced parentheses in {text[tokens[i + 1].start :]!r}")
        level = depths[i + 1] + 1
        commas = (j for j in range(i + 2, close) if tokens[j].kind == "COMMA")
        comma = next((j for j in commas if depths[j] == level), None)
        if comma is None:
            raise ValueError(
                f"MAP type needs a key and a value type: {text[tok.start : tokens[close].end]}"
            )
        key = text[tokens[i + 1].end : tokens[comma].start]
        value = text[tokens[comma].end : tokens[close].start]
        out.append(text[pos : tok.start])
        out.append(f"STRUCT<{_PREFIX}{len(maps)} VARCHAR>")
        maps.append((key.strip(), value.strip()))
        pos = tokens[close].end
    out.append(text[pos:])
    return "".join(out), maps


def column_schema(columns: str, plan: Any) -> pa.Schema:
    """The schema of the column list ``columns``; ``plan(text)`` plans one with DataFusion."""
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
