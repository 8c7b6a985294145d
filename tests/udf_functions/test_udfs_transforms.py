"""Transforms equal DataFusion 55 evaluating the spec's derived expressions (NOTES 2.2)."""

from __future__ import annotations

import datetime
import decimal

import datafusion
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import udfs

FAST = settings(max_examples=40, deadline=None)
TIMEZONES = [None, "UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "+05:30"]


def datafusion_eval(expression: str, column: pa.Array) -> list:
    """``expression`` over ``col0`` evaluated by a plain DataFusion 55 SessionContext."""
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("t", [[pa.record_batch({"col0": column})]])
    return ctx.sql(f"SELECT {expression} AS v FROM t").to_pydict()["v"]


def _utc(*args: int) -> datetime.datetime:
    return datetime.datetime(*args, tzinfo=datetime.timezone.utc)


# --- year / month / day / hour ----------------------------------------------------------

DST_CASES = [
    # (instant in UTC, zone, local year, month, day, hour)
    (_utc(2025, 3, 9, 6, 30), "America/New_York", 2025, 3, 9, 1),  # EST, before the jump
    (_utc(2025, 3, 9, 7, 30), "America/New_York", 2025, 3, 9, 3),  # EDT, 02:xx skipped
    (_utc(2025, 11, 2, 5, 30), "America/New_York", 2025, 11, 2, 1),  # first 01:30 (EDT)
    (_utc(2025, 11, 2, 6, 30), "America/New_York", 2025, 11, 2, 1),  # second 01:30 (EST)
    (_utc(2025, 1, 1, 3, 0), "America/New_York", 2024, 12, 31, 22),  # local date is a year back
    (_utc(2025, 3, 30, 0, 30), "Europe/Berlin", 2025, 3, 30, 1),  # CET
    (_utc(2025, 3, 30, 1, 30), "Europe/Berlin", 2025, 3, 30, 3),  # CEST, 02:xx skipped
    (_utc(2025, 10, 26, 0, 30), "Europe/Berlin", 2025, 10, 26, 2),  # first 02:30 (CEST)
    (_utc(2025, 10, 26, 1, 30), "Europe/Berlin", 2025, 10, 26, 2),  # second 02:30 (CET)
    (_utc(2024, 12, 31, 23, 30), "Europe/Berlin", 2025, 1, 1, 0),  # local date a year ahead
    (_utc(1969, 12, 31, 23, 59), None, 1969, 12, 31, 23),  # before the epoch, no zone
    (_utc(1900, 2, 28, 12, 0), "UTC", 1900, 2, 28, 12),
]


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
@pytest.mark.parametrize(("instant", "zone", "y", "m", "d", "h"), DST_CASES)
def test_time_zone_cases_are_local_time(
    unit: str, instant: datetime.datetime, zone: str | None, y: int, m: int, d: int, h: int
) -> None:
    arr = pa.array([instant], pa.timestamp(unit, "UTC")).cast(pa.timestamp(unit, zone))
    if zone is None:
        arr = pa.array([instant.replace(tzinfo=None)], pa.timestamp(unit))
    got = [f(arr).to_pylist()[0] for f in (udfs.year, udfs.month, udfs.day, udfs.hour)]
    assert got == [y, m, d, h]
    for name, expected in zip(("year", "month", "day", "hour"), got, strict=True):
        assert datafusion_eval(f"date_part('{name}', col0)", arr) == [expected]
    assert udfs.year(arr).type == pa.int32()


def test_dates_and_date64() -> None:
    dates = pa.array([datetime.date(1969, 12, 31), datetime.date(1, 1, 1), None])
    assert udfs.year(dates).to_pylist() == [1969, 1, None]
    assert udfs.month(dates).to_pylist() == [12, 1, None]
    assert udfs.day(dates.cast(pa.date64())).to_pylist() == [31, 1, None]
    assert udfs.hour(dates).to_pylist() == [0, 0, None]
    for name in ("year", "month", "day", "hour"):
        for arr in (dates, dates.cast(pa.date64())):
            expected = datafusion_eval(f"date_part('{name}', col0)", arr)
            assert getattr(udfs, name)(arr).to_pylist() == expected


def test_hour_of_time_values() -> None:
    times = pa.array([0, 5 * 3_600_000_000 + 1, None], pa.int64()).cast(pa.time64("us"))
    assert udfs.hour(times).to_pylist() == [0, 5, None]
    assert datafusion_eval("date_part('hour', col0)", times) == [0, 5, None]


@st.composite
def timestamps(draw: st.DrawFn) -> pa.Array:
    unit = draw(st.sampled_from(["s", "ms", "us", "ns"]))
    zone = draw(st.sampled_from(TIMEZONES))
    per_second = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[unit]
    lo, hi = (-2_000_000_000, 4_000_000_000) if unit == "ns" else (-60_000_000_000, 200_000_000_000)
    seconds = st.integers(lo, hi)
    values = draw(st.lists(st.one_of(st.none(), seconds), max_size=20))
    sub = draw(st.integers(0, per_second - 1))
    raw = [None if v is None else v * per_second + sub for v in values]
    return pa.array(raw, pa.int64()).cast(pa.timestamp(unit, zone))


@FAST
@given(timestamps(), st.sampled_from(["year", "month", "day", "hour"]))
def test_property_date_parts_equal_datafusion(arr: pa.Array, part: str) -> None:
    got = getattr(udfs, part)(arr)
    assert got.type == pa.int32()
    assert got.to_pylist() == datafusion_eval(f"date_part('{part}', col0)", arr)


@FAST
@given(
    st.lists(st.one_of(st.none(), st.integers(-719_162, 2_932_896)), max_size=20),
    st.sampled_from(["year", "month", "day", "hour"]),
    st.booleans(),
)
def test_property_dates_equal_datafusion(days: list, part: str, as_date64: bool) -> None:
    arr = pa.array(days, pa.int32()).cast(pa.date32())
    if as_date64:
        arr = arr.cast(pa.date64())
    got = getattr(udfs, part)(arr).to_pylist()
    assert got == datafusion_eval(f"date_part('{part}', col0)", arr)


def test_date_parts_refuse_other_types() -> None:
    with pytest.raises(udfs.UnsupportedTypeError, match=r"year: .*int64"):
        udfs.year(pa.array([1]))
    with pytest.raises(udfs.UnsupportedTypeError, match=r"month: .*time64"):
        udfs.month(pa.array([1], pa.int64()).cast(pa.time64("us")))


def test_date_parts_of_chunked_and_null_type() -> None:
    chunked = pa.chunked_array([[datetime.date(2020, 5, 1)], [None]])
    result = udfs.month(chunked)
    assert isinstance(result, pa.ChunkedArray) and result.to_pylist() == [5, None]
    assert udfs.year(pa.nulls(2)).to_pylist() == [None, None]


# --- truncate -------------------------------------------------------------------------


def test_truncate_numbers_sign_of_dividend() -> None:
    ints = pa.array([-7, 7, -5, 0, None, -10], pa.int32())
    assert udfs.truncate(ints, 5).to_pylist() == [-5, 5, -5, 0, None, -10]
    assert udfs.truncate(ints, 5).type == pa.int32()
    assert datafusion_eval("col0 - (col0 % 5)", ints) == [-5, 5, -5, 0, None, -10]
    assert udfs.truncate(pa.array([-7.5, 7.5], pa.float64()), 5).to_pylist() == [-5.0, 5.0]
    big = pa.array([2**64 - 1, 12], pa.uint64())
    assert udfs.truncate(big, 10).to_pylist() == [2**64 - 6, 10]
    assert udfs.truncate(pa.array([-128, 127], pa.int8()), 1000).to_pylist() == [0, 0]


def test_truncate_strings_by_characters_binaries_by_bytes() -> None:
    text = pa.array(["héllo", "日本語テキスト", "", None, "ab"])
    expected = ["hé", "日本", "", None, "ab"]
    for t in (pa.string(), pa.large_string(), pa.string_view()):
        got = udfs.truncate(text.cast(t), 2)
        assert got.type == t
        assert got.to_pylist() == expected
    assert datafusion_eval("left(col0, 2)", text) == expected
    binary = pa.array([b"\xc3\xa9abc", b"", None])
    for t in (pa.binary(), pa.large_binary(), pa.binary_view()):
        got = udfs.truncate(binary.cast(t), 1)
        assert got.type == t and got.to_pylist() == [b"\xc3", b"", None]


def test_truncate_decimals_truncate_the_decimal_value() -> None:
    # The spec's col0 - (col0 % W) on the decimal value, as DataFusion 55 evaluates it.
    values = [decimal.Decimal(v) for v in ("12.34", "-12.34", "0.04", "-0.04", "1.25")] + [None]
    for t in (pa.decimal128(10, 2), pa.decimal256(40, 2)):
        got = udfs.truncate(pa.array(values, t), 5)
        assert got.type == t
        assert got.to_pylist() == [
            decimal.Decimal("10.00"),
            decimal.Decimal("-10.00"),
            decimal.Decimal("0.00"),
            decimal.Decimal("0.00"),
            decimal.Decimal("0.00"),
            None,
        ]
    one_25 = pa.array([decimal.Decimal("1.25")], pa.decimal128(10, 2))
    assert udfs.truncate(one_25, 100).to_pylist() == [decimal.Decimal("0.00")]


@FAST
@given(
    st.lists(st.one_of(st.none(), st.integers(-(10**37) + 1, 10**37 - 1)), max_size=20),
    st.integers(1, 2**40),
    st.sampled_from([pa.decimal128(38, 3), pa.decimal256(60, 0)]),
)
def test_property_decimal_truncate_matches_python(
    unscaled: list, width: int, t: pa.DataType
) -> None:
    exact = decimal.Context(prec=200)
    arr = pa.array(
        [None if u is None else decimal.Decimal(u).scaleb(-t.scale, exact) for u in unscaled], t
    )

    def trunc(u: int) -> int:
        r = abs(u) % (width * 10**t.scale)  # W in value units
        return u - r if u >= 0 else u + r

    expected = [
        None if u is None else decimal.Decimal(trunc(u)).scaleb(-t.scale, exact) for u in unscaled
    ]
    assert udfs.truncate(arr, width).to_pylist() == expected


@FAST
@given(
    st.sampled_from([pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32()]),
    st.lists(st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)), max_size=20),
    st.integers(1, 10**6),
)
def test_property_truncate_ints_equal_datafusion(t: pa.DataType, values: list, width: int) -> None:
    info = np.iinfo(t.to_pandas_dtype())
    values = [None if v is None else min(max(v, int(info.min)), int(info.max)) for v in values]
    arr = pa.array(values, t)
    got = udfs.truncate(arr, width)
    assert got.type == t
    expected = datafusion_eval(f"col0 - (col0 % {width})", arr)
    assert got.to_pylist() == [None if v is None else int(v) for v in expected]


