"""``NOT IN`` subqueries in a form DataFusion's Substrait round trip keeps.

DataFusion plans ``a.k NOT IN (SELECT b.k FROM b)`` as a *null-aware* anti join;
Substrait has no such flag and the plan read back keeps NULL-keyed rows it must
not. :func:`expand_not_in` rewrites each into three plain anti joins::

    J1 = a ANTI JOIN b ON a.k = b.k
    J2 = J1 ANTI JOIN (b WHERE b.k IS NULL LIMIT 1) ON b.k IS NULL
    J3 = J2 ANTI JOIN (b LIMIT 1) ON a.k IS NULL

J2 removes every row when ``b`` has a NULL key, J3 the NULL ``a.k`` rows when
``b`` has any row. Only one plain key equality and no other condition is expanded.
"""

from __future__ import annotations

from typing import Any

from substrait import algebra_pb2, plan_pb2

from lance_sql.engines.datafusion import substrait_plan as sp
from lance_sql.engines.datafusion.join_swap import output_width
from lance_sql.engines.datafusion.prune_plan import preorder

_ANTI = algebra_pb2.JoinRel.JOIN_TYPE_LEFT_ANTI


def null_aware_flags(logical: Any) -> list[bool]:
    """For each ``LeftAnti`` join of the logical plan (preorder): is it null-aware."""
    flags = []
    for node in preorder(logical):
        variant = node.to_variant()
        if type(variant).__name__ == "Join" and str(variant.join_type()) == "LeftAnti":
            flags.append(" null_aware" in node.display())
    return flags


def expand_not_in(ctx: Any, plan: plan_pb2.Plan, logical: Any) -> str | None:
    """Expand every null-aware anti join of ``plan``; None, or why not (``plan`` then unusable).

    The n-th ``LeftAnti`` join of ``logical`` (preorder) is the n-th left anti ``JoinRel``.
    """
    flags = null_aware_flags(logical)
    if not any(flags):
        return None
    antis = [r for r in sp.walk(sp.root_rel(plan)) if sp.kind(r) == "join" and r.join.type == _ANTI]
    if len(antis) != len(flags) or sp.has_subquery(plan):
        return "the query has a NOT IN subquery whose anti join could not be located"
    names = sp.function_names(plan)
    # innermost first: expanding a join copies its subtree, which must already be final
    for rel, aware in reversed(list(zip(antis, flags, strict=True))):
        if aware:
            why = _expand(ctx, plan, rel, names)
            if why is not None:
                return f"the query has a NOT IN subquery {why}"
    return None


def _expand(
    ctx: Any, plan: plan_pb2.Plan, rel: algebra_pb2.Rel, names: dict[int, str]
) -> str | None:
    join = rel.join
    if join.HasField("post_join_filter") or join.common.HasField("emit"):
        return "with a condition besides its key"
    keys = sp.equality_fields(join.expression, names)
    if keys is None:
        return "on an expression or with a condition besides its key"
    width = output_width(ctx, plan, join.left)
    left_key, right_key = sorted(keys)
    if not left_key < width <= right_key:
        return "whose key equality does not compare its two sides"
    plain = algebra_pb2.Rel()
    plain.CopyFrom(rel)
    nulls = _first_row(join.right, _is_null(plan, right_key - width))
    anyone = _first_row(join.right, None)
    no_nulls = _anti(plain, nulls, _is_null(plan, right_key))
    rel.CopyFrom(_anti(no_nulls, anyone, _is_null(plan, left_key)))
    return None


def _anti(
    left: algebra_pb2.Rel, right: algebra_pb2.Rel, condition: algebra_pb2.Expression
) -> algebra_pb2.Rel:
    rel = algebra_pb2.Rel()
    rel.join.type = _ANTI
    rel.join.common.hint.alias = sp.NOT_IN_HINT  # no namespace join of the user's
    rel.join.left.CopyFrom(left)
    rel.join.right.CopyFrom(right)
    rel.join.expression.CopyFrom(condition)
    return rel


def _first_row(
    input_rel: algebra_pb2.Rel, condition: algebra_pb2.Expression | None
) -> algebra_pb2.Rel:
    """``input_rel`` [filtered by ``condition``], at most one row."""
    rel = algebra_pb2.Rel()
    if condition is None:
        rel.CopyFrom(input_rel)
    else:
        rel.filter.input.CopyFrom(input_rel)
        rel.filter.condition.CopyFrom(condition)
    sp.wrap_in_fetch(rel, 1)
    return rel


def _is_null(plan: plan_pb2.Plan, index: int) -> algebra_pb2.Expression:
    return sp.boolean_call(plan, "is_null", [sp.field_reference(index)])
