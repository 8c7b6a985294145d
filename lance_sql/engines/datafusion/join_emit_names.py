"""Distinct names for the columns a rebuilt join puts back in their order, and for padded sides.

DataFusion 55 pushes filters through projections and joins by column *name*, so
two columns of one name (a self-join's ``sku``, or an outer join's padded side
and the other side) can get a filter on the wrong one: lost or extra rows
(apache/datafusion#25263, #21246). Such a column becomes ``coalesce(column)``:
same values, type and nullability, a name of its own. Output names come from the
plan's root names, so answers keep theirs.
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
    the NULL-padded side of every outer join names of its own (in place).

    Run after the last pass that builds or swaps joins. Returns how many padded
    sides were named apart: a plan needing only that must still be rewritten.
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
    """Replace ``rel`` by a projection of ``source``'s columns ``mapping`` (None: all), each
    ``coalesce(column)`` where ``rename`` says so (None: every one); 1 if done, else 0."""
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
