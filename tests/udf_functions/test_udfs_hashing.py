"""murmur3 / murmur3_multi: NOTES 2.1 vectors, every type, slices, NULLs, chunks, properties."""

from __future__ import annotations

import datetime
import decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from udfs_reference import murmur3_multi_reference, murmur3_reference
from udfs_strategies import arrays, same_length_arrays

import udfs

FAST = settings(max_examples=60, deadline=None)
SLOW = settings(max_examples=2000, deadline=None)


# --- NOTES 2.1 test vectors ---------------------------------------------------------


@pytest.mark.parametrize(
    ("array", "expected"),
    [
        (pa.array([1], pa.int64()), 1392991556),
        (pa.array([1], pa.int32()), 1392991556),
        (pa.array([1], pa.int8()), 1392991556),
        (pa.array([True]), 1392991556),
        (pa.array([-1], pa.int64()), 1651860712),
        (pa.array([34], pa.int32()), 2017239379),
        (pa.array(["US"]), -629525236),
        (pa.array([""]), 0),
        (pa.array(["abc"]), -1277324294),
        (pa.array([b"abc"]), -1277324294),
        (pa.array([1.25]), 824958840),
        (pa.array([1.25], pa.float32()), 824958840),
        (pa.array([0.0]), 1669671676),
        (pa.array([-0.0]), 1669671676),
        (pa.array([datetime.date(2025, 12, 10)]), 591416496),
        (pa.array([20432], pa.int32()).cast(pa.date32()), 591416496),
    ],
)
def test_notes_vectors(array: pa.Array, expected: int) -> None:
    result = udfs.murmur3(array)
    assert result.type == pa.int32()
    assert result.to_pylist() == [expected]


def test_notes_multi_vectors() -> None:
    us = pa.array(["US"])
    assert udfs.murmur3_multi([us, pa.array([1], pa.int32())]).to_pylist() == [-1158136343]
    assert udfs.murmur3_multi([pa.array([1], pa.int64()), us]).to_pylist() == [-1496155531]
    assert udfs.murmur3_multi([pa.array([None], pa.int64()), us]).to_pylist() == [-629525236]
    assert udfs.murmur3_multi([pa.nulls(1), us]).to_pylist() == [-629525236]


def test_notes_bucket_vectors() -> None:
    values = pa.array([1, 2, 3, -5], pa.int64())
    assert udfs.bucket(values, 16).to_pylist() == [4, 12, 13, 14]
    assert udfs.bucket(values, 8).to_pylist() == [4, 4, 5, 6]


# --- every type, explicitly -----------------------------------------------------------


def _every_type() -> list[pa.Array]:
    ts = [0, -1, 1_700_000_123_456, None]
    return [
        pa.array([1, -1, None, 127], pa.int8()),
        pa.array([1, -1, None, 2**15 - 1], pa.int16()),
        pa.array([1, -1, None, 2**31 - 1], pa.int32()),
        pa.array([1, -1, None, -(2**63)], pa.int64()),
        pa.array([1, 0, None, 255], pa.uint8()),
        pa.array([1, 0, None, 2**16 - 1], pa.uint16()),
        pa.array([1, 0, None, 2**32 - 1], pa.uint32()),
        pa.array([1, 0, None, 2**64 - 1], pa.uint64()),
        pa.array([True, False, None, True]),
        pa.array(np.array([1.25, -0.0, np.nan, 65504], np.float16)),
        pa.array([1.25, -0.0, None, float("nan")], pa.float32()),
        pa.array([1.25, float("-inf"), None, float("nan")], pa.float64()),
        pa.array(
            [decimal.Decimal("1.25"), decimal.Decimal("-1.00"), None, decimal.Decimal("0")],
            pa.decimal128(10, 2),
        ),
        pa.array(
            [
                decimal.Decimal("1" * 70),
                decimal.Decimal("-" + "9" * 70),
                None,
                decimal.Decimal(-128),
            ],
            pa.decimal256(76, 0),
        ),
        pa.array([20432, -1, None, 0], pa.int32()).cast(pa.date32()),
        pa.array([86_400_000, -1, None, 1_764_000_000_000], pa.int64()).cast(pa.date64()),
        pa.array([1, 86_399, None, 0], pa.int32()).cast(pa.time32("s")),
        pa.array([1, 86_399_999, None, 0], pa.int32()).cast(pa.time32("ms")),
        pa.array([1, 86_399_999_999, None, 0], pa.int64()).cast(pa.time64("us")),
        pa.array([1, 999, None, 86_399_999_999_999], pa.int64()).cast(pa.time64("ns")),
        *[
            pa.array(ts, pa.int64()).cast(pa.timestamp(unit, tz))
            for unit in ("s", "ms", "us", "ns")
            for tz in (None, "UTC", "America/New_York")
        ],
        *[pa.array(ts, pa.int64()).cast(pa.duration(unit)) for unit in ("s", "ms", "us", "ns")],
        pa.array(["US", "", None, "héllo 日本"], pa.string()),
        pa.array(["US", "", None, "héllo 日本"], pa.large_string()),
        pa.array(["US", "", None, "a string longer than twelve bytes"], pa.string_view()),
        pa.array([b"abc", b"", None, b"\x00\xff"], pa.binary()),
        pa.array([b"abc", b"", None, b"\x00\xff"], pa.large_binary()),
        pa.array([b"abc", b"", None, b"a binary longer than twelve"], pa.binary_view()),
        pa.array([b"abc", b"\x00\x00\x00", None, b"xyz"], pa.binary(3)),
        pa.array(["US", "US", None, "x"]).dictionary_encode(),
        pa.array([1, 1, None, 5], pa.int64()).dictionary_encode(),
    ]