@FAST
@given(
    st.lists(st.one_of(st.none(), st.floats(-1e12, 1e12)), max_size=20),
    st.integers(1, 1000),
)
def test_property_truncate_floats_equal_datafusion(values: list, width: int) -> None:
    arr = pa.array(values, pa.float64())
    assert udfs.truncate(arr, width).to_pylist() == datafusion_eval(f"col0 - (col0 % {width})", arr)


@FAST
@given(st.lists(st.one_of(st.none(), st.text(max_size=12)), max_size=20), st.integers(1, 8))
def test_property_truncate_strings_equal_datafusion(values: list, width: int) -> None:
    arr = pa.array(values, pa.string())
    assert udfs.truncate(arr, width).to_pylist() == datafusion_eval(f"left(col0, {width})", arr)


def test_truncate_dictionary_keeps_type() -> None:
    arr = pa.array(["hello", "help", None]).dictionary_encode()
    got = udfs.truncate(arr, 3)
    assert got.type == arr.type and got.to_pylist() == ["hel", "hel", None]


def test_truncate_errors() -> None:
    with pytest.raises(udfs.UnsupportedTypeError, match=r"truncate: .*date32"):
        udfs.truncate(pa.array([datetime.date(2020, 1, 1)]), 2)
    with pytest.raises(ValueError, match="truncate: width must be a positive integer, got 0"):
        udfs.truncate(pa.array([1]), 0)
    with pytest.raises(ValueError, match="width must be a positive integer, got True"):
        udfs.truncate(pa.array([1]), True)


