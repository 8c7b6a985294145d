"""Edge: the predicate IR -> a ``pyarrow.compute.Expression``.

Used to filter ``__manifest`` (pyarrow ``Table.filter`` or pylance's
``scanner(filter=...)``) and to push residual filters into Lance scans. The
expression keeps SQL's filter semantics: where a pyarrow kernel would turn a
NULL into TRUE (``~is_in``), the conversion adds ``is_valid`` so that a NULL
never passes. ``date_part`` terms and ``CAST(ts AS DATE)`` have exact pyarrow
forms (only the cast also runs inside a Lance scan: pyarrow 26 maps ``year`` ...
``hour`` to no Substrait call, :mod:`.scan_filter` checks each conjunct);
other transform terms have none (``murmur3`` is not a pyarrow function;
``date_trunc`` is left out too), so converting them raises
:class:`PlanningError`; callers fall back to :mod:`.scan_filter` (which
evaluates them exactly after the scan).
"""

from __future__ import annotations

import operator
from functools import reduce

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import PlanningError
from lance_sql.spec.predicates import (
    Column,
    Compare,
    Const,
    InList,
    IsNull,
    Predicate,
    StartsWith,
    Term,
    Unsupported,
    fold,
)

_OPS = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def _term(term: Term) -> pc.Expression:
    if isinstance(term, Column):
        return pc.field(*term.path) if term.path else pc.field(term.name)
    expr = term.transform.pyarrow(term)
    if expr is None:
        raise PlanningError(f"{term.sql()} has no pyarrow expression equivalent")
    return expr


def to_pyarrow(pred: Predicate) -> pc.Expression:
    """A pyarrow expression with the same filter semantics as ``pred``."""
    both, either = (lambda *p: reduce(operator.and_, p)), (lambda *p: reduce(operator.or_, p))
    return fold(pred, _leaf, both, either, operator.invert)


def _leaf(pred: Predicate) -> pc.Expression:
    if isinstance(pred, Const):
        return pc.scalar(pred.value)
    if isinstance(pred, Unsupported):
        raise PlanningError(f"cannot convert unsupported predicate to pyarrow: {pred.description}")
    term = _term(pred.term)
    if isinstance(pred, Compare):
        return _OPS[pred.op](term, pc.scalar(pred.literal.scalar()))
    if isinstance(pred, InList):
        values = pa.array([v.value for v in pred.values], type=pred.values[0].type)
        if pa.types.is_floating(values.type):
            # is_in hashes floats bitwise (-0.0 is not in [0.0]); SQL's IN is `=`, where
            # -0.0 = 0.0: compare both sides plus 0.0, which turns -0.0 into 0.0
            zero = pa.scalar(0.0, values.type)
            term, values = term + pc.scalar(zero), pc.add(values, zero)
        found = term.isin(values)
        return (~found & term.is_valid()) if pred.negated else found
    if isinstance(pred, IsNull):
        return term.is_valid() if pred.negated else term.is_null()
    if isinstance(pred, StartsWith):
        found = pc.starts_with(term, pattern=pred.prefix)
        return ~found if pred.negated else found
    raise TypeError(f"not a predicate: {pred!r}")


__all__ = ["to_pyarrow"]
