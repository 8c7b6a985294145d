"""Skipping partition tables whose column bounds prove a predicate never TRUE for any row.

:func:`compile_skip` turns a prepared predicate into a test of one table's bounds
(min/max, NULL and NaN flags in ``__manifest``), sound under SQL's three-valued logic
and under both float orders the engines use (IEEE ``-0.0 = 0.0`` and total order).
Bounds are used only when they describe exactly the version a row pins (``usable``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa

from lance_sql.spec.predicates import (
    Column,
    Compare,
    Const,
    InList,
    IsNull,
    Literal,
    Predicate,
    StartsWith,
    fold,
)
from lance_sql.tables.dataset_cache import OpenCache
from lance_sql.tables.namespace.bounds import (
    ColumnBounds,
    TableBounds,
    bounds_of_metadata,
    kind_of,
    usable,
)

#: A compiled test: True when the table's rows cannot make the predicate TRUE.
Skip = Callable[[TableBounds], bool]

_ROW_COLUMNS = ("metadata", "read_version", "read_branch", "read_tag", "location")


# ------------------------------------------------------------------ comparisons


def _total_key(v: float) -> tuple[float, float]:
    """Total order of non-NaN floats: IEEE order with -0.0 below 0.0."""
    return (v, math.copysign(1.0, v) if v == 0.0 else 0.0)


def _cmp_false(op: str, lo: Any, hi: Any, lit: Any) -> bool:
    """Whether ``v op lit`` is false for every ``v`` in ``[lo, hi]``."""
    if op == "=":
        return lit < lo or lit > hi
    if op == "<":
        return lo >= lit
    if op == "<=":
        return lo > lit
    if op == ">":
        return hi <= lit
    if op == ">=":
        return hi < lit
    return False


def _literal_value(lit: Literal, col: Column) -> Any:
    """The literal as a value comparable with the column's bounds (None: not comparable)."""
    if lit.text is not None or lit.value is None:
        return None
    ct, lt, v = col.type, lit.type, lit.value
    kind = kind_of(ct)
    if kind == "int":
        if isinstance(v, bool) or not isinstance(v, int):
            return None
        if pa.types.is_integer(ct):
            return v if pa.types.is_integer(lt) else None
        return v if lt.equals(ct) else None  # dates and timestamps: same unit and zone
    if kind == "float":
        if not lt.equals(ct) or isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        f = float(v)
        return None if math.isnan(f) else f
    if kind == "decimal":
        if not lt.equals(ct) or not isinstance(v, Decimal) or not v.is_finite():
            return None
        return v
    if kind == "string":
        ok = pa.types.is_string(lt) or pa.types.is_large_string(lt) or pa.types.is_string_view(lt)
        return v if ok and isinstance(v, str) else None
    return None


def _compare_false(kind: str, op: str, cb: ColumnBounds, lit: Any) -> bool:
    """Whether ``col op lit`` is not TRUE for any row ``cb`` describes."""
    if cb.nan:
        return False
    if cb.lo is None or cb.hi is None:
        return True  # only NULLs: every comparison is NULL
    if kind == "float":
        return _cmp_false(op, cb.lo, cb.hi, lit) and _cmp_false(
            op, _total_key(cb.lo), _total_key(cb.hi), _total_key(lit)
        )
    return _cmp_false(op, cb.lo, cb.hi, lit)


# -------------------------------------------------------------------- compiling


def compile_skip(pred: Predicate) -> Skip | None:
    """The skip test of ``pred``, or None when it can never skip anything."""
    return fold(pred, _compile_leaf, skip_if_any, skip_if_all)


@dataclass(frozen=True)
class Node:
    """AND or OR of skip tests (of bounds here, of key filters in :mod:`.key_filter_skipping`)."""

    op: str  # "and" / "or"
    children: tuple[Any, ...]

    def __call__(self, b: TableBounds) -> bool:
        tests = (test(b) for test in self.children)
        return any(tests) if self.op == "and" else all(tests)


def skip_if_any(*parts: Any) -> Any:
    """AND: skipped when any child cannot be TRUE."""
    tests = tuple(p for p in parts if p is not None)
    if len(tests) <= 1:
        return tests[0] if tests else None
    return Node("and", tests)


def skip_if_all(*parts: Any) -> Any:
    """OR: skipped when no child can be TRUE."""
    return None if any(p is None for p in parts) else Node("or", parts)


def _compile_leaf(pred: Predicate) -> Skip | None:
    if isinstance(pred, Const):
        return None if pred.value else lambda _: True
    col = getattr(pred, "term", None)
    if not isinstance(col, Column) or col.field_id is None or col.type is None:
        return None  # NOT, Unsupported, transform terms: maybe
    kind = kind_of(col.type)
    empty = None if kind is None else _bounds_test(pred, col, kind)
    if empty is None:
        return None
    fid, tname = col.field_id, str(col.type)

    def skip(b: TableBounds) -> bool:
        cb = b.columns.get(fid)
        return cb is not None and cb.type == tname and empty(cb)

    return skip


