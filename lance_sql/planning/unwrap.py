"""Rewrite a predicate on ``date_part('year', c)`` into the equivalent range on ``c``.

``year(d) = 2025`` says nothing to a spec partitioned by ``identity(d)`` or
``truncate`` until it is read as ``d >= DATE '2025-01-01' AND d < DATE
'2026-01-01'``. The rewrite is exact for dates and naive timestamps (calendar
years start at fixed instants); for zoned timestamps a year starts at a local
midnight whose instant depends on the zone's rules, so they are left alone.
The projector uses the rewrite *in addition to* the term itself (inclusive:
AND of both; strict: OR of both), so nothing is lost where it does not apply.
"""

from __future__ import annotations

import datetime

import pyarrow as pa

from lance_sql.spec.literals import PER_SECOND, int_range
from lance_sql.spec.predicates import (
    Column,
    Compare,
    InList,
    IsNull,
    Leaf,
    Literal,
    Predicate,
    TransformTerm,
    and_,
    or_,
)
from lance_sql.spec.transforms.time_fields import YEAR


def _year_start(year: int, t: pa.DataType) -> Literal | None:
    """The first value of calendar ``year`` in ``t``'s storage units, if representable."""
    if not 1 <= year <= 9999:
        return None
    days = (datetime.date(year, 1, 1) - datetime.date(1970, 1, 1)).days
    if pa.types.is_date32(t):
        return Literal(days, t)
    value = days * 86_400 * PER_SECOND[t.unit]
    lo, hi = int_range(pa.int64())
    if not lo <= value <= hi:
        return None
    return Literal(value, t)


def year_term_as_range(leaf: Leaf) -> Predicate | None:
    """The range form of a leaf on ``date_part('year', c)``, or None where not exact."""
    term = getattr(leaf, "term", None)
    if not (isinstance(term, TransformTerm) and term.transform == YEAR):
        return None
    col: Column = term.column
    t = col.type
    if t is None or not (pa.types.is_date32(t) or (pa.types.is_timestamp(t) and t.tz is None)):
        return None
    if isinstance(leaf, IsNull):
        return IsNull(col, leaf.negated)
    if isinstance(leaf, InList):
        parts = [_compare(col, "!=" if leaf.negated else "=", int(v.value)) for v in leaf.values]
        if any(p is None for p in parts):
            return None
        return and_(*parts) if leaf.negated else or_(*parts)
    if isinstance(leaf, Compare):
        return _compare(col, leaf.op, int(leaf.literal.value))
    return None


def _compare(col: Column, op: str, year: int) -> Predicate | None:
    start, end = _year_start(year, col.type), _year_start(year + 1, col.type)
    if start is None or end is None:
        return None
    if op == "=":
        return and_(Compare(col, ">=", start), Compare(col, "<", end))
    if op == "!=":
        return or_(Compare(col, "<", start), Compare(col, ">=", end))
    if op == "<":
        return Compare(col, "<", start)
    if op == "<=":
        return Compare(col, "<", end)
    if op == ">":
        return Compare(col, ">=", end)
    return Compare(col, ">=", start)
