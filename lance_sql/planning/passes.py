"""The planner's passes over the predicate IR, composed by :func:`prepare` in this order.

:func:`push_not` (exact under three-valued logic), :func:`bind` (names to fields,
literals coerced exactly), :func:`simplify` (fold, flatten, merge into IN lists).
Binding may replace a leaf by one keeping the same rows *as a filter*
(``x IN (1, NULL)`` -> ``x IN (1)``): sound only because no NOT is left above it.
"""

from __future__ import annotations

from functools import partial

import pyarrow as pa

from lance_sql.errors import PlanningError
from lance_sql.spec.arrow_json import field_id_of
from lance_sql.spec.literals import coerce_compare, coerce_in, in_pred
from lance_sql.spec.predicates import (
    FALSE,
    NEGATED_OP,
    NULL_BOOL,
    And,
    Column,
    Compare,
    Const,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
    StartsWith,
    Term,
    Unsupported,
    and_,
    fold,
    or_,
    to_sql,
)
from lance_sql.spec.transforms.base import NotThisTerm


def push_not(pred: Predicate, negate: bool = False) -> Predicate:
    """Push NOT to the leaves. Whole filters only: :data:`NULL_BOOL` becomes FALSE, which
    keeps the rows a filter keeps but not its negation."""
    if pred == NULL_BOOL:
        return FALSE
    if isinstance(pred, Not):
        return push_not(pred.child, not negate)
    if isinstance(pred, And):
        parts = [push_not(c, negate) for c in pred.children]
        return or_(*parts) if negate else and_(*parts)
    if isinstance(pred, Or):
        parts = [push_not(c, negate) for c in pred.children]
        return and_(*parts) if negate else or_(*parts)
    if not negate:
        return pred
    if isinstance(pred, Const):
        return Const(not pred.value)
    if isinstance(pred, Compare):
        return Compare(pred.term, NEGATED_OP[pred.op], pred.literal)
    if isinstance(pred, InList):
        return InList(pred.term, pred.values, not pred.negated)
    if isinstance(pred, IsNull):
        return IsNull(pred.term, not pred.negated)
    if isinstance(pred, StartsWith):
        return StartsWith(pred.term, pred.prefix, not pred.negated)
    if isinstance(pred, Unsupported):
        return Unsupported(f"NOT ({pred.description})", pred.columns)
    raise TypeError(f"not a predicate: {pred!r}")


def resolve_column(name: str, schema: pa.Schema) -> Column:
    """Bind a column name (exact match, else a unique case-insensitive one); a dotted name
    is a field inside a struct column (``s.a``), else a qualified column (``t.col``)."""
    idx = _field_index(name, schema)
    if "." in name:
        head, rest = name.split(".", 1)
        top = _field_index(head, schema)
        nested = None if top is None else _nested_column(schema.field(top), rest)
        if nested is not None:  # no column name holds a '.' (Lance refuses them)
            return nested
        if idx is None:
            return resolve_column(rest, schema)
    if idx is None:
        known = ", ".join(schema.names)
        raise PlanningError(f"unknown column {name!r} in filter (columns: {known})")
    field = schema.field(idx)
    return Column(field.name, field_id_of(field), field.type)


def _field_index(name: str, schema: pa.Schema) -> int | None:
    idx = schema.get_field_index(name)
    if idx >= 0:
        return idx
    matches = [i for i, f in enumerate(schema) if f.name.lower() == name.lower()]
    return matches[0] if len(matches) == 1 else None


def _nested_column(top: pa.Field, rest: str) -> Column | None:
    """The field at dotted path ``rest`` inside struct column ``top`` (structs only)."""
    path, current = [top.name], top
    for part in rest.split("."):
        if not pa.types.is_struct(current.type):
            return None
        i = current.type.get_field_index(part)
        if i < 0:
            return None
        current = current.type.field(i)
        path.append(current.name)
    return Column(".".join(path), field_id_of(current), current.type, tuple(path))


def _bind_term(term: Term, schema: pa.Schema) -> Term:
    if isinstance(term, Column):
        return resolve_column(term.name, schema)
    return term.transform.bind(term, tuple(resolve_column(c.name, schema) for c in term.columns))


def _value_type(term: Term) -> pa.DataType:
    if isinstance(term, Column):
        return term.type
    return term.value_type()


def bind(pred: Predicate, schema: pa.Schema) -> Predicate:
    """Resolve names and coerce literals; raises :class:`PlanningError` for unknown columns."""
    return fold(pred, partial(_bind_leaf, schema=schema), and_, or_, Not)


