"""Exact coercion of a comparison's literal to the type of the term it is compared with.

Pruning is only as correct as this step: a literal rounded the wrong way prunes
partitions that hold matching rows. So each literal is converted exactly (an integer
or a rational) and what cannot be decided exactly becomes
:class:`~.predicates.Unsupported`. The DataFusion coercion rules mirrored here are
listed in ``docs/pruning.md`` (Literal coercion).
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
from fractions import Fraction
from functools import lru_cache

import pyarrow as pa

from lance_sql.errors import PlanningError
from lance_sql.spec.arrow_types import PER_SECOND, datafusion_type_name
from lance_sql.spec.predicates import (
    FALSE,
    Compare,
    InList,
    IsNull,
    Literal,
    Predicate,
    Term,
    Unsupported,
    quote_str,
)
from udfs.sql_engine import sql_engine

_ISO_DATE = re.compile(r"'[0-9]{4}-[0-9]{2}-[0-9]{2}'")
_EPOCH_DATE = datetime.date(1970, 1, 1)


@lru_cache(maxsize=8192)
def datafusion_cast(sql_value: str, target: pa.DataType) -> int | None:
    """Cast a SQL literal to a temporal ``target`` with DataFusion; return the storage int.

    Raises :class:`PlanningError` naming the literal when DataFusion cannot cast it.
    """
    if pa.types.is_date32(target) and _ISO_DATE.fullmatch(sql_value):
        # 'YYYY-MM-DD', DataFusion's own date form: the same days without importing
        # DataFusion (~55 MB in a Spark planning worker); anything else goes to it
        try:
            return (datetime.date.fromisoformat(sql_value[1:-1]) - _EPOCH_DATE).days
        except ValueError:
            pass  # e.g. '2025-13-45': DataFusion's error names the literal
    query = f"SELECT arrow_cast({sql_value}, '{datafusion_type_name(target)}') AS v"
    try:
        arr = sql_engine().query({}, query).column(0)
    except Exception as exc:  # DataFusion raises plain Exceptions
        raise PlanningError(f"cannot cast literal {sql_value} to {target}: {exc}") from exc
    storage = pa.int32() if pa.types.is_date32(target) else pa.int64()
    value = arr.cast(storage)[0].as_py()
    return value


def _float_sql(value: float, ltype: pa.DataType) -> str:
    """A SQL expression DataFusion reads as exactly ``value`` of float type ``ltype``."""
    if math.isnan(value) or math.isinf(value):
        raise _Undecidable
    text = repr(float(value))
    if pa.types.is_float32(ltype):
        return f"arrow_cast({text}, 'Float32')"
    return f"arrow_cast({text}, 'Float64')"


def int_range(t: pa.DataType) -> tuple[int, int]:
    """The values an integer type holds: (min, max)."""
    if pa.types.is_signed_integer(t):
        return -(1 << (t.bit_width - 1)), (1 << (t.bit_width - 1)) - 1
    return 0, (1 << t.bit_width) - 1


def storage_domain(t: pa.DataType) -> tuple[int, int] | None:
    """The storage-integer range of an integer-like type, else None."""
    if pa.types.is_integer(t):
        return int_range(t)
    if pa.types.is_decimal(t):
        top = 10**t.precision - 1
        return -top, top
    if pa.types.is_date32(t):
        return int_range(pa.int32())
    if pa.types.is_timestamp(t):
        return int_range(pa.int64())
    return None


class _Undecidable(Exception):
    """The literal's exact value in the term's domain cannot be determined."""


def _number(lit: Literal) -> Fraction:
    """A numeric literal as an exact Fraction (raises _Undecidable if not numeric)."""
    v = lit.value
    if isinstance(v, bool) or v is None:
        raise _Undecidable
    if isinstance(v, int):
        return Fraction(v)
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            raise _Undecidable
        return Fraction(v)
    if isinstance(v, decimal.Decimal):
        if not v.is_finite():
            raise _Undecidable
        return Fraction(v)
    raise _Undecidable


def _storage_value(lit: Literal, target: pa.DataType) -> Fraction:
    """The exact value of ``lit`` in ``target``'s storage units."""
    ltype = lit.type
    text = lit.text
    if pa.types.is_integer(target) or pa.types.is_decimal(target):
        scale = target.scale if pa.types.is_decimal(target) else 0
        if text is None and (pa.types.is_string(ltype) or pa.types.is_large_string(ltype)):
            raw = str(lit.value).strip()
            try:
                q = (
                    Fraction(int(raw))
                    if pa.types.is_integer(target)
                    else Fraction(decimal.Decimal(raw))
                )
            except (ValueError, decimal.InvalidOperation) as exc:
                raise PlanningError(f"cannot cast string literal {raw!r} to {target}") from exc
            if pa.types.is_decimal(target) and (q * 10**scale).denominator != 1:
                # DataFusion casts the string to the column's type, rounding it
                return datafusion_comparison_value(target, quote_str(raw))
            return q * 10**scale
        if text is not None or not (
            pa.types.is_integer(ltype) or pa.types.is_floating(ltype) or pa.types.is_decimal(ltype)
        ):
            raise _Undecidable
        q = _number(lit)
        if isinstance(lit.value, float) or pa.types.is_floating(ltype):
            if pa.types.is_decimal(target):
                # DataFusion casts the float to a decimal (Decimal(30,15) for a
                # float64 against decimal(10,2)), rounding it there, and compares
                # decimals: ask DataFusion for that rounded value.
                return datafusion_comparison_value(target, _float_sql(float(lit.value), ltype))
            # An integer column is widened to float64: exact only while the
            # column's values are exactly representable as float64.
            if pa.types.is_integer(target) and target.bit_width == 64 and abs(q) >= 2**53:
                raise _Undecidable
        return q * 10**scale
    if pa.types.is_date32(target) or pa.types.is_timestamp(target):
        # text and strings: DataFusion's own cast to the column's type decides
        if text is not None:
            return datafusion_comparison_value(target, f"TIMESTAMP {quote_str(text)}")
        if pa.types.is_string(ltype) or pa.types.is_large_string(ltype):
            return datafusion_comparison_value(target, quote_str(str(lit.value)))
    if pa.types.is_date32(target):
        if pa.types.is_date32(ltype):
            return Fraction(int(lit.value))
        if pa.types.is_date64(ltype):
            return Fraction(int(lit.value), 86_400_000)
        if pa.types.is_integer(ltype):
            return Fraction(int(lit.value))
        if pa.types.is_timestamp(ltype) and ltype.tz is None:
            return Fraction(int(lit.value), PER_SECOND[ltype.unit] * 86_400)
        raise _Undecidable
    if pa.types.is_timestamp(target):
        if pa.types.is_date32(ltype):
            return datafusion_comparison_value(target, f"arrow_cast({int(lit.value)}, 'Date32')")
        if pa.types.is_timestamp(ltype):
            if (ltype.tz is None) != (target.tz is None):
                raise _Undecidable  # naive vs zoned instant: no exact common meaning
            return Fraction(int(lit.value) * PER_SECOND[target.unit], PER_SECOND[ltype.unit])
        if pa.types.is_integer(ltype):
            raise PlanningError(
                f"cannot compare timestamp column with integer literal {lit.value}"
                " (DataFusion refuses Timestamp = Int64)"
            )
        raise _Undecidable
    raise _Undecidable