@pytest.mark.parametrize("array", _every_type(), ids=lambda a: str(a.type))
def test_every_type_matches_reference(array: pa.Array) -> None:
    assert udfs.murmur3(array).to_pylist() == murmur3_reference(array)


@pytest.mark.parametrize("array", _every_type(), ids=lambda a: str(a.type))
def test_every_type_sliced(array: pa.Array) -> None:
    padded = pa.concat_arrays([array, array, array])
    for start, length in [(1, 4), (3, 5), (5, 6), (7, 0), (9, 3)]:
        piece = padded.slice(start, length)
        assert piece.offset == start
        assert udfs.murmur3(piece).to_pylist() == murmur3_reference(piece)


def test_promotion_resistance_across_types() -> None:
    values = [0, 1, -1, 127, -128, None]
    expected = udfs.murmur3(pa.array(values, pa.int64())).to_pylist()
    for t in (pa.int8(), pa.int16(), pa.int32()):
        assert udfs.murmur3(pa.array(values, t)).to_pylist() == expected
    floats = [1.25, -0.0, 0.0, None]
    assert (
        udfs.murmur3(pa.array(floats, pa.float32())).to_pylist()
        == udfs.murmur3(pa.array(floats, pa.float64())).to_pylist()
    )
    days = pa.array([20432, -3, None], pa.int32())
    assert (
        udfs.murmur3(days.cast(pa.date32())).to_pylist()
        == udfs.murmur3(days.cast(pa.date32()).cast(pa.date64())).to_pylist()
    )
    micros = pa.array([1_000_000, -1, None], pa.int64()).cast(pa.timestamp("us"))
    assert (
        udfs.murmur3(micros).to_pylist()
        == udfs.murmur3(micros.cast(pa.timestamp("ns"))).to_pylist()
    )


def test_nan_and_negative_zero_are_canonical() -> None:
    bits = np.array([0x7FF8000000000001, 0xFFF8000000000000, 0x7FF0000000000001], np.uint64)
    nans = pa.array(bits.view(np.float64))
    quiet = udfs.murmur3(pa.array([float("nan")])).to_pylist()[0]
    assert udfs.murmur3(nans).to_pylist() == [quiet] * 3


def test_decimal_canonical_bytes_are_minimal_twos_complement() -> None:
    import mmh3

    cases = {0: b"\x00", 127: b"\x7f", 128: b"\x00\x80", -128: b"\x80", -129: b"\xff\x7f"}
    arr = pa.array([decimal.Decimal(v) for v in cases], pa.decimal128(5, 0))
    assert udfs.murmur3(arr).to_pylist() == [mmh3.hash(b) for b in cases.values()]
    # the scale is not part of the bytes: 1.25 (scale 2) hashes as the integer 125
    scaled = pa.array([decimal.Decimal("1.25")], pa.decimal128(5, 2))
    assert udfs.murmur3(scaled).to_pylist() == [mmh3.hash(b"\x7d")]


