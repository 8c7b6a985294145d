"""Edge: the predicate IR over Arrow: a ``pyarrow.compute.Expression``, or evaluated on rows.

:func:`to_pyarrow` keeps SQL's filter semantics (a NULL never passes, ``-0.0 = 0.0``
in IN lists); a term with no pyarrow form raises :class:`PlanningError` and callers
fall back to :mod:`.scan_filter`. :func:`evaluate` is the IR's reference semantics on
rows (three-valued); transform terms are computed by the code that stores partition values.
"""

from __future__ import annotations

import operator
from functools import partial, reduce

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

#: (pyarrow's compute functions take expressions as well as arrays)
_OPS = {
    "=": pc.equal,
    "!=": pc.not_equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}


# ----------------------------------------------------------------- expression


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


def _leaf(pred: Predicate, table: pa.Table | None = None) -> pc.Expression | pa.Array:
    """``pred`` as a pyarrow expression (``table`` None) or evaluated on ``table``'s rows."""
    if isinstance(pred, Const):
        if table is None:
            return pc.scalar(pred.value)
        return pa.array([pred.value] * table.num_rows, pa.bool_())
    if isinstance(pred, Unsupported):
        if table is None:
            raise PlanningError(
                f"cannot convert unsupported predicate to pyarrow: {pred.description}"
            )
        raise PlanningError(f"cannot evaluate unsupported predicate {pred.description}")
    values = _term(pred.term) if table is None else term_values(pred.term, table)
    if isinstance(pred, Compare):
        literal = pred.literal.scalar()
        return _OPS[pred.op](values, literal if table is None else literal.cast(values.type))
    if isinstance(pred, InList):
        value_set = pa.array([v.value for v in pred.values], type=pred.values[0].type)
        if table is not None:
            value_set = value_set.cast(values.type)
        if pa.types.is_floating(value_set.type):
            # is_in hashes floats bitwise (-0.0 is not in [0.0]); SQL's IN is `=`, where
            # -0.0 = 0.0: compare both sides plus 0.0, which turns -0.0 into 0.0
            zero = pa.scalar(0.0, value_set.type)
            values, value_set = pc.add_checked(values, zero), pc.add_checked(value_set, zero)
        found = pc.is_in(values, value_set=value_set)
        if table is None:  # a filter: a NULL never passes NOT IN
            return pc.invert(found) & pc.is_valid(values) if pred.negated else found
        found = pc.if_else(pc.is_null(values), pa.scalar(None, pa.bool_()), found)
        return pc.invert(found) if pred.negated else found
    if isinstance(pred, IsNull):
        return pc.is_valid(values) if pred.negated else pc.is_null(values)
    if isinstance(pred, StartsWith):
        found = pc.starts_with(values, pattern=pred.prefix)
        return pc.invert(found) if pred.negated else found
    raise TypeError(f"not a predicate: {pred!r}")


# ----------------------------------------------------------------- evaluation


def _column(table: pa.Table, name: str) -> pa.Array:
    col = table.column(name)
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def term_values(term: Term, table: pa.Table) -> pa.Array:
    """The values of a term for every row of ``table``."""
    if isinstance(term, Column):
        return _column(table, term.name)
    return term.transform.values(term, [_column(table, c.name) for c in term.columns])


def evaluate(pred: Predicate, table: pa.Table) -> pa.Array:
    """A boolean array (TRUE / FALSE / NULL) of ``pred`` for every row of ``table``."""
    both, either = (lambda *p: reduce(pc.and_kleene, p)), (lambda *p: reduce(pc.or_kleene, p))
    return fold(pred, partial(_leaf, table=table), both, either, pc.invert)


def matching_rows(pred: Predicate, table: pa.Table) -> pa.Table:
    """The rows of ``table`` where ``pred`` is TRUE."""
    return table.filter(pc.fill_null(evaluate(pred, table), False))
