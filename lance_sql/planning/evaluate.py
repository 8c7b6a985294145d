"""Evaluate a bound predicate on Arrow rows under SQL three-valued logic.

The reference semantics of the IR: used by tests as the oracle that pruning is
checked against (itself cross-checked with DataFusion), and by callers that
need the exact rows of a small table (e.g. a residual on a handful of rows).
Transform terms are computed with :mod:`udfs` (the code that computes stored
partition values) or, for ``date_trunc`` / ``CAST(ts AS DATE)`` on zoned
timestamps, by DataFusion itself (pyarrow refuses ambiguous local times).
"""

from __future__ import annotations

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

_OPS = {
    "=": pc.equal,
    "!=": pc.not_equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}


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


def _leaf(pred: Predicate, table: pa.Table) -> pa.Array:
    if isinstance(pred, Const):
        return pa.array([pred.value] * table.num_rows, pa.bool_())
    if isinstance(pred, Unsupported):
        raise PlanningError(f"cannot evaluate unsupported predicate {pred.description}")
    values = term_values(pred.term, table)
    if isinstance(pred, Compare):
        return _OPS[pred.op](values, pred.literal.scalar().cast(values.type))
    if isinstance(pred, InList):
        value_set = pa.array([v.value for v in pred.values], type=pred.values[0].type)
        value_set = value_set.cast(values.type)
        if pa.types.is_floating(values.type):  # IN is `=`: -0.0 = 0.0 (is_in hashes bits)
            zero = pa.scalar(0.0, values.type)
            values, value_set = pc.add(values, zero), pc.add(value_set, zero)
        found = pc.is_in(values, value_set=value_set)
        found = pc.if_else(pc.is_null(values), pa.scalar(None, pa.bool_()), found)
        return pc.invert(found) if pred.negated else found
    if isinstance(pred, IsNull):
        return pc.is_valid(values) if pred.negated else pc.is_null(values)
    if isinstance(pred, StartsWith):
        found = pc.starts_with(values, pattern=pred.prefix)
        return pc.invert(found) if pred.negated else found
    raise TypeError(f"not a predicate: {pred!r}")


def matching_rows(pred: Predicate, table: pa.Table) -> pa.Table:
    """The rows of ``table`` where ``pred`` is TRUE."""
    return table.filter(pc.fill_null(evaluate(pred, table), False))


__all__ = ["evaluate", "matching_rows", "term_values"]