def test_null_type_and_empty_arrays() -> None:
    assert udfs.murmur3(pa.nulls(3)).to_pylist() == [None] * 3
    assert udfs.murmur3(pa.array([], pa.string())).to_pylist() == []
    assert udfs.murmur3(pa.array([], pa.int64())).type == pa.int32()


def test_dictionary_with_null_indices_and_null_values() -> None:
    dictionary = pa.array(["a", None, "b"])
    indices = pa.array([0, 1, None, 2, 0], pa.int32())
    arr = pa.DictionaryArray.from_arrays(indices, dictionary)
    expected = murmur3_reference(arr)
    assert expected[1] is None and expected[2] is None
    assert udfs.murmur3(arr).to_pylist() == expected
    assert udfs.murmur3(arr.slice(2, 3)).to_pylist() == expected[2:]


def test_chunked_in_chunked_out() -> None:
    chunked = pa.chunked_array([[1, 2], [], [3, None]], pa.int64())
    result = udfs.murmur3(chunked)
    assert isinstance(result, pa.ChunkedArray)
    assert [len(c) for c in result.chunks] == [2, 0, 2]
    assert result.to_pylist() == murmur3_reference(chunked.combine_chunks())


def test_python_values_are_accepted() -> None:
    assert udfs.murmur3([1, None]).to_pylist() == [1392991556, None]
    assert udfs.murmur3(np.array([1], np.int64)).to_pylist() == [1392991556]


def test_multi_mixed_chunking_uses_common_boundaries() -> None:
    a = pa.chunked_array([[1, 2, 3], [4, 5]], pa.int64())
    b = pa.chunked_array([["x"], ["y", None, "z", "w"]])
    c = pa.array([None, 1.5, 2.5, None, 0.0])
    result = udfs.murmur3_multi([a, b, c])
    assert isinstance(result, pa.ChunkedArray)
    assert [len(ch) for ch in result.chunks] == [1, 2, 2]
    expected = murmur3_multi_reference([a.combine_chunks(), b.combine_chunks(), c])
    assert result.to_pylist() == expected
    plain = udfs.murmur3_multi([a.combine_chunks(), b.combine_chunks(), c])
    assert isinstance(plain, pa.Array)
    assert plain.to_pylist() == expected


def test_multi_null_only_when_all_null() -> None:
    a = pa.array([None, 1, None], pa.int64())
    b = pa.array([None, None, "x"])
    assert udfs.murmur3_multi([a, b]).to_pylist() == [
        None,
        udfs.murmur3(pa.array([1])).to_pylist()[0],
        udfs.murmur3(pa.array(["x"])).to_pylist()[0],
    ]


def test_multi_dictionary_column() -> None:
    d = pa.array(["US", None, "FR"]).dictionary_encode()
    n = pa.array([1, 2, None], pa.int32())
    assert udfs.murmur3_multi([d, n]).to_pylist() == murmur3_multi_reference(
        [d.dictionary_decode(), n]
    )


def test_errors_name_function_and_type() -> None:
    with pytest.raises(udfs.UnsupportedTypeError, match=r"murmur3: .*list<item: int64>"):
        udfs.murmur3(pa.array([[1]]))
    with pytest.raises(TypeError, match=r"murmur3: .*struct"):
        udfs.murmur3(pa.chunked_array([pa.array([{"a": 1}])]))
    with pytest.raises(udfs.UnsupportedTypeError, match=r"murmur3: .*dictionary"):
        udfs.murmur3(
            pa.DictionaryArray.from_arrays(pa.array([0], pa.int32()), pa.array([{"a": 1}]))
        )
    with pytest.raises(udfs.UnsupportedTypeError, match=r"murmur3_multi: .*map"):
        udfs.murmur3_multi(
            [pa.array([1]), pa.array([[("k", 1)]], pa.map_(pa.string(), pa.int64()))]
        )
    with pytest.raises(ValueError, match="non-empty"):
        udfs.murmur3_multi([])
    with pytest.raises(ValueError, match="column 1 has 2 values"):
        udfs.murmur3_multi([pa.array([1]), pa.array([1, 2])])


# --- properties -----------------------------------------------------------------------


@FAST
@given(arrays())
def test_property_murmur3_matches_reference(array: pa.Array) -> None:
    assert udfs.murmur3(array).to_pylist() == murmur3_reference(array)