def _bind_leaf(pred: Predicate, schema: pa.Schema) -> Predicate:
    if isinstance(pred, (Const, Unsupported)):
        return pred
    try:
        term = _bind_term(pred.term, schema)
    except NotThisTerm as exc:
        return Unsupported(str(exc), tuple(c.name for c in pred.term.columns))
    target = _value_type(term)
    if isinstance(pred, Compare):
        return coerce_compare(term, pred.op, pred.literal, target)
    if isinstance(pred, InList):
        return coerce_in(term, pred.values, pred.negated, target)
    if isinstance(pred, IsNull):
        return IsNull(term, pred.negated)
    if isinstance(pred, StartsWith):
        if not (pa.types.is_string(target) or pa.types.is_large_string(target)):
            return Unsupported(to_sql(StartsWith(term, pred.prefix, pred.negated)), (term.sql(),))
        if pred.prefix == "":
            return FALSE if pred.negated else IsNull(term, negated=True)
        return StartsWith(term, pred.prefix, pred.negated)
    raise TypeError(f"not a predicate: {pred!r}")


def simplify(pred: Predicate) -> Predicate:
    """Constant folding, AND/OR flattening, and ``a = 1 OR a = 2`` -> ``a IN (1, 2)``
    (DataFusion hands IN lists over as OR chains; multi-column fields need IN lists)."""
    return fold(
        pred,
        lambda leaf: leaf,
        lambda *parts: _intersect(_merge(and_(*parts), negated=True)),
        lambda *parts: _merge(or_(*parts), negated=False),
        lambda inner: Const(not inner.value) if isinstance(inner, Const) else Not(inner),
    )


def _merge(pred: Predicate, negated: bool) -> Predicate:
    """Merge ``=`` (in an OR) or ``!=`` (in an AND) leaves on one term into one IN list."""
    if not isinstance(pred, (And, Or)):
        return pred
    op = "!=" if negated else "="
    groups: dict[object, list] = {}
    for child in pred.children:
        if isinstance(child, Compare) and child.op == op:
            groups.setdefault(child.term, []).append(child.literal)
        elif isinstance(child, InList) and child.negated == negated:
            groups.setdefault(child.term, []).extend(child.values)
    out: list[Predicate] = []
    done: set[object] = set()
    for child in pred.children:
        term = getattr(child, "term", None)
        merge = (isinstance(child, Compare) and child.op == op) or (
            isinstance(child, InList) and child.negated == negated
        )
        if merge and len(groups.get(term, ())) > 1:
            if term in done:
                continue
            done.add(term)
            values: list = []
            for v in groups[term]:
                if v not in values:
                    values.append(v)
            out.append(in_pred(term, values, negated))
        else:
            out.append(child)
    return and_(*out) if isinstance(pred, And) else or_(*out)


def _intersect(pred: Predicate) -> Predicate:
    """``a = 1 AND a IN (1, 2)`` -> ``a = 1``; ``a = 1 AND a = 2`` -> FALSE (as DataFusion
    folds it before a table sees it). Not for floats: DataFusion compares them in total
    order (``-0.0 <> 0.0``), Python's ``==`` does not."""
    if not isinstance(pred, And):
        return pred
    sets: dict[object, list] = {}
    for child in pred.children:
        if isinstance(child, Compare) and child.op == "=":
            sets.setdefault(child.term, []).append([child.literal])
        elif isinstance(child, InList) and not child.negated:
            sets.setdefault(child.term, []).append(list(child.values))
    out: list[Predicate] = []
    done: set[object] = set()
    for child in pred.children:
        term = getattr(child, "term", None)
        lists = sets.get(term, ())
        exact = all(not pa.types.is_floating(v.type) for values in lists for v in values)
        # only the = / IN conjuncts are replaced: `a < 1`, `a != 1`, `a NOT IN (...)` on the
        # same term stay beside their intersection
        member = (isinstance(child, Compare) and child.op == "=") or (
            isinstance(child, InList) and not child.negated
        )
        if len(lists) < 2 or not exact or not member:
            out.append(child)
        elif term not in done:
            done.add(term)
            out.append(in_pred(term, [v for v in lists[0] if all(v in o for o in lists[1:])]))
    return and_(*out)


def prepare(pred: Predicate, schema: pa.Schema) -> Predicate:
    """push_not -> bind -> simplify: the normal form every planning step expects."""
    return simplify(bind(push_not(pred), schema))
