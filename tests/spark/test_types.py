"""Arrow -> Spark type mapping: a namespace with many types read through ``lance_ns``.

Values must equal lance_sql's own read of the same namespace (after the
documented mappings: unsigned -> wider signed / DECIMAL(20,0), time -> BIGINT
microseconds, nanoseconds truncated to microseconds).
"""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

import pyarrow as pa
import pytest

from lance_sql.errors import UnsupportedFeatureError
from lance_sql.tables.namespace.namespace import PartitionedNamespace

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
N = 6
D = decimal.Decimal

COLUMNS: dict[str, tuple[pa.DataType, list[Any]]] = {
    "k": (pa.int64(), list(range(N))),
    "i8": (pa.int8(), [-128, 127, None, 0, 1, -1]),
    "i16": (pa.int16(), [-32768, 32767, None, 0, 1, -1]),
    "i32": (pa.int32(), [-(2**31), 2**31 - 1, None, 0, 1, -1]),
    "u8": (pa.uint8(), [0, 255, None, 1, 2, 3]),
    "u16": (pa.uint16(), [0, 65535, None, 1, 2, 3]),
    "u32": (pa.uint32(), [0, 2**32 - 1, None, 1, 2, 3]),
    "u64": (pa.uint64(), [0, 2**64 - 1, None, 1, 2, 3]),
    "f32": (pa.float32(), [1.5, -2.25, None, 0.0, float("inf"), 3.0]),
    "f64": (pa.float64(), [1.5, -2.25, None, -0.0, 1e300, 3.0]),
    "dec": (pa.decimal128(10, 2), [D("1.25"), D("-99999999.99"), None, D(0), D("3.10"), D("0.01")]),
    "b": (pa.bool_(), [True, False, None, True, False, True]),
    "s": (pa.string(), ["a", "", None, "ü", "x" * 50, "z"]),
    "ls": (pa.large_string(), ["a", "", None, "ü", "y", "z"]),
    "bin": (pa.binary(), [b"\x00\x01", b"", None, b"a", b"b", b"c"]),
    "lbin": (pa.large_binary(), [b"\x00", b"", None, b"a", b"b", b"c"]),
    "d": (
        pa.date32(),
        [
            dt.date(1970, 1, 1),
            dt.date(2025, 12, 10),
            None,
            dt.date(1, 1, 1),
            dt.date(9999, 12, 31),
            dt.date(2000, 2, 29),
        ],
    ),
    "ts": (
        pa.timestamp("us"),
        [
            dt.datetime(2025, 1, 1, 12, 30),
            dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
            None,
            dt.datetime(2000, 1, 1),
            dt.datetime(2025, 3, 30, 2, 30),
            dt.datetime(2025, 1, 1),
        ],
    ),
    "tstz": (
        pa.timestamp("us", "UTC"),
        [
            dt.datetime(2025, 1, 1, 12, 30, tzinfo=UTC),
            dt.datetime(1969, 12, 31, 23, tzinfo=UTC),
            None,
            dt.datetime(2000, 1, 1, tzinfo=UTC),
            dt.datetime(2025, 3, 30, 1, 30, tzinfo=UTC),
            dt.datetime(2025, 1, 1, tzinfo=UTC),
        ],
    ),
    "tsns": (
        pa.timestamp("ns", "Europe/Paris"),
        [1_700_000_000_123_456_789, 0, None, -1_000, 946_684_800_000_000_000, 1],
    ),
    "t": (pa.time64("us"), [0, 86_399_999_999, None, 43_200_000_000, 3_723_000_000, 1]),
    "tns": (pa.time64("ns"), [0, 86_399_999_999_999, None, 1_999, 3_723_000_000_500, 1]),
    "dur": (pa.duration("us"), [0, 1, None, -5, 10**12, 7]),
    "lst": (pa.list_(pa.int32()), [[1, 2], [], None, [None, 3], [4], [5, 6, 7]]),
    "llst": (pa.large_list(pa.large_string()), [["a"], [], None, [None, "b"], ["c"], ["d"]]),
    "st": (
        pa.struct([("a", pa.int32()), ("b", pa.large_string())]),
        [
            {"a": 1, "b": "x"},
            {"a": None, "b": None},
            None,
            {"a": 3, "b": "z"},
            {"a": 4, "b": "w"},
            {"a": 5, "b": "v"},
        ],
    ),
}


def _expected(value: Any, t: pa.DataType) -> Any:
    """lance_sql's value as Spark returns it (the documented mappings)."""
    if value is None:
        return None
    if pa.types.is_uint64(t):
        return D(value)
    if pa.types.is_time(t):
        us = value.hour * 3_600_000_000 + value.minute * 60_000_000
        return us + value.second * 1_000_000 + value.microsecond
    if pa.types.is_large_list(t):
        return list(value)
    if pa.types.is_struct(t):
        return dict(value)
    return value