@FAST
@given(same_length_arrays())
def test_property_multi_matches_reference(columns: list[pa.Array]) -> None:
    assert udfs.murmur3_multi(columns).to_pylist() == murmur3_multi_reference(columns)


@FAST
@given(arrays())
def test_property_multi_of_one_is_murmur3(array: pa.Array) -> None:
    assert udfs.murmur3_multi([array]).to_pylist() == udfs.murmur3(array).to_pylist()


@FAST
@given(st.lists(st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)), max_size=50))
def test_property_int32_equals_int64(values: list[int | None]) -> None:
    assert (
        udfs.murmur3(pa.array(values, pa.int32())).to_pylist()
        == udfs.murmur3(pa.array(values, pa.int64())).to_pylist()
    )


@FAST
@given(arrays(), st.integers(1, 2**31 - 1))
def test_property_bucket_in_range(array: pa.Array, n: int) -> None:
    buckets = udfs.bucket(array, n).to_pylist()
    hashes = murmur3_reference(array)
    assert buckets == [None if h is None else abs(h) % n for h in hashes]
    assert all(b is None or 0 <= b < n for b in buckets)


@pytest.mark.slow
@SLOW
@given(arrays(max_size=200))
def test_property_murmur3_matches_reference_slow(array: pa.Array) -> None:
    assert udfs.murmur3(array).to_pylist() == murmur3_reference(array)


@pytest.mark.slow
@SLOW
@given(same_length_arrays(max_columns=6))
def test_property_multi_matches_reference_slow(columns: list[pa.Array]) -> None:
    assert udfs.murmur3_multi(columns).to_pylist() == murmur3_multi_reference(columns)


def test_large_arrays_split_over_threads_hash_the_same() -> None:
    import mmh3

    ints = pa.array(np.arange(-300_000, 400_000), pa.int64()).slice(5)
    got = udfs.murmur3(ints)
    for i in (0, 1, 262_143, 262_144, 350_000, len(ints) - 1):
        v = ints[i].as_py()
        assert got[i].as_py() == mmh3.hash(v.to_bytes(8, "little", signed=True))
    strings = pa.array([str(i) for i in range(600_000)]).slice(7)
    got = udfs.murmur3(strings)
    for i in (0, 299_996, 299_997, len(strings) - 1):
        assert got[i].as_py() == mmh3.hash(strings[i].as_py())


def test_import_needs_neither_datafusion_nor_lance_sql() -> None:
    import subprocess
    import sys

    code = (
        "import sys, udfs, pyarrow as pa; udfs.murmur3(pa.array([1])); "
        "udfs.apply_transform({'type': 'truncate', 'width': 2}, [pa.array(['abc'])]); "
        "print('datafusion' in sys.modules, 'lance_sql' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


@pytest.mark.parametrize(
    "arrow_type",
    [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32()],
)
def test_integer_fast_path_slices_and_nulls(arrow_type: pa.DataType) -> None:
    """The integer fast path (one call per SQL batch) honours offsets and validity."""
    values = [None if i % 5 == 3 else (i * 37) % 100 for i in range(41)]
    arr = pa.array(values, arrow_type)
    for piece in (arr, arr.slice(3), arr.slice(9, 17), arr.slice(41), arr.slice(4, 1)):
        assert udfs.murmur3(piece).to_pylist() == murmur3_reference(piece)
        assert udfs.murmur3(piece).type == pa.int32()


def test_integer_fast_path_edge_buffers() -> None:
    """Empty arrays, all-NULL arrays and uint64 (hashed as its 8 bytes) on the fast path."""
    assert udfs.murmur3(pa.array([], pa.int64())).to_pylist() == []
    assert udfs.murmur3(pa.array([None, None], pa.int32())).to_pylist() == [None, None]
    u64 = pa.array([0, 1, 2**64 - 1, None], pa.uint64()).slice(1)
    assert udfs.murmur3(u64).to_pylist() == murmur3_reference(u64)
    assert udfs.murmur3(pa.array([1], pa.int64())).to_pylist() == [1392991556]


def test_large_int32_arrays_split_over_threads_hash_like_int64() -> None:
    ints = np.arange(-300_000, 400_000, dtype=np.int64)
    got32 = udfs.murmur3(pa.array(ints.astype(np.int32)).slice(3))
    got64 = udfs.murmur3(pa.array(ints).slice(3))
    assert got32.equals(got64)
