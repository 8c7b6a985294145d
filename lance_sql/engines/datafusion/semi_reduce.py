"""Semi-join reduction of grouped aggregates: aggregate only the groups a join can match.

A join ``other.k = agg.g`` (``agg`` grouping ``X`` by column ``g``) gets ``X``
replaced by ``X LEFT SEMI JOIN S ON X.g = S.k``, ``S`` the smallest relation under
``other`` that ``k`` comes from unchanged. A removed group's key is in no row of
``other`` and the join drops unmatched aggregate rows; NULL never matches ``=``.
Applied when ``S`` filters rows and is estimated 1/:data:`MIN_REDUCTION` of ``X``
(TPC-H q17, q20); ``S`` is then computed twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from substrait import algebra_pb2, plan_pb2

from lance_sql.engines.datafusion import substrait_plan as sp
from lance_sql.engines.datafusion.join_order import filters_rows
from lance_sql.engines.datafusion.join_swap import Estimator

Rel = algebra_pb2.Rel
J = algebra_pb2.JoinRel

#: apply when the reducing input is estimated this many times smaller than the aggregated one
MIN_REDUCTION = 100.0

#: join type -> the sides whose unmatched rows the join drops (where an aggregate may shrink)
_DROPS_UNMATCHED = {
    J.JOIN_TYPE_INNER: ("left", "right"),
    J.JOIN_TYPE_LEFT: ("right",),
    J.JOIN_TYPE_LEFT_SEMI: ("right",),
    J.JOIN_TYPE_LEFT_ANTI: ("right",),
    J.JOIN_TYPE_RIGHT: ("left",),
    J.JOIN_TYPE_RIGHT_SEMI: ("left",),
    J.JOIN_TYPE_RIGHT_ANTI: ("left",),
}


def reduce_aggregate_inputs(
    plan: plan_pb2.Plan, estimate: Estimator, width: Callable[[Rel], int]
) -> list[str]:
    """Semi-join reduce the aggregates joined on their grouping keys (in place); what was done."""
    names = sp.function_names(plan)
    done: list[str] = []
    for rel in list(sp.walk(sp.root_rel(plan))):
        if sp.kind(rel) != "join" or not rel.join.HasField("expression"):
            continue
        join = rel.join
        sides = _DROPS_UNMATCHED.get(join.type, ())
        if not sides:
            continue
        nl = width(join.left)
        pairs = [
            p for c in sp.conjuncts(join.expression, names) if (p := sp.equality_fields(c, names))
        ]
        for side in sides:
            line = _reduce(plan, join, side, nl, pairs, estimate, width)
            if line:
                done.append(line)
                break
    return done


def _reduce(
    plan: plan_pb2.Plan,
    join: algebra_pb2.JoinRel,
    side: str,
    nl: int,
    pairs: list[tuple[int, int]],
    estimate: Estimator,
    width: Callable[[Rel], int],
) -> str | None:
    """Reduce the aggregate under ``side`` of ``join`` by the other side; the EXPLAIN line."""
    agg_side = getattr(join, side)
    other = join.right if side == "left" else join.left
    keys: list[tuple[int, int]] = []  # (field of the aggregate side, field of the other side)
    for a, b in pairs:
        lo, hi = min(a, b), max(a, b)
        if lo >= nl or hi < nl:
            continue  # both fields on one side
        keys.append((lo, hi - nl) if side == "left" else (hi - nl, lo))
    # the keys that are grouping keys (q2 also joins on the aggregate's measure): every
    # one leads to the same aggregate, the first one below ``agg_side``
    found = [(f, o) for k, o in keys if (f := _aggregate_columns(agg_side, [k], width))]
    if not found:
        return None
    agg, columns = found[0][0][0], [f[1][0] for f, _ in found]
    x = agg.aggregate.input
    reducer = _smallest_source(other, [o for _, o in found], estimate, width)
    if reducer is None:
        return None
    small, small_fields = reducer
    if calls_volatile(small, sp.function_names(plan)):
        return None  # computed twice, it could keep other rows the second time
    x_rows, s_rows = estimate.rows(x), estimate.rows(small)
    if x_rows is None or s_rows is None or s_rows * MIN_REDUCTION > x_rows:
        return None
    wx = width(x)
    conds = [
        sp.boolean_call(plan, "equal", [sp.field_reference(c), sp.field_reference(wx + s)])
        for c, s in zip(columns, small_fields, strict=True)
    ]
    semi = Rel()
    semi.join.type = J.JOIN_TYPE_LEFT_SEMI
    semi.join.left.CopyFrom(x)
    semi.join.right.CopyFrom(small)
    semi.join.expression.CopyFrom(sp.conjunction(plan, conds))
    agg.aggregate.input.CopyFrom(semi)
    return (
        f"aggregate input semi-join reduced: only groups the join can match are aggregated "
        f"(~{s_rows:,.0f} rows reduce ~{x_rows:,.0f} estimated)"
    )


def _natural(body: object, field: int) -> int:
    """``field`` of a relation's output as an index of its output before its emit mapping."""
    common = body.common  # type: ignore[attr-defined]
    return common.emit.output_mapping[field] if common.HasField("emit") else field


