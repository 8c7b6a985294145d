"""Distinct names for the columns a rebuilt join puts back in their order, and for padded sides.

lance-sql's join passes (:mod:`.join_order`, :mod:`.join_swap`) rebuild join
trees and restore the original column order with an ``emit``. DataFusion's
Substrait consumer turns that emit into a projection whose columns keep their
table's names, so after a self-join it holds two columns of one name
(``left.sku`` and ``right.sku`` are both ``sku`` in the physical plan).
DataFusion 55 pushes join dynamic filters through a projection by column *name*
and can put a semi join's filter on the wrong ``sku``: rows are lost
(apache/datafusion#25263, fixed upstream after 55 by matching positions).

:func:`name_columns_apart` therefore writes each such emit as a
projection in which every column whose name was already emitted is
``coalesce(column)``: the same values, type and nullability (DataFusion
simplifies it back to the column, keeping the name ``coalesce(right.sku)``),
but a name of its own. The query's output names come from the plan's root
names, so answers keep their names.

A WHERE condition on the NULL-padded side of an outer join stays above the
join. DataFusion 55's physical filter pushdown moves it through the join by
column *name*, so when the other side has a column of the same name (``a RIGHT
JOIN b ... WHERE a.c1 IS NULL``, with ``b.c1`` read too) the condition can land
on ``b.c1``: wrong rows (apache/datafusion#21246, fixed after 55; plain
DataFusion gives them too). With ``padded_sides``, each column of a padded
input whose name the other side also outputs (or whose name is unknown)
becomes ``coalesce(column)`` the same way: the condition then names a column
only the padded side has, and stays above.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from substrait import algebra_pb2, plan_pb2

from lance_sql.engines.datafusion import substrait_plan as sp

Rel = algebra_pb2.Rel
J = algebra_pb2.JoinRel
_OUTER = (J.JOIN_TYPE_LEFT, J.JOIN_TYPE_RIGHT, J.JOIN_TYPE_OUTER)
_BOTH = (J.JOIN_TYPE_INNER, *_OUTER)


def name_columns_apart(
    plan: plan_pb2.Plan, width: Callable[[Rel], int], *, padded_sides: bool
) -> int:
    """Give repeated names apart in every join ``emit`` of ``plan``, and with ``padded_sides``
    the NULL-padded side of every outer join names of its own (in place; see the module).

    Run once, after the last pass that builds or swaps joins. Returns how many
    padded sides were named apart: a plan needing only that must still be rewritten.
    """
    return _apart_under(plan, sp.root_rel(plan), width, padded_sides)


def _apart_under(
    plan: plan_pb2.Plan, rel: Rel, width: Callable[[Rel], int], padded_sides: bool
) -> int:
    # inputs first: renaming copies an input, so the joins inside it are done already
    done = sum(_apart_under(plan, child, width, padded_sides) for child in sp.inputs(rel))
    if sp.kind(rel) != "join":
        return done
    if padded_sides and rel.join.type in _OUTER:
        done += _padded_apart(plan, rel.join, width)
    if rel.join.common.HasField("emit"):
        _emitted_apart(plan, rel, width)
    return done


def _emitted_apart(plan: plan_pb2.Plan, rel: Rel, width: Callable[[Rel], int]) -> int:
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
    return _project_renamed(plan, rel, join, names, mapping, repeated, width)


def _padded_apart(plan: plan_pb2.Plan, body: Any, width: Callable[[Rel], int]) -> int:
    """The padded input of outer join ``body`` with the names the other side has renamed."""
    # a FULL join pads both sides: naming one side apart makes every name distinct
    padded = body.left if body.type == J.JOIN_TYPE_RIGHT else body.right
    other = body.right if body.type == J.JOIN_TYPE_RIGHT else body.left
    names, others = output_names(padded), output_names(other)
    taken = set(others or ())
    rename = None if names is None or others is None else [n is None or n in taken for n in names]
    original = Rel()
    original.CopyFrom(padded)
    return _project_renamed(plan, padded, original, names, None, rename, width)


def _project_renamed(
    plan: plan_pb2.Plan,
    rel: Rel,
    source: Rel,
    names: list[Any] | None,
    mapping: list[int] | None,
    rename: list[bool] | None,
    width: Callable[[Rel], int],
) -> int:
    """Replace ``rel`` (in place) by a projection of ``source``'s columns ``mapping`` (None:
    all), each ``coalesce(column)`` where ``rename`` says so (None: every one); 1, or 0 when
    none is renamed, ``source``'s width is unknown or the plan cannot declare the function."""
    if rename is not None and not any(rename):
        return 0
    try:
        n = len(names) if names is not None else width(source)
        coalesce = sp.declare_function(plan, "coalesce")
    except Exception:  # an input DataFusion cannot plan alone; a plan without functions
        return 0
    mapping = list(range(n)) if mapping is None else mapping
    out = Rel()
    out.project.input.CopyFrom(source)
    for i, renamed in zip(mapping, rename or [True] * n, strict=True):
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


def output_fields(rel: Rel, read: Callable[[Rel], list[Any] | None]) -> list[Any] | None:
    """What each column ``rel`` outputs is, read from the message: ``read(rel)`` for a read,
    then through filters, projections (None: a computed column), limits, sorts and joins.

    None where the message does not say (aggregates, sets, extensions, mark joins).
    """
    k = sp.kind(rel)
    if k == "read":
        return read(rel)
    body = getattr(rel, k, None)
    if k in ("filter", "project", "fetch", "sort"):
        below = output_fields(body.input, read)
        return None if below is None else sp.through(rel, below)
    if k not in ("join", "cross"):
        return None
    left, right = output_fields(body.left, read), output_fields(body.right, read)
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


def output_names(rel: Rel) -> list[str | None] | None:
    """The column names ``rel`` outputs (None: a computed column), read from the message."""
    return output_fields(rel, _read_names)


def _read_names(rel: Rel) -> list[str | None] | None:
    chain = sp.scan_chain(rel)
    return None if chain is None else list(chain.columns)
