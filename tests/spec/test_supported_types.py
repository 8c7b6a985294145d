"""Which Arrow types bounds, key filters, Arrow joins and regrouping support.

The table was recorded from the five separate checks these features had before
they were decided in one place (``lance_sql.spec.arrow_types``); it must not change.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lance_sql.engines.spark.join_arrow import _common_key_type
from lance_sql.spec.arrow_types import SUPPORTED, scalar_kind, supports
from lance_sql.tables.namespace.bounds import column_bounds, kind_of

# type: (key filter, bounds kind, Arrow join key, fixed width)
TABLE = [
    (pa.int8(), True, "int", True, True),
    (pa.int16(), True, "int", True, True),
    (pa.int32(), True, "int", True, True),
    (pa.int64(), True, "int", True, True),
    (pa.uint8(), True, "int", True, True),
    (pa.uint64(), True, "int", True, True),
    (pa.float16(), False, None, True, True),
    (pa.float32(), False, "float", True, True),
    (pa.float64(), False, "float", True, True),
    (pa.decimal128(10, 2), False, "decimal", True, True),
    (pa.decimal256(40, 2), False, "decimal", True, True),
    (pa.date32(), True, "int", True, True),
    (pa.date64(), False, None, True, True),
    (pa.timestamp("s"), True, "int", True, True),
    (pa.timestamp("ns", "UTC"), True, "int", True, True),
    (pa.time32("s"), False, None, False, True),
    (pa.time64("ns"), False, None, False, True),
    (pa.duration("ms"), False, None, False, True),
    (pa.month_day_nano_interval(), False, None, False, True),
    (pa.string(), True, "string", True, False),
    (pa.large_string(), True, "string", True, False),
    (pa.string_view(), True, "string", False, False),
    (pa.binary(), False, None, True, False),
    (pa.large_binary(), False, None, True, False),
    (pa.binary_view(), False, None, False, False),
    (pa.binary(4), False, None, True, True),
    (pa.bool_(), False, None, True, False),
    (pa.null(), False, None, False, False),
    (pa.list_(pa.int32()), False, None, False, False),
    (pa.struct([("a", pa.int32())]), False, None, False, False),
    (pa.dictionary(pa.int32(), pa.string()), False, None, True, False),
    (pa.map_(pa.string(), pa.int32()), False, None, False, False),
    (pa.large_list(pa.int8()), False, None, False, False),
    (pa.list_(pa.float32(), 4), False, None, False, False),
]


@pytest.mark.parametrize(("t", "key_filter", "bounds", "join_key", "fixed"), TABLE, ids=str)
def test_each_feature_supports_the_types_it_did(
    t: pa.DataType, key_filter: bool, bounds: str | None, join_key: bool, fixed: bool
) -> None:
    assert supports("key_filter", t) is key_filter
    assert kind_of(t) == bounds
    assert supports("bounds", t) is (bounds is not None)
    assert (_common_key_type(t, t) is not None) is join_key  # dictionaries: their values
    assert supports("fixed_width", t) is fixed


def test_every_kind_is_named_and_every_feature_uses_known_kinds() -> None:
    kinds = {scalar_kind(row[0]) for row in TABLE} - {None}
    for feature, supported in SUPPORTED.items():
        assert supported <= kinds, feature
    assert scalar_kind(pa.dictionary(pa.int32(), pa.string())) is None


def test_bounds_are_computed_for_exactly_the_supported_types() -> None:
    for t, _, bounds, _, _ in TABLE:
        if bounds is None:
            continue
        arr = pa.array([None], t)
        assert column_bounds(arr, t) is not None, t