def _actual(value: Any) -> Any:
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(UTC)
    return value


def test_wide_types_equal_lance_sql_read(spark: Any, tmp_path: Any) -> None:
    schema = pa.schema([pa.field(n, t, nullable=n != "k") for n, (t, _) in COLUMNS.items()])
    data = pa.table({n: pa.array(v, t) for n, (t, v) in COLUMNS.items()}, schema=schema)
    root = str(tmp_path / "wide")
    ns = PartitionedNamespace.create(
        root, schema, [{"source": "k", "transform": "bucket", "num_buckets": 2}]
    )
    ns.append(data)
    ours = PartitionedNamespace.open(root).to_table().sort_by("k")
    df = spark.read.format("lance_ns").load(root)
    assert df.columns == schema.names
    types = dict(df.dtypes)
    assert types["u8"] == "smallint" and types["u32"] == "bigint"
    assert types["u64"] == "decimal(20,0)" and types["ts"] == "timestamp_ntz"
    assert types["tstz"] == "timestamp" and types["t"] == "bigint"
    table = df.toArrow().sort_by("k")  # tz-aware timestamps, independent of local time
    rows = table.to_pylist()
    # a pushed filter works with every one of these types in the schema
    assert [r.k for r in df.filter("k = 3 and u8 >= 1").collect()] == [3]
    assert len(rows) == N
    for name in schema.names:
        t = schema.field(name).type
        want = [_expected(v, t) for v in ours.column(name).to_pylist()]
        got = [_actual(r[name]) for r in rows]
        if name in ("tsns", "tns"):  # nanoseconds are truncated to Spark's microseconds
            want = [None if v is None else v // 1000 for v in _ints(data.column(name))]
        if name == "tsns":
            got = [None if v is None else _micros(v) for v in got]
        assert got == want, name


def _ints(col: Any) -> list[Any]:
    return col.cast(pa.int64()).to_pylist()


def _micros(value: dt.datetime) -> int:
    delta = value - dt.datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


@pytest.mark.parametrize(
    "dtype",
    [pa.decimal256(60, 2), pa.month_day_nano_interval(), pa.list_(pa.time64("ns"))],
    ids=["decimal256", "interval", "nested-time-ns"],
)
def test_unsupported_type_names_the_column(dtype: pa.DataType) -> None:
    from lance_sql.engines.spark.types import spark_arrow_schema

    schema = pa.schema([pa.field("k", pa.int64()), pa.field("bad_col", dtype)])
    with pytest.raises(UnsupportedFeatureError, match="bad_col"):
        spark_arrow_schema(schema)


def test_cast_of_types_namespaces_rarely_hold() -> None:
    """Types pylance rarely writes, cast in-process to the exact schema Spark checks."""
    from lance_sql.engines.spark.types import spark_struct, spark_target_schema, to_spark_batch

    batch = pa.record_batch(
        {
            "f16": pa.array([1.5, None], pa.float16()),
            "d64": pa.array([86_400_000 * 3, None], pa.date64()),
            "t32s": pa.array([61, None], pa.time32("s")),
            "t32ms": pa.array([1_500, None], pa.time32("ms")),
            "dec256": pa.array([D("12.50"), None], pa.decimal256(20, 2)),
            "fsb": pa.array([b"ab", None], pa.binary(2)),
            "durns": pa.array([1_999, None], pa.duration("ns")),
            "dict": pa.array(["x", None]).dictionary_encode(),
            "fsl": pa.array([[1, 2], None], pa.list_(pa.int16(), 2)),
        }
    )
    target = spark_target_schema(spark_struct(batch.schema))
    out = to_spark_batch(batch, target)
    assert out.schema.equals(target)
    assert out.to_pydict() == {
        "f16": [1.5, None],
        "d64": [dt.date(1970, 1, 4), None],
        "t32s": [61_000_000, None],
        "t32ms": [1_500_000, None],
        "dec256": [D("12.50"), None],
        "fsb": [b"ab", None],
        "durns": [dt.timedelta(microseconds=1), None],
        "dict": ["x", None],
        "fsl": [[1, 2], None],
    }


def test_value_that_does_not_fit_a_user_type_names_the_column() -> None:
    from lance_sql.engines.spark.types import to_spark_batch
    from lance_sql.errors import SchemaMismatchError

    batch = pa.record_batch({"big": pa.array([2**40], pa.int64())})
    with pytest.raises(SchemaMismatchError, match="'big'"):
        to_spark_batch(batch, pa.schema([pa.field("big", pa.int32())]))