# --- bucket / multi_bucket ----------------------------------------------------------------


def test_bucket_of_min_int32_hash_does_not_overflow() -> None:
    # abs() in 64 bits: a hash of -2147483648 is bucket 2147483648 % N
    hashes = pa.array([-(2**31)], pa.int32())
    from udfs.transforms import _bucket_of_hashes

    assert _bucket_of_hashes(hashes, 7).to_pylist() == [2**31 % 7]


def test_bucket_matches_sql_definition() -> None:
    import lance_sql

    values = pa.array([1, 2, 3, -5, None, 2**40], pa.int64())
    ctx = lance_sql.SessionContext()
    ctx.register_record_batches("t", [[pa.record_batch({"col0": values})]])
    sql = "SELECT abs(CAST(murmur3(col0) AS BIGINT)) % 16 AS v FROM t"
    assert udfs.bucket(values, 16).to_pylist() == ctx.sql(sql).to_pydict()["v"]


def test_multi_bucket_null_only_if_all_null() -> None:
    a = pa.array([None, 1, None], pa.int64())
    b = pa.array([None, None, "US"])
    got = udfs.multi_bucket([a, b], 16).to_pylist()
    assert got[0] is None
    assert got[1] == udfs.bucket(pa.array([1]), 16).to_pylist()[0]
    assert got[2] == abs(-629525236) % 16