def _bounds_test(pred: Predicate, col: Column, kind: str) -> Callable[[ColumnBounds], bool] | None:
    """Whether no row a column's bounds describe makes the leaf TRUE (None: maybe)."""
    if isinstance(pred, Compare):
        lit = None if pred.op == "!=" else _literal_value(pred.literal, col)
        if lit is None:
            return None
        return lambda cb: _compare_false(kind, pred.op, cb, lit)
    if isinstance(pred, InList):
        values = [_literal_value(v, col) for v in pred.values if not v.is_null]
        if pred.negated or any(v is None for v in values):
            return None
        has_null = len(values) < len(pred.values)

        def in_list(cb: ColumnBounds) -> bool:
            if has_null and cb.nulls:
                return False
            return all(_compare_false(kind, "=", cb, v) for v in values)

        return in_list
    if isinstance(pred, IsNull) and pred.negated:
        return lambda cb: cb.lo is None and not cb.nan
    if isinstance(pred, IsNull):
        return lambda cb: cb.nulls == 0 and not cb.nan
    if isinstance(pred, StartsWith) and kind == "string" and not pred.negated:
        prefix, k = pred.prefix, len(pred.prefix)
        return lambda cb: cb.lo is None or cb.hi is None or cb.hi < prefix or cb.lo[:k] > prefix
    return None


# ---------------------------------------------------------------- manifest rows

_DECODED: OpenCache[TableBounds] = OpenCache(50_000)


def decoded(text: str | None) -> TableBounds | None:
    """The bounds of a ``metadata`` text, decoded once per distinct text (LRU)."""
    if text is None or "lance_sql.bounds" not in text:
        return None
    return _DECODED.get_or_open(text, lambda: bounds_of_metadata(text))


class RowBounds:
    """The usable bounds of some ``__manifest`` rows (None where unusable), cached per
    row content with whatever else planning derives from them (``derived``)."""

    def __init__(self, bounds: list[TableBounds | None], locations: list[Any]) -> None:
        self.bounds = bounds
        self.locations = locations
        self.any = any(b is not None for b in bounds)
        self.derived: dict[Any, Any] = {}


#: candidate-row sets: at most 256, and at most a million rows in all
_ROWS: OpenCache[RowBounds] = OpenCache(256, lambda s: len(s.bounds), 1_000_000)
#: by the identity of the rows object, holding it (so its ``id`` is not reused while
#: cached): at most 16, as a 100k-row __manifest is MBs
_BY_ID: OpenCache[tuple[pa.Table, RowBounds]] = OpenCache(16)


def row_bounds(rows: pa.Table) -> RowBounds | None:
    """:class:`RowBounds` of ``rows`` (None: they lack the columns bounds need), cached by
    the values of the columns that decide usability."""
    same = _BY_ID.get(id(rows))
    if same is not None:  # the same (immutable) table object
        return same[1]
    if any(c not in rows.column_names for c in _ROW_COLUMNS):
        return None
    cols = [rows.column(c).to_pylist() for c in _ROW_COLUMNS]
    key = tuple(tuple(c) for c in cols)
    hit = _ROWS.get(key)
    if hit is not None:
        return _BY_ID.put(id(rows), (rows, hit))[1]
    meta, rv, rb, rt, loc = cols
    out: list[TableBounds | None] = []
    for i, text in enumerate(meta):
        b = decoded(text)
        out.append(b if b is not None and usable(b, rv[i], rb[i], rt[i], loc[i]) else None)
    state = _ROWS.put(key, RowBounds(out, loc))
    return _BY_ID.put(id(rows), (rows, state))[1]


def skip_mask(pred: Predicate, rows: pa.Table, done: np.ndarray | None = None) -> np.ndarray | None:
    """Per ``__manifest`` table row, True where its usable bounds prove ``pred`` never TRUE
    (None: nothing can be skipped). Rows True in ``done`` are not tested (False)."""
    test = compile_skip(pred)
    if test is None or rows.num_rows == 0:
        return None
    state = row_bounds(rows)
    if state is None or not state.any:
        return None
    bounds = state.bounds
    if done is None:
        return np.fromiter(
            (b is not None and test(b) for b in bounds), dtype=bool, count=len(bounds)
        )
    out = np.zeros(len(bounds), dtype=bool)
    for i in np.flatnonzero(~done).tolist():  # a point lookup's key filters leave few
        b = bounds[i]
        out[i] = b is not None and test(b)
    return out


def skip_by_bounds(
    pred: Predicate, rows: pa.Table, done: np.ndarray | None = None
) -> tuple[pa.Table, int]:
    """``rows`` without the tables their bounds prove empty for ``pred`` (and those True
    in ``done``); and how many of them bounds skipped (not counting ``done``)."""
    mask = skip_mask(pred, rows, done)
    if done is not None and done.any():
        keep = ~done if mask is None else ~(done | mask)
        return rows.filter(pa.array(keep)), 0 if mask is None else int(mask.sum())
    if mask is None or not mask.any():
        return rows, 0
    return rows.filter(pa.array(~mask)), int(mask.sum())
