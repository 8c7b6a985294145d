"""Struct columns split across partitions are written, not a pylance panic.

pylance 14 panics writing a slice of a struct column (``assertion failed: end
<= self.len()``); a namespace append splits every batch by partition, so the
writer hands pylance unsliced copies where a column holds a struct.
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa

from lance_sql.tables.namespace.namespace import PartitionedNamespace

INNER = pa.struct([("a", pa.int32()), ("b", pa.struct([("c", pa.string())]))])
SCHEMA = pa.schema([("k", pa.int64()), ("st", INNER), ("ls", pa.list_(INNER))])
ROWS: list[dict[str, Any]] = [
    {"k": 1, "st": {"a": 1, "b": {"c": "x"}}, "ls": [{"a": 5, "b": None}]},
    {"k": 2, "st": {"a": 2, "b": {"c": "y"}}, "ls": None},
    {"k": 3, "st": None, "ls": [{"a": 1, "b": {"c": "z"}}, None]},
    {"k": 2, "st": {"a": 9, "b": None}, "ls": []},
]


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r["k"], repr(r)))


def test_struct_rows_of_several_partitions(tmp_path: Any) -> None:
    root = os.path.join(tmp_path, "ns")
    ns = PartitionedNamespace.create(root, SCHEMA, [{"source": "k", "transform": "identity"}])
    table = pa.Table.from_pylist(ROWS, schema=SCHEMA)
    ns.append(table)
    ns.append(table.slice(1, 3))  # an input that is itself a slice
    got = PartitionedNamespace.open(root).to_table().to_pylist()
    assert _sorted(got) == _sorted(ROWS + ROWS[1:])