def test_bucket_errors() -> None:
    with pytest.raises(ValueError, match="bucket: num_buckets must be a positive integer"):
        udfs.bucket(pa.array([1]), -3)
    with pytest.raises(ValueError, match="num_buckets must be at most 2147483647"):
        udfs.bucket(pa.array([1]), 2**31)


# --- apply_transform ----------------------------------------------------------------------


def test_apply_transform_dispatches_each_type() -> None:
    ts = pa.array([_utc(2025, 3, 9, 7, 30)], pa.timestamp("us", "America/New_York"))
    assert udfs.apply_transform({"type": "identity"}, [ts]).equals(ts)
    assert udfs.apply_transform({"type": "year"}, [ts]).to_pylist() == [2025]
    assert udfs.apply_transform({"type": "hour"}, [ts]).to_pylist() == [3]
    ints = pa.array([1, 2, 3, -5])
    assert udfs.apply_transform({"type": "bucket", "num_buckets": 16}, [ints]).to_pylist() == [
        4, 12, 13, 14,
    ]  # fmt: skip
    multi = udfs.apply_transform(
        {"type": "multi_bucket", "num_buckets": 8}, [pa.array(["US"]), pa.array([1], pa.int32())]
    )
    assert multi.to_pylist() == [abs(-1158136343) % 8]
    assert udfs.apply_transform({"type": "truncate", "width": 5}, [pa.array([-7])]).to_pylist() == [
        -5
    ]


def test_apply_transform_accepts_objects_with_attributes() -> None:
    from lance_sql.spec.partition_field import Transform

    got = udfs.apply_transform(Transform("bucket", num_buckets=8), [pa.array([1, 2, 3, -5])])
    assert got.to_pylist() == [4, 4, 5, 6]


def test_apply_transform_errors() -> None:
    with pytest.raises(ValueError, match="unknown transform type 'void'"):
        udfs.apply_transform({"type": "void"}, [pa.array([1])])
    with pytest.raises(ValueError, match="transform year needs exactly one source column, got 2"):
        udfs.apply_transform({"type": "year"}, [pa.array([1]), pa.array([2])])
    with pytest.raises(ValueError, match="multi_bucket needs at least one source column"):
        udfs.apply_transform({"type": "multi_bucket", "num_buckets": 2}, [])
    with pytest.raises(
        ValueError, match="bucket: num_buckets must be a positive integer, got None"
    ):
        udfs.apply_transform({"type": "bucket"}, [pa.array([1])])


def test_derived_expressions() -> None:
    assert udfs.derived_expression({"type": "year"}) == "date_part('year', col0)"
    assert udfs.derived_expression({"type": "bucket", "num_buckets": 4}) == "abs(murmur3(col0)) % 4"
    assert (
        udfs.derived_expression({"type": "multi_bucket", "num_buckets": 4}, 2)
        == "abs(murmur3_multi(col0, col1)) % 4"
    )
