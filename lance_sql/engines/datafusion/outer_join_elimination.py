"""Outer joins that a WHERE condition makes inner: tell DataFusion so, in the plan.

A WHERE conjunct that is *null-rejecting* for a side drops every row the join
pads with NULLs there. DataFusion 55 sees this for plain comparisons only; over a
function the WHERE stays above the outer join, where its filter pushdown can move
it onto the other side's column of the same name (apache/datafusion#21246):
wrong rows. The test is exact: each conjunct is evaluated over sets of possible
values with the padded side all NULL; a function not known to return NULL on
NULL counts as unknown. The filter itself stays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from substrait import algebra_pb2

from lance_sql.engines.datafusion import substrait_plan as sp

Rel = algebra_pb2.Rel
JT = algebra_pb2.JoinRel.JoinType

#: possible values of an expression: True, False, None (NULL) and ``VALUE`` (any other)
VALUE = "value"
ANY = frozenset({True, False, None, VALUE})
#: functions whose result is NULL whenever one of their arguments is NULL ...
_STRICT_NAMES = """equal not_equal lt lte gt gte add subtract multiply divide modulus negate abs
upper lower left right substring substr character_length length octet_length btrim
ltrim rtrim trim starts_with ends_with strpos date_part date_trunc floor ceil round sqrt"""
#: ... and those NULL when one of their first n arguments is: function -> n (None: all).
#: LIKE's third argument is its escape character, a NULL literal when there is none.
STRICT = dict.fromkeys(_STRICT_NAMES.split()) | {"like": 2, "ilike": 2, "nullif": 1}
#: what a join type becomes when its left / right padded side is rejected
_LEFT_PADDED = {JT.JOIN_TYPE_RIGHT: JT.JOIN_TYPE_INNER, JT.JOIN_TYPE_OUTER: JT.JOIN_TYPE_LEFT}
_RIGHT_PADDED = {JT.JOIN_TYPE_LEFT: JT.JOIN_TYPE_INNER, JT.JOIN_TYPE_OUTER: JT.JOIN_TYPE_RIGHT}


def eliminate_outer_joins(
    plan: Any, width: Callable[[Rel], int], same_schema: Callable[[Any], bool]
) -> list[str]:
    """Make inner (in place) each outer join a WHERE above it makes inner; what was changed.

    ``width(rel)``: how many columns ``rel`` outputs; ``same_schema(plan)``:
    whether ``plan`` still has the query's output schema.
    """
    names = sp.function_names(plan)
    done: list[str] = []
    for rel in list(sp.walk(sp.root_rel(plan))):
        if sp.kind(rel) != "filter" or sp.has_subquery(rel.filter.condition):
            continue
        found = sp.join_below(rel.filter.input, lambda j: _origins(j, width))
        if found is None:
            continue
        join, origins = found[0].join, found[1]
        new = join.type
        for conjunct in sp.conjuncts(rel.filter.condition, names):
            if _rejects(conjunct, origins, "left", names):
                new = _LEFT_PADDED.get(new, new)
            if _rejects(conjunct, origins, "right", names):
                new = _RIGHT_PADDED.get(new, new)
        if new == join.type:
            continue
        old, join.type = join.type, new
        if same_schema(plan):
            done.append(f"{_sql_name(old)} JOIN -> {_sql_name(new)} JOIN")
        else:
            join.type = old
    return done


def _sql_name(join_type: int) -> str:
    return JT.Name(join_type).removeprefix("JOIN_TYPE_").replace("OUTER", "FULL")


def _origins(rel: Rel, width: Callable[[Rel], int]) -> list[Any] | None:
    """Where an outer join's columns come from: ``("left" | "right", index)``; else None."""
    if rel.join.type not in (*_LEFT_PADDED, *_RIGHT_PADDED):
        return None
    origins: list[Any] = [("left", i) for i in range(width(rel.join.left))]
    return origins + [("right", i) for i in range(width(rel.join.right))]


def _rejects(expr: Any, origins: list[Any], side: str, names: dict[int, str]) -> bool:
    """Whether ``expr`` is NULL or false wherever every column of ``side`` is NULL."""
    try:
        return _values(expr, origins, side, names) <= {None, False}
    except (IndexError, ValueError):  # a reference this walk cannot place: no claim
        return False


def _values(expr: Any, origins: list[Any], side: str, names: dict[int, str]) -> frozenset[Any]:
    """The values ``expr`` can take where every column of ``side`` is NULL."""
    rex = expr.WhichOneof("rex_type")
    if rex == "selection":
        ref = sp.field_ref(expr)
        if ref is None:
            return ANY
        origin = origins[ref]
        return frozenset({None}) if origin is not None and origin[0] == side else ANY
    if rex == "literal":
        lit = expr.literal
        if lit.WhichOneof("literal_type") == "null":
            return frozenset({None})
        if lit.WhichOneof("literal_type") == "boolean":
            return frozenset({lit.boolean})
        return frozenset({VALUE})
    if rex in ("cast", "singular_or_list"):
        operand = expr.cast.input if rex == "cast" else expr.singular_or_list.value
        inner = _values(operand, origins, side, names)
        return frozenset({None}) if inner == {None} else ANY
    if rex != "scalar_function":
        return ANY
    fn = expr.scalar_function
    name = names.get(fn.function_reference, "")
    args = [_values(a.value, origins, side, names) for a in fn.arguments]
    if name in ("and", "or") and args:
        out = _truth(args[0])
        for arg in args[1:]:
            out = frozenset(_kleene(name, x, y) for x in out for y in _truth(arg))
        return out
    if name == "not" and len(args) == 1:
        return frozenset(None if v is None else not v for v in _truth(args[0]))
    if name in ("is_null", "is_not_null") and len(args) == 1:
        return frozenset((v is None) == (name == "is_null") for v in args[0])
    if name in STRICT and any(a == {None} for a in args[: STRICT[name]]):
        return frozenset({None})
    return ANY


def _truth(values: frozenset[Any]) -> frozenset[Any]:
    """``values`` as a boolean's: an unknown value is true or false."""
    return (values - {VALUE}) | ({True, False} if VALUE in values else set())


def _kleene(op: str, x: Any, y: Any) -> Any:
    """SQL's three-valued AND / OR."""
    if op == "and":
        if x is False or y is False:
            return False
        return None if x is None or y is None else True
    if x is True or y is True:
        return True
    return None if x is None or y is None else False
