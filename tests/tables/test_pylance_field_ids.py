"""reader.pylance_field_ids equals the format parser's schema at the top level, for every type.

Partition tables opened for reading take their field ids from pylance
(``lance_schema``) instead of parsing the manifest again; columns are matched
to the namespace at the top level, so names, types, nullability, field
metadata (namespace markers) and ids must all be what
:func:`~lance_sql.tables.namespace.reader.table_field_ids` reads.
"""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa

from lance_sql.spec.arrow_json import FIELD_ID_KEY
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.namespace.reader import pylance_field_ids, table_field_ids

TYPES = {
    "i8": pa.int8(),
    "i16": pa.int16(),
    "i32": pa.int32(),
    "u8": pa.uint8(),
    "u16": pa.uint16(),
    "u32": pa.uint32(),
    "u64": pa.uint64(),
    "f16": pa.float16(),
    "f32": pa.float32(),
    "f64": pa.float64(),
    "b": pa.bool_(),
    "d128": pa.decimal128(10, 2),
    "d256": pa.decimal256(40, 3),
    "d32": pa.date32(),
    "d64": pa.date64(),
    "t32": pa.time32("ms"),
    "t64": pa.time64("us"),
    "ts": pa.timestamp("us"),
    "tstz": pa.timestamp("ns", "UTC"),
    "dur": pa.duration("us"),
    "s": pa.string(),
    "ls": pa.large_string(),
    "bin": pa.binary(),
    "lbin": pa.large_binary(),
    "fsb": pa.binary(4),
    "l": pa.list_(pa.int32()),
    "ll": pa.large_list(pa.string()),
    "fsl": pa.list_(pa.float32(), 3),
    "st": pa.struct([("a", pa.int32()), ("b", pa.struct([("c", pa.string())]))]),
}


def _top_level(schema: pa.Schema) -> list[tuple[object, ...]]:
    return [(f.name, str(f.type), f.nullable, sorted((f.metadata or {}).items())) for f in schema]


def _check(ns: PartitionedNamespace) -> int:
    checked = 0
    for entry in ns.tables():
        ds = lance.dataset(entry.uri, version=entry.read_version)
        ours = pylance_field_ids(ds)
        parsed = table_field_ids(entry, ds.version)
        assert _top_level(ours) == _top_level(parsed), entry.object_id
        assert all(f.type.equals(g.type) for f, g in zip(ours, parsed, strict=True))
        assert all(FIELD_ID_KEY.encode() in (f.metadata or {}) for f in ours)
        checked += 1
    return checked


def test_every_type_matches_the_format_parser(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("k", pa.int64())] + [pa.field(n, t) for n, t in TYPES.items()])
    # one partition: pylance 14 panics writing a slice of a struct column (see the report)
    rows = [{"k": 1, "st": {"a": 1, "b": {"c": "x"}}}, {"k": 1}]
    ns = PartitionedNamespace.create(
        str(tmp_path / "ns"), schema, [{"source": "k", "transform": "identity"}]
    )
    ns.append(pa.Table.from_pylist(rows, schema=schema))
    assert _check(PartitionedNamespace.open(ns.root)) == 1


def test_renamed_and_added_columns_match(tmp_path: Path) -> None:
    schema = pa.schema([("k", pa.int64()), ("x", pa.float64()), ("s", pa.string())])
    ns = PartitionedNamespace.create(
        str(tmp_path / "ns"), schema, [{"source": "k", "transform": "identity"}]
    )
    ns.append(pa.table({"k": [1, 2], "x": [0.5, 1.5], "s": ["a", "b"]}, schema=schema))
    ns.rename_column("x", "amount")
    ns.add_columns([pa.field("extra", pa.int32())])
    ns.append(
        pa.table(
            {"k": [2, 3], "amount": [2.5, 3.5], "s": ["c", "d"], "extra": [7, 8]},
            schema=ns.schema,
        )
    )
    assert _check(PartitionedNamespace.open(ns.root)) == 3
