"""The comparison the TPC-H tests rely on catches wrong values and accepts equal answers."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pyarrow as pa
from tpch_compare import first_difference, plain_type, unqualified, values_equal


def test_values_equal_by_kind() -> None:
    assert values_equal(Decimal("1.50"), Decimal("1.5"))
    assert not values_equal(Decimal("1.50"), Decimal("1.51"))
    assert values_equal(53, Decimal("53"))
    assert values_equal(Decimal("25.575154"), 25.575154611454693)  # decimal(19, 6) avg vs double
    assert not values_equal(Decimal("25.575154"), 25.5751)
    assert values_equal(18.52242700994809, 18.522427009948093)
    assert not values_equal(18.522427, 18.522437)
    assert values_equal(None, None) and not values_equal(None, 0)
    assert not values_equal("1", 1) and not values_equal(True, 1)
    assert values_equal(datetime.date(1995, 3, 11), datetime.date(1995, 3, 11))


def test_first_difference_respects_order_and_count() -> None:
    a = pa.table({"k": ["x", "y"], "v": [1.0, 2.0]})
    assert first_difference(a, pa.table({"k": ["x", "y"], "w": [1.0, 2.0]})) is None
    assert "row 0" in (first_difference(a, a.take([1, 0])) or "")
    assert "1 rows, want 2" in (first_difference(a.slice(0, 1), a) or "")


def test_names_and_types() -> None:
    assert unqualified("sum(lineitem.l_quantity)") == "sum(l_quantity)"
    assert unqualified("revenue") == "revenue"
    assert unqualified("avg(x) * 1.5") == "avg(x) * 1.5"
    assert plain_type(pa.string_view()) == pa.string()
    assert plain_type(pa.int32()) == pa.int32()
