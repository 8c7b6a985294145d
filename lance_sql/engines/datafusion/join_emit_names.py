"""Distinct names for the columns a rebuilt join puts back in their order.

lance-sql's join passes (:mod:`.join_order`, :mod:`.join_swap`) rebuild join
trees and restore the original column order with an ``emit``. DataFusion's
Substrait consumer turns that emit into a projection whose columns keep their
table's names, so after a self-join it holds two columns of one name
(``left.sku`` and ``right.sku`` are both ``sku`` in the physical plan).
DataFusion 55 pushes join dynamic filters through a projection by column *name*
and can put a semi join's filter on the wrong ``sku``: rows are lost
(apache/datafusion#25263, fixed upstream after 55 by matching positions).

:func:`name_emitted_columns_apart` therefore writes each such emit as a
projection in which every column whose name was already emitted is
``coalesce(column)``: the same values, type and nullability (DataFusion
simplifies it back to the column, keeping the name ``coalesce(right.sku)``),
but a name of its own. The query's output names come from the plan's root
names, so answers keep their names.
"""

from __future__ import annotations

from collections.abc import Callable

from substrait import algebra_pb2, plan_pb2

from lance_sql.engines.datafusion import substrait_plan as sp

Rel = algebra_pb2.Rel
J = algebra_pb2.JoinRel
_OUTER = (J.JOIN_TYPE_LEFT, J.JOIN_TYPE_RIGHT, J.JOIN_TYPE_OUTER)
_BOTH = (J.JOIN_TYPE_INNER, *_OUTER)


def name_emitted_columns_apart(plan: plan_pb2.Plan, width: Callable[[Rel], int]) -> int:
    """Give repeated names apart in every join ``emit`` of ``plan`` (in place); how many."""
    return _apart_under(plan, sp.root_rel(plan), width)


def _apart_under(plan: plan_pb2.Plan, rel: Rel, width: Callable[[Rel], int]) -> int:
    done = sum(_apart_under(plan, child, width) for child in sp.inputs(rel))  # inputs first
    if sp.kind(rel) == "join" and rel.join.common.HasField("emit"):
        done += _apart(plan, rel, width)
    return done


def _apart(plan: plan_pb2.Plan, rel: Rel, width: Callable[[Rel], int]) -> int:
    """``rel`` (a join with an emit) as a projection of distinct names, if it needs one."""
    mapping = list(rel.join.common.emit.output_mapping)
    join = Rel()
    join.CopyFrom(rel)
    join.join.common.ClearField("emit")
    names = output_names(join)
    seen: set[str] = set()
    repeated = []
    for i in mapping:
        name = names[i] if names is not None else None
        repeated.append(name is None or name in seen)  # unknown: named apart to be safe
        if name is not None:
            seen.add(name)
    if not any(repeated):
        return 0
    try:
        n = len(names) if names is not None else width(join)
    except Exception:  # an input DataFusion cannot plan alone
        return 0
    return _project_renamed(plan, rel, join, n, mapping, repeated)


def name_padded_sides_apart(plan: plan_pb2.Plan, width: Callable[[Rel], int]) -> int:
    """Give the NULL-padded side of every outer join names of its own (in place); how many.

    A WHERE condition on the padded side stays above an outer join. DataFusion 55's
    physical filter pushdown moves it through the join by column *name*, so when the
    other side has a column of the same name (``a RIGHT JOIN b ... WHERE a.c1 IS
    NULL``, with ``b.c1`` read too) the condition can land on ``b.c1``: wrong rows
    (apache/datafusion#21246, fixed after 55; plain DataFusion gives them too). Each
    column of the padded input whose name the other side also outputs (or whose name
    is unknown) becomes ``coalesce(column)``, as in :func:`name_emitted_columns_apart`:
    the condition then names a column only the padded side has, and stays above.
    """
    return _padded_apart_under(plan, sp.root_rel(plan), width)


def _padded_apart_under(plan: plan_pb2.Plan, rel: Rel, width: Callable[[Rel], int]) -> int:
    # inputs first: renaming copies the padded input, so joins inside it are done already
    done = sum(_padded_apart_under(plan, child, width) for child in sp.inputs(rel))
    if sp.kind(rel) != "join" or rel.join.type not in _OUTER:
        return done
    body = rel.join
    # a FULL join pads both sides: naming one side apart makes every name distinct
    padded = body.left if body.type == J.JOIN_TYPE_RIGHT else body.right
    other = body.right if body.type == J.JOIN_TYPE_RIGHT else body.left
    names, others = output_names(padded), output_names(other)
    try:
        n = len(names) if names is not None else width(padded)
    except Exception:  # an input DataFusion cannot plan alone
        return done
    if names is None or others is None:
        rename = [True] * n
    else:
        taken = set(others)
        rename = [name is None or name in taken for name in names]
    if not any(rename):
        return done
    original = Rel()
    original.CopyFrom(padded)
    return done + _project_renamed(plan, padded, original, n, list(range(n)), rename)


def _project_renamed(
    plan: plan_pb2.Plan, rel: Rel, source: Rel, n: int, mapping: list[int], rename: list[bool]
) -> int:
    """Replace ``rel`` (in place) by a projection of ``source``'s columns ``mapping``, each
    ``coalesce(column)`` where ``rename`` says so (``n``: ``source``'s width); 1, or 0
    for a plan that cannot declare the function."""
    try:
        coalesce = sp.declare_function(plan, "coalesce")
    except Exception:  # a plan without function extensions
        return 0
    out = Rel()
    out.project.input.CopyFrom(source)
    for i, renamed in zip(mapping, rename, strict=True):
        ref = sp.field_reference(i)
        if renamed:
            call = algebra_pb2.Expression()
            call.scalar_function.function_reference = coalesce
            call.scalar_function.arguments.add().value.CopyFrom(ref)
            ref = call
        out.project.expressions.append(ref)
    # a projection outputs its input's columns, then its expressions: emit the expressions
    out.project.common.emit.output_mapping.extend(range(n, n + len(mapping)))
    rel.CopyFrom(out)
    return 1


def output_names(rel: Rel) -> list[str | None] | None:
    """The column names ``rel`` outputs (None: a computed column), read from the message.

    None where the message does not say (aggregates, sets, extensions, mark joins).
    """
    k = sp.kind(rel)
    if k == "read":
        chain = sp.scan_chain(rel)
        return None if chain is None else list(chain.columns)
    body = getattr(rel, k, None)
    if body is None:
        return None
    if k in ("filter", "project", "fetch", "sort"):
        below = output_names(body.input)
        if below is None:
            return None
        return sp.through(rel, below) if k in sp.ROW_WISE else sp.emitted(rel, below)
    if k not in ("join", "cross"):
        return None
    left, right = output_names(body.left), output_names(body.right)
    if left is None or right is None:
        return None
    if k == "cross" or body.type in _BOTH:
        both = left + right
    elif body.type in (J.JOIN_TYPE_LEFT_SEMI, J.JOIN_TYPE_LEFT_ANTI):
        both = left
    elif body.type in (J.JOIN_TYPE_RIGHT_SEMI, J.JOIN_TYPE_RIGHT_ANTI):
        both = right
    else:
        return None
    return sp.emitted(rel, both)


__all__ = ["name_emitted_columns_apart", "name_padded_sides_apart", "output_names"]
