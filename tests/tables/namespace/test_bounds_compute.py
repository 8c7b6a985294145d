"""column_bounds of float columns (numpy path) against a plain-Python reference."""

from __future__ import annotations

import math

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lance_sql.tables.namespace.bounds import column_bounds

FLOATS = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from([0.0, -0.0, math.inf, -math.inf, math.nan]),
)


def _reference(values: list[float | None]) -> tuple[float | None, float | None, int, bool]:
    real = [v for v in values if v is not None and not math.isnan(v)]
    nan = any(v is not None and math.isnan(v) for v in values)
    nulls = sum(v is None for v in values)
    if not real:
        return None, None, nulls, nan
    return min(real), max(real), nulls, nan


@settings(max_examples=300, deadline=None)
@given(
    chunks=st.lists(st.lists(FLOATS, max_size=20), min_size=1, max_size=4),
    width=st.sampled_from([pa.float32(), pa.float64()]),
)
def test_float_bounds_match_reference(chunks: list[list[float | None]], width: pa.DataType) -> None:
    arr = pa.chunked_array([pa.array(c, width) for c in chunks], width)
    values = [v for c in arr.chunks for v in c.to_pylist()]
    b = column_bounds(arr, width)
    assert b is not None
    lo, hi, nulls, nan = _reference(values)
    assert (b.nulls, b.nan) == (nulls, nan)
    if lo is None:
        assert b.lo is None and b.hi is None
        return
    assert b.lo == lo and b.hi == hi
    # zeros widened: a zero lower bound is -0.0, a zero upper bound 0.0
    if b.lo == 0.0:
        assert math.copysign(1.0, b.lo) < 0
    if b.hi == 0.0:
        assert math.copysign(1.0, b.hi) > 0
    assert isinstance(b.lo, float) and isinstance(b.hi, float)
    # a plain (unchunked) array gives the same bounds
    assert column_bounds(arr.combine_chunks(), width) == b


def test_float_bounds_sliced_chunk() -> None:
    arr = pa.array([9.0, None, 1.5, math.nan, -2.0, 7.0], pa.float64()).slice(2, 3)
    b = column_bounds(arr, pa.float64())
    assert b is not None
    assert (b.lo, b.hi, b.nulls, b.nan) == (-2.0, 1.5, 0, True)