def datafusion_comparison_value(target: pa.DataType, literal_sql: str) -> Fraction:
    """The exact value DataFusion compares a ``target``-typed column with, in its storage units.

    Read from the SQL engine's folded plan of ``c = <literal>`` rather than re-deriving
    DataFusion's special cases. Raises :class:`PlanningError` when DataFusion refuses it.
    """
    value = sql_engine().comparison_value(target, literal_sql)
    if value is None:
        raise _Undecidable
    return value


def decimal_of(unscaled: int, scale: int) -> decimal.Decimal:
    """The decimal whose unscaled integer is ``unscaled``, exactly (``Decimal.scaleb`` in the
    default context rounds to 28 digits; decimal128 holds 38, decimal256 76)."""
    return decimal.Decimal(unscaled).scaleb(-scale, _EXACT)


def unscaled_of(value: decimal.Decimal, scale: int) -> int:
    """``value``'s unscaled integer at ``scale`` (digits beyond it truncated), exactly."""
    return int(decimal.Decimal(value).scaleb(scale, _EXACT))


_EXACT = decimal.Context(prec=100)


def _make_literal(value: int, target: pa.DataType) -> Literal:
    if pa.types.is_decimal(target):
        return Literal(decimal_of(value, target.scale), target)
    return Literal(int(value), target)


def _rational_compare(term: Term, op: str, q: Fraction, target: pa.DataType) -> Predicate:
    """``term op q`` for an integer-valued term with domain ``storage_domain(target)``, exactly."""
    lo, hi = storage_domain(target)  # type: ignore[misc]
    integral = q.denominator == 1
    if op == "=":
        return (
            Compare(term, "=", _make_literal(int(q), target))
            if integral and lo <= q <= hi
            else FALSE
        )
    if op == "!=":
        if integral and lo <= q <= hi:
            return Compare(term, "!=", _make_literal(int(q), target))
        return IsNull(term, negated=True)
    if op in ("<", "<="):
        bound = (math.ceil(q) - 1) if op == "<" else math.floor(q)  # term <= bound
        if bound >= hi:
            return IsNull(term, negated=True)
        if bound < lo:
            return FALSE
        if integral:
            return Compare(term, op, _make_literal(int(q), target))
        return Compare(term, "<=", _make_literal(bound, target))
    bound = (math.floor(q) + 1) if op == ">" else math.ceil(q)  # term >= bound
    if bound <= lo:
        return IsNull(term, negated=True)
    if bound > hi:
        return FALSE
    if integral:
        return Compare(term, op, _make_literal(int(q), target))
    return Compare(term, ">=", _make_literal(bound, target))