def _aggregate_columns(
    rel: Rel, fields: list[int], width: Callable[[Rel], int]
) -> tuple[Rel, list[int]] | None:
    """The aggregate ``fields`` of ``rel`` are grouping keys of, and their input columns
    (not below a limit or join: removing groups would change which rows those keep)."""
    for below, at in _descend(rel, fields, width, reducer=False):
        if sp.kind(below) == "aggregate":
            body = below.aggregate
            n = sp.grouping_keys(body)
            at = [_natural(body, f) for f in at]
            if n is None or any(f >= n for f in at):
                return None  # several grouping sets, or a measure rather than a grouping key
            cols = [c for f in at if (c := sp.field_ref(body.grouping_expressions[f])) is not None]
            return (below, cols) if len(cols) == len(at) else None
    return None


def _smallest_source(
    rel: Rel, fields: list[int], estimate: Estimator, width: Callable[[Rel], int]
) -> tuple[Rel, list[int]] | None:
    """The relation below ``rel`` with the fewest estimated rows holding every value of
    ``fields`` unchanged, and the fields there."""
    best: tuple[Rel, list[int]] | None = None
    best_rows: float | None = None
    for below, at in _descend(rel, fields, width, reducer=True):
        rows = estimate.rows(below)
        if rows is not None and (best_rows is None or rows < best_rows) and filters_rows(below):
            best, best_rows = (below, list(at)), rows
    return best


def _descend(
    rel: Rel, fields: list[int], width: Callable[[Rel], int], *, reducer: bool
) -> Iterator[tuple[Rel, list[int]]]:
    """``rel`` and each relation below it that outputs the values of ``fields`` unchanged,
    with those fields there (``reducer``: also through limits and joins, keeping a subset)."""
    while True:
        yield rel, fields
        k = sp.kind(rel)
        body = getattr(rel, k, None)
        if body is None:
            return
        if k == "project":  # each output field: the input field it is (None: computed)
            origin = sp.through(rel, list(range(width(body.input))))
            mapped = [origin[f] for f in fields]
            if None in mapped:
                return
            rel, fields = body.input, mapped
            continue
        fields = [_natural(body, f) for f in fields]
        if k in ("filter", "sort") or (k == "fetch" and reducer):
            rel = body.input
        elif k == "join" and reducer:
            n = width(body.left)
            if body.type in sp.RIGHT_ONLY_JOINS:
                rel = body.right
            elif all(f < n for f in fields):
                rel = body.left
            elif all(f >= n for f in fields) and body.type not in _LEFT_OUTPUT:
                rel, fields = body.right, [f - n for f in fields]
            else:
                return
        elif k == "aggregate" and (n := sp.grouping_keys(body)) is not None:
            cols = [sp.field_ref(body.grouping_expressions[f]) if f < n else None for f in fields]
            if any(c is None for c in cols):
                return
            rel, fields = body.input, [c for c in cols if c is not None]
        else:
            return


#: joins whose output starts with their left input's columns and holds no right-side one
_LEFT_OUTPUT = (*sp.LEFT_ONLY_JOINS, J.JOIN_TYPE_LEFT_MARK)


#: functions whose value may differ between two evaluations of one relation
VOLATILE = frozenset({"random", "rand", "uuid", "now", "current_time", "current_timestamp"})


def calls_volatile(rel: Any, names: dict[int, str]) -> bool:
    """Whether ``rel`` calls a :data:`VOLATILE` function (scalar, aggregate or window), or
    one ``names`` does not know: computed twice, it could return other rows the second time."""
    calls = [m.function_reference for m in sp.messages(rel) if hasattr(m, "function_reference")]
    return any(names.get(f) in (None, *VOLATILE) for f in calls)
