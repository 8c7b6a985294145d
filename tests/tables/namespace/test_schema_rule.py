"""The one schema rule of every write path (lance_sql.tables.namespace.schema_rule)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from lance_sql.errors import SchemaMismatchError
from lance_sql.tables.namespace.schema_rule import check_schema, conform, holds

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("s", pa.utf8()),
        pa.field("u", pa.uint32()),
        pa.field("ts", pa.timestamp("us", "UTC")),
        pa.field("t", pa.time64("us")),
        pa.field("l", pa.list_(pa.int32())),
    ]
)


def _spark(f: pa.Field) -> pa.DataType | None:  # what a Spark-like transport delivers
    return {"u": pa.int64(), "t": pa.int64()}.get(f.name)


def test_missing_nullable_columns_are_null_and_order_is_free() -> None:
    out = conform(pa.record_batch({"s": ["a"], "k": [1]}), SCHEMA)
    assert out.schema == SCHEMA
    assert out.to_pylist() == [{"k": 1, "s": "a", "u": None, "ts": None, "t": None, "l": None}]


@pytest.mark.parametrize(
    "batch, column",
    [
        (pa.record_batch({"k": [1], "extra": [2]}), "extra"),
        (pa.record_batch({"s": ["a"]}), "k"),
        (pa.record_batch({"k": pa.array(["1"])}), "k"),  # no string -> bigint
        (pa.record_batch({"k": pa.array([1], pa.int32())}), "k"),  # no widening either
        (pa.record_batch({"k": [1], "s": pa.array([1])}), "s"),  # no number -> string
        (pa.record_batch({"k": pa.array([None], pa.int64())}), "k"),
        (pa.record_batch({"k": [1], "u": pa.array([1], pa.int64())}), "u"),  # no encoding given
    ],
    ids=[
        "extra",
        "missing-non-null",
        "string-to-int",
        "int32-to-int64",
        "int-to-string",
        "null-in-non-null",
        "encoding-without-transport",
    ],
)
def test_refusals_name_the_column(batch: pa.RecordBatch, column: str) -> None:
    with pytest.raises(SchemaMismatchError, match=repr(column)):
        conform(batch, SCHEMA)


def test_duplicates_are_refused() -> None:
    dup = pa.RecordBatch.from_arrays([pa.array([1]), pa.array([2])], names=["k", "k"])
    with pytest.raises(SchemaMismatchError, match="'k' appears more than once"):
        conform(dup, SCHEMA)


def test_representations_are_accepted() -> None:
    batch = pa.record_batch(
        {
            "k": [1],
            "s": pa.array(["x"], pa.large_string()).dictionary_encode(),
            "l": pa.array([[1, 2]], pa.large_list(pa.field("element", pa.int32()))),
        }
    )
    out = conform(batch, SCHEMA)
    assert out.column("s").to_pylist() == ["x"] and out.column("l").to_pylist() == [[1, 2]]
    assert out.schema == SCHEMA


def test_transport_encodings_convert_back_exactly() -> None:
    ny = pa.array([dt.datetime(2026, 1, 1, 5)], pa.timestamp("us", "America/New_York"))
    batch = pa.record_batch(
        {"k": [1], "u": pa.array([7], pa.int64()), "ts": ny, "t": pa.array([3_600_000_001])}
    )
    out = conform(batch, SCHEMA, encoded=_spark)
    assert out.column("u").to_pylist() == [7]
    assert out.column("t").to_pylist() == [dt.time(1, 0, 0, 1)]
    assert out.column("ts").to_pylist() == ny.to_pylist()  # the same instant
    with pytest.raises(SchemaMismatchError, match="'u'"):  # does not fit uint32
        conform(pa.record_batch({"k": [1], "u": pa.array([-1])}), SCHEMA, encoded=_spark)
    # an encoding is the only other type accepted: a string for uint32 stays refused
    assert not holds(pa.utf8(), SCHEMA.field("u"), _spark)


def test_check_schema_alone() -> None:
    check_schema(pa.schema([("k", pa.int64()), ("s", pa.large_string())]), SCHEMA)
    with pytest.raises(SchemaMismatchError, match="'zz' is not in the namespace schema"):
        check_schema(pa.schema([("k", pa.int64()), ("zz", pa.int64())]), SCHEMA, source="job")


def test_struct_with_other_child_names_is_refused_not_nulled(tmp_path: object) -> None:
    """Before schema_rule, a struct whose child is named otherwise was cast by name: all NULL."""
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    schema = pa.schema([pa.field("k", pa.int64()), pa.field("st", pa.struct([("a", pa.int32())]))])
    ns = PartitionedNamespace.create(f"{tmp_path}/ns", schema, "bucket(2, k)")
    other = pa.array([{"b": 1}], pa.struct([("b", pa.int32())]))
    with pytest.raises(SchemaMismatchError, match="'st'"):
        ns.append(pa.table({"k": [1], "st": other}))
    assert ns.count_rows() == 0


def test_map_columns_in_another_representation_are_written(tmp_path: object) -> None:
    """A map column with large-string keys and values is written into a ``map<string,
    string>`` namespace column as a large-string column is (it raised pyarrow's TypeError
    'Map key field should be non-nullable' from the representation check)."""
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    attrs = pa.map_(pa.string(), pa.string())
    schema = pa.schema([pa.field("k", pa.int64()), pa.field("m", attrs)])
    ns = PartitionedNamespace.create(f"{tmp_path}/ns", schema, "bucket(2, k)")
    ns.append(pa.table({"k": [1], "m": pa.array([[("a", "1")]], attrs)}))
    large = pa.map_(pa.large_string(), pa.large_string())
    ns.append(pa.table({"k": [2, 3], "m": pa.array([[("b", "2"), ("c", "3")], None], large)}))
    got = ns.to_table().sort_by("k")
    assert got.schema.field("m").type == attrs
    assert got.column("m").to_pylist() == [[("a", "1")], [("b", "2"), ("c", "3")], None]
    # a map of other values stays refused, naming the column
    ints = pa.array([[("d", 4)]], pa.map_(pa.string(), pa.int64()))
    with pytest.raises(SchemaMismatchError, match="'m'"):
        ns.append(pa.table({"k": [4], "m": ints}))
    assert ns.count_rows() == 3


def test_map_types_compare_by_shape() -> None:
    """Map children named otherwise are the same stored type; keys stay non-nullable."""
    from lance_sql.tables.namespace.field_map import same_type, shape

    named = pa.map_(pa.field("k", pa.string(), False), pa.field("v", pa.int32()))
    assert same_type(named, pa.map_(pa.string(), pa.int32()))
    assert not same_type(named, pa.map_(pa.string(), pa.int64()))
    assert not shape(named).key_field.nullable
    assert holds(named, pa.field("m", pa.map_(pa.string(), pa.int32())))