def _plain_value(lit: Literal, target: pa.DataType) -> object:
    """The literal as a value of a non-integer-like ``target`` (string, float, bool, binary)."""
    v = lit.value
    if lit.text is not None:
        raise _Undecidable
    ltype = lit.type
    if pa.types.is_string(target) or pa.types.is_large_string(target):
        if pa.types.is_string(ltype) or pa.types.is_large_string(ltype):
            return str(v)
        raise _Undecidable  # DataFusion would cast the string column instead
    if pa.types.is_floating(target):
        if pa.types.is_string(ltype) or pa.types.is_large_string(ltype):
            try:
                f = float(str(v))
            except ValueError as exc:
                raise PlanningError(f"cannot cast string literal {v!r} to {target}") from exc
        else:
            q = _number(lit)
            f = float(q)
            if Fraction(f) != q:
                raise _Undecidable
        if math.isnan(f):
            raise _Undecidable
        if target == pa.float32() and float(pa.scalar(f, pa.float32()).as_py()) != f:
            raise _Undecidable
        return f
    if pa.types.is_boolean(target) and pa.types.is_boolean(ltype):
        return bool(v)
    if (pa.types.is_binary(target) or pa.types.is_large_binary(target)) and isinstance(
        v, (bytes, bytearray)
    ):
        return bytes(v)
    raise _Undecidable


def coerce_compare(term: Term, op: str, lit: Literal, target: pa.DataType) -> Predicate:
    """``term op lit`` with ``lit`` converted exactly to ``target`` (the term's value type)."""
    if lit.is_null:
        return FALSE  # a comparison with NULL is never TRUE
    try:
        if storage_domain(target) is not None:
            return _rational_compare(term, op, _storage_value(lit, target), target)
        return Compare(term, op, Literal(_plain_value(lit, target), target))
    except _Undecidable:
        return Unsupported(
            f"{term.sql()} {op} {lit.sql()} (literal of type {lit.type} not exact as {target})",
            _term_columns(term),
        )


def coerce_in(
    term: Term, values: tuple[Literal, ...], negated: bool, target: pa.DataType
) -> Predicate:
    """``term [NOT] IN (values)`` with each value coerced exactly; unmatchable values dropped.

    DataFusion gives the list one type: with a float among the values, an int64 column
    and every value are compared as float64, so an integer value beyond 2**53 there is
    as undecidable as a float one (``k IN (0.0, -9223372036854775807)`` matches
    ``-9223372036854775808`` too).
    """
    kept: list[Literal] = []
    seen: set[Literal] = set()  # membership in O(1): a 10,000-value IN list took 35 s
    has_null = False
    for lit in _one_list_type(values, target):
        if lit.is_null:
            has_null = True
            continue
        eq = coerce_compare(term, "=", lit, target)
        if eq == FALSE:
            continue  # this value can never equal the term
        if not isinstance(eq, Compare):
            return Unsupported(
                f"{term.sql()} {'NOT ' if negated else ''}IN (...) with literal {lit.sql()}"
                f" not exact as {target}",
                _term_columns(term),
            )
        try:
            new = eq.literal not in seen
            seen.add(eq.literal)
        except TypeError:  # an unhashable value: look among the kept ones
            new = eq.literal not in kept
        if new:
            kept.append(eq.literal)
    if negated and has_null:
        return FALSE  # x NOT IN (..., NULL) is never TRUE
    return in_pred(term, kept, negated)


def in_pred(term: Term, lits: list[Literal], negated: bool = False) -> Predicate:
    """``term [NOT] IN (lits)`` in its simplest form (``=`` / ``!=`` for one value;
    FALSE, or IS NOT NULL when negated, for none)."""
    if not lits:
        return IsNull(term, negated=True) if negated else FALSE
    if len(lits) == 1:
        return Compare(term, "!=" if negated else "=", lits[0])
    return InList(term, tuple(lits), negated)


def _one_list_type(values: tuple[Literal, ...], target: pa.DataType) -> tuple[Literal, ...]:
    """The values as float64 when one is a float and the column a 64-bit integer (as DataFusion)."""
    if not (pa.types.is_integer(target) and target.bit_width == 64) or not any(
        isinstance(v.value, float) or pa.types.is_floating(v.type) for v in values
    ):
        return values
    return tuple(
        Literal(float(v.value), pa.float64())
        if isinstance(v.value, int) and not isinstance(v.value, bool)
        else v
        for v in values
    )


def _term_columns(term: Term) -> tuple[str, ...]:
    cols = getattr(term, "columns", None) or (term,)
    return tuple(c.name for c in cols)


__all__ = [
    "PER_SECOND",
    "coerce_compare",
    "coerce_in",
    "datafusion_cast",
    "datafusion_comparison_value",
    "datafusion_type_name",
    "in_pred",
    "int_range",
]
