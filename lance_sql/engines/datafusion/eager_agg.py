"""Eager aggregation inside a storage-partitioned join group: aggregate one side before the join.

When every measure reads one side P only and P is much larger than the other,
the group aggregates P by the columns the rest of the query needs, joins, then
combines (``sum`` of sums and of counts, ``min`` of mins, ``max`` of maxes): the
join repeats each pre-aggregated row as often as each of its rows, so the result
is the same. Only a narrow shape is rewritten: an inner join without post-join
filter, under plain projections, grouped by and measuring plain columns.
"""

from __future__ import annotations

from substrait import algebra_pb2, plan_pb2

from lance_sql.engines.datafusion import substrait_plan as sp
from lance_sql.tables.substrait_schema import referenced_positions

Rel = algebra_pb2.Rel
INNER = algebra_pb2.JoinRel.JOIN_TYPE_INNER
#: partial measure -> how the join's output combines it
_COMBINE = {"sum": "sum", "count": "sum", "min": "min", "max": "max"}
#: pre-aggregate only a side with at least this many times the other side's rows
MIN_RATIO = 2.0


def eager_aggregate(plan: plan_pb2.Plan, rows: tuple[int, int]) -> str | None:
    """Pre-aggregate one join side of the plan's root aggregate (in place); which side, if any.

    ``rows``: estimated rows of the join's (left, right) inputs.
    """
    root = sp.root_rel(plan)
    if sp.kind(root) != "aggregate" or len(root.aggregate.groupings) > 1:
        return None
    agg = root.aggregate
    found = _join_below(agg.input)
    if found is None:
        return None
    join, to_join, widths = found
    try:  # positions are rewritten below: a subquery or outer reference cannot be
        sp.field_references(join.expression)
    except ValueError:
        return None
    names = sp.function_names(plan)
    measure_sides = _measure_sides(agg, to_join, widths[0], names)
    if measure_sides is None:
        return None
    side = _choose(measure_sides, rows)
    if side is None:
        return None
    keys = [_resolve(e, to_join) for e in agg.grouping_expressions]
    if any(k is None for k in keys):
        return None
    _rewrite(plan, root, join, side, widths, [k for k in keys if k is not None], to_join)
    return "left" if side == 0 else "right"


def _join_below(
    rel: Rel,
) -> tuple[algebra_pb2.JoinRel, list[int], tuple[int, int]] | None:
    """The inner join under plain projections, aggregate-input field -> join-input field,
    and the widths of the join's inputs."""
    chain: list[Rel] = []
    while sp.kind(rel) == "project":
        chain.append(rel)
        rel = rel.project.input
    if sp.kind(rel) != "join":
        return None
    join = rel.join
    if join.type != INNER or join.HasField("post_join_filter") or not join.HasField("expression"):
        return None
    widths = _widths(join)
    if join.common.HasField("emit") or widths is None:
        return None
    fields = list(range(widths[0] + widths[1]))
    for proj in reversed(chain):
        if any(sp.field_ref(e) is None for e in proj.project.expressions):
            return None
        fields = sp.through(proj, fields)
    return join, fields, widths


def _widths(join: algebra_pb2.JoinRel) -> tuple[int, int] | None:
    left, right = sp.scan_chain(join.left), sp.scan_chain(join.right)
    if left is None or right is None:
        return None
    return len(left.columns), len(right.columns)


def _resolve(expr: algebra_pb2.Expression, to_join: list[int]) -> int | None:
    ref = sp.field_ref(expr)
    return None if ref is None or ref >= len(to_join) else to_join[ref]


def _measure_sides(
    agg: algebra_pb2.AggregateRel, to_join: list[int], n_left: int, names: dict[int, str]
) -> set[int] | None:
    """The join sides (0 left, 1 right) the measures read; None when one cannot be moved."""
    sides: set[int] = set()
    for m in agg.measures:
        fn = m.measure
        if names.get(fn.function_reference) not in _COMBINE or len(fn.arguments) > 1:
            return None
        for arg in fn.arguments:
            if arg.value.WhichOneof("rex_type") == "literal":
                continue
            field = _resolve(arg.value, to_join)
            if field is None:
                return None
            sides.add(0 if field < n_left else 1)
    return sides


def _choose(sides: set[int], rows: tuple[int, int]) -> int | None:
    candidates = [s for s in (0, 1) if not sides or sides == {s}]
    for side in candidates:
        other = rows[1 - side]
        if rows[side] >= MIN_RATIO * max(other, 1):
            return side
    return None


def _rewrite(
    plan: plan_pb2.Plan,
    root: Rel,
    join: algebra_pb2.JoinRel,
    side: int,
    widths: tuple[int, int],
    keys: list[int],
    to_join: list[int],
) -> None:
    n_left = widths[0]
    base = 0 if side == 0 else n_left
    width = widths[side]

    def mine(f: int) -> bool:
        return base <= f < base + width

    need = sorted({f - base for f in [*referenced_positions(join.expression), *keys] if mine(f)})
    agg = root.aggregate
    # the pre-aggregate of side P: group by the needed columns, the measures over P
    pre = Rel()
    pa_ = pre.aggregate
    pa_.input.CopyFrom(join.left if side == 0 else join.right)
    for f in need:
        pa_.grouping_expressions.add().CopyFrom(sp.field_reference(f))
    pa_.groupings.add().expression_references.extend(range(len(need)))
    for m in agg.measures:
        new = pa_.measures.add()
        new.CopyFrom(m)
        for arg in new.measure.arguments:
            if arg.value.WhichOneof("rex_type") != "literal":
                field = _resolve(arg.value, to_join)
                assert field is not None
                arg.value.CopyFrom(sp.field_reference(field - base))
    pre_width = len(need) + len(agg.measures)

    def new_position(f: int) -> int:
        if mine(f):
            return (0 if side == 0 else n_left) + need.index(f - base)
        if side == 0:  # the right side follows the pre-aggregate
            return pre_width + (f - n_left)
        return f  # the left side is unchanged

    new_join = Rel()
    nj = new_join.join
    nj.CopyFrom(join)
    if side == 0:
        nj.left.CopyFrom(pre)
    else:
        nj.right.CopyFrom(pre)
    for ref in sp.field_references(nj.expression):
        ref.direct_reference.struct_field.field = new_position(
            ref.direct_reference.struct_field.field
        )
    partial_at = (0 if side == 0 else n_left) + len(need)
    names = sp.function_names(plan)
    combined = Rel()
    ca = combined.aggregate
    ca.common.CopyFrom(agg.common)
    ca.input.CopyFrom(new_join)
    for f in keys:
        ca.grouping_expressions.add().CopyFrom(sp.field_reference(new_position(f)))
    ca.groupings.add().expression_references.extend(range(len(keys)))
    for i, m in enumerate(agg.measures):
        new = ca.measures.add()
        new.measure.function_reference = sp.declare_function(
            plan, _COMBINE[names[m.measure.function_reference]]
        )
        new.measure.invocation = algebra_pb2.AggregateFunction.AGGREGATION_INVOCATION_ALL
        new.measure.phase = m.measure.phase
        new.measure.arguments.add().value.CopyFrom(sp.field_reference(partial_at + i))
    root.CopyFrom(combined)
