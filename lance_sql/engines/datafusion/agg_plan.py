"""Partial aggregation inside storage-partitioned join groups (two-phase aggregation).

An aggregate of ``sum``, ``count``, ``min``, ``max`` (no DISTINCT, no FILTER, one
grouping set) over a storage-partitioned join, through filters and projections
only, runs per group (the same ``AggregateRel``); the query combines the groups'
rows with a final aggregate (:data:`_COMBINE`, cast back). Each joined row is in
exactly one group.

Eager aggregation (:func:`eager_aggregate`): when every measure reads one side P
only and P is much larger than the other, the group aggregates P by the columns
the rest of the query needs, joins, then combines: the join repeats each
pre-aggregated row as often as each of its rows, so the result is the same. Only
an inner join without post-join filter under plain projections, grouped by and
measuring plain columns, is rewritten.

Partition-wise aggregation: :func:`partition_wise_aggregates`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
from substrait import algebra_pb2, plan_pb2

from lance_sql.engines.datafusion import substrait_plan as sp
from lance_sql.engines.datafusion.join_swap import Estimator
from lance_sql.engines.datafusion.spj_provider import SpjTable
from lance_sql.engines.datafusion.spj_sides import LEFT_TABLE, GroupQuery, SpjSide
from lance_sql.planning.joins.plan import JoinGroup, JoinPlan, plan_join
from lance_sql.spec.time_ranges import datafusion_type_name
from lance_sql.tables.substrait_schema import referenced_positions

Rel = algebra_pb2.Rel
INNER = algebra_pb2.JoinRel.JOIN_TYPE_INNER
#: partial measure -> how the groups' (or a pre-aggregate's) rows combine it
_COMBINE = {"sum": "sum", "count": "sum", "min": "min", "max": "max"}
#: pre-aggregate only a side with at least this many times the other side's rows
MIN_RATIO = 2.0
_DISTINCT = algebra_pb2.AggregateFunction.AGGREGATION_INVOCATION_DISTINCT


def push_partial_aggregates(
    ctx: Any, plan: plan_pb2.Plan, used: Sequence[SpjTable]
) -> list[SpjTable]:
    """Move each decomposable aggregate over an SPJ table into its groups (in place)."""
    tables = {t.name: t for t in used}
    names = sp.function_names(plan)
    out: list[SpjTable] = []
    for rel in list(sp.walk(sp.root_rel(plan))):
        if sp.kind(rel) != "aggregate":
            continue
        table = _spj_below(rel.aggregate.input, tables)
        functions = _measures(rel.aggregate, names)
        if table is None or functions is None or rel.aggregate.common.HasField("emit"):
            continue
        sub = sp.from_substrait(ctx, sp.subplan(plan, rel))
        original = ctx.create_dataframe_from_logical_plan(sub).schema()
        group_plan = sp.subplan(plan, rel)
        join = sp.root_rel(table.group.plan)
        _replace_read(sp.root_rel(group_plan), table.name, join)
        inside = "partial aggregate"
        eager = eager_aggregate(group_plan, (_side_rows(table, "left"), _side_rows(table, "right")))
        if eager is not None:
            inside += f" + {eager} side aggregated before the join"
        group = replace(table.group, plan=group_plan, inside=inside)
        partial = SpjTable.register(
            ctx, "__lance_spj_agg", table.plan, table.left, table.right, group
        )
        final = _final_rel(ctx, plan, partial.name, original, functions)
        if final is None:
            continue
        rel.CopyFrom(final)
        out.append(partial)
    return out


def _side_rows(table: SpjTable, side: str) -> int:
    """Rows of one side's partition tables in the join plan (table metadata; no data read)."""
    ns = (table.left if side == "left" else table.right).namespace
    ids = [r.object_id for g in table.plan.groups for r in getattr(g, side)]
    try:
        return sum(u.estimated_rows or 0 for u in ns.scan_units(ids)) if ids else 0
    except Exception:  # an estimate only: count partition tables instead
        return len(ids)


def _spj_below(rel: algebra_pb2.Rel, tables: dict[str, SpjTable]) -> SpjTable | None:
    """The SPJ table read under ``rel`` through filters and projections only."""
    while sp.kind(rel) in sp.ROW_WISE:
        rel = getattr(rel, sp.kind(rel)).input
    name = sp.table_name(rel)
    return tables.get(name) if name is not None else None


def _measures(agg: algebra_pb2.AggregateRel, names: dict[int, str]) -> list[str] | None:
    """The measures' function names, or None when one of them cannot be split."""
    if len(agg.groupings) > 1:
        return None
    out = []
    for m in agg.measures:
        fn = m.measure
        name = names.get(fn.function_reference, "")
        if (
            name not in _COMBINE
            or fn.invocation == _DISTINCT
            or m.HasField("filter")
            or len(fn.sorts)
            or len(fn.arguments) > 1
        ):
            return None
        out.append(name)
    return out


def _replace_read(rel: algebra_pb2.Rel, table: str, join: algebra_pb2.Rel) -> None:
    for node in sp.walk(rel):
        if sp.table_name(node) == table:  # the read has no output mapping; the join its own
            node.CopyFrom(join)
            return
    raise AssertionError(f"no read of {table}")


def _final_rel(
    ctx: Any, plan: plan_pb2.Plan, table: str, original: pa.Schema, functions: list[str]
) -> algebra_pb2.Rel | None:
    """The final aggregate over ``table`` as a Substrait relation of ``plan``."""
    keys = len(original) - len(functions)
    if keys < 0:
        return None
    items = [f"c{i}" for i in range(keys)]
    for i, fn in enumerate(functions):
        expr = f"{_COMBINE[fn]}(c{keys + i})"
        if fn == "count":  # a group with no row counts 0, not NULL
            expr = f"coalesce({expr}, 0)"
        target = original.field(keys + i).type
        if fn in ("sum", "count") and pa.types.is_decimal(target):
            expr = f"arrow_cast({expr}, '{datafusion_type_name(target)}')"
        items.append(expr)
    group_by = f" GROUP BY {', '.join(items[:keys])}" if keys else ""
    sql = f'SELECT {", ".join(items)} FROM "{table}"{group_by}'
    final = sp.to_substrait(ctx, ctx.sql(sql).optimized_logical_plan())
    rel = algebra_pb2.Rel()
    rel.CopyFrom(sp.root_rel(final))
    _adopt_functions(plan, final, rel)
    return rel


def _adopt_functions(plan: plan_pb2.Plan, other: plan_pb2.Plan, rel: algebra_pb2.Rel) -> None:
    """Re-point ``rel``'s function references (from ``other``) at ``plan``'s declarations."""
    mapping = {a: sp.declare_function(plan, n) for a, n in sp.function_names(other).items()}
    for msg in sp.messages(rel):
        if "function_reference" in msg.DESCRIPTOR.fields_by_name:  # 0 is "unset" in proto3
            msg.function_reference = mapping.get(msg.function_reference, msg.function_reference)


def eager_aggregate(plan: plan_pb2.Plan, rows: tuple[int, int]) -> str | None:
    """Pre-aggregate one join side of the plan's root aggregate (in place); which side, if any.

    ``rows``: estimated rows of the join's (left, right) inputs.
    """
    root = sp.root_rel(plan)
    if sp.kind(root) != "aggregate" or len(root.aggregate.groupings) > 1:
        return None
    agg = root.aggregate
    found = sp.join_below(agg.input, _inner_join_fields, plain=True)
    if found is None:
        return None
    join, to_join = found[0].join, found[1]
    widths = _widths(join)
    assert widths is not None
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


def _inner_join_fields(rel: Rel) -> list[int] | None:
    """The fields of an inner join without post-join filter or output mapping, else None."""
    join = rel.join
    if join.type != INNER or join.HasField("post_join_filter") or not join.HasField("expression"):
        return None
    widths = _widths(join)
    if join.common.HasField("emit") or widths is None:
        return None
    return list(range(widths[0] + widths[1]))


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


#: aggregates estimated to read fewer rows stay DataFusion's
MIN_INPUT_ROWS = 1_000_000


class PartitionAggTable(SpjTable):
    """An aggregate (with the filters and projections above it) run per group of tables."""

    def description(self) -> str:
        groups = self.live_groups()
        n = sum(len(g.left) for g in groups)
        return (
            f"PartitionWiseAggregate: {self.left.name} {self.left.alias}, "
            f"grouped by partition source {self.plan.on[0][0]}, groups={len(groups)}, "
            f"partition_tables={n}, {self.estimate}"
        )


def partition_wise_aggregates(
    ctx: Any, plan: plan_pb2.Plan, namespaces: Mapping[str, Any]
) -> list[PartitionAggTable]:
    """Run every aggregate grouped by its namespace's partition source per table (in place).

    A namespace partitioned by a transform of ``k`` holds all rows of one ``k`` in one
    partition table, so an aggregate grouped by ``k`` is complete per table (any measure,
    HAVING too); which tables hold one value is the join planner's answer for the
    namespace self-joined on ``k``. Applied from :data:`MIN_INPUT_ROWS` estimated rows
    over two or more tables, only in plans rewritten anyway.
    """
    names = sp.function_names(plan)
    estimate = Estimator(names, namespaces)
    out: list[PartitionAggTable] = []
    for rel in sp.walk(sp.root_rel(plan)):  # a replaced subtree is a read: not walked
        found = _candidate(rel, namespaces)
        if found is None:
            continue
        agg, chain, jp = found
        ns = namespaces[chain.table]
        snap = ns._current()
        rows = estimate.guess(agg.aggregate.input)
        output_rows = estimate.guess(rel)
        tables = sum(len(g.left) for g in jp.groups)
        if tables < 2 or rows is None or rows < MIN_INPUT_ROWS:
            continue
        jp = replace(jp, groups=tuple(JoinGroup(g.key, g.left, ()) for g in jp.groups if g.left))
        group_plan = sp.subplan(plan, rel)
        sp.rename_tables(sp.root_rel(group_plan), chain.table, LEFT_TABLE)
        group = GroupQuery.of(ctx, group_plan)
        side = SpjSide(snap, ns.schema, chain.table, ns.name)
        table = PartitionAggTable.register(ctx, "__lance_pagg", jp, side, side, group)
        table.estimate = f"~{round(rows):,} input rows estimated"
        table.output_rows = output_rows  # the join statistics' estimate of this table
        rel.CopyFrom(sp.table_read(ctx, table.name))
        out.append(table)
    return out


def _candidate(
    rel: algebra_pb2.Rel, namespaces: Mapping[str, Any]
) -> tuple[algebra_pb2.Rel, sp.ScanChain, JoinPlan] | None:
    """``rel`` as filters/projections over an aggregate of one namespace scan grouped by a
    partition source column: (the aggregate, its input chain, the self-join plan); else None."""
    while sp.kind(rel) in sp.ROW_WISE:
        body = getattr(rel, sp.kind(rel))
        if sp.has_subquery(body):
            return None
        rel = body.input
    if sp.kind(rel) != "aggregate":
        return None
    agg = rel.aggregate
    chain = sp.scan_chain(agg.input)
    if chain is None or chain.table not in namespaces or sp.has_subquery(agg):
        return None
    if sp.grouping_keys(agg) is None:
        return None
    table = namespaces[chain.table]
    snap = table._current()
    for expr in agg.grouping_expressions:
        ref = sp.field_ref(expr)
        col = chain.columns[ref] if ref is not None and ref < len(chain.columns) else None
        if col is None or col not in table.schema.names:
            continue
        if pa.types.is_floating(table.schema.field(col).type):
            continue  # GROUP BY holds -0.0 and 0.0 in one group, their buckets differ
        try:
            jp = plan_join(snap, snap, on=[(col, col)], how="left")
        except Exception:  # not a column the planner can key on: try the next key
            continue
        if jp.compatible:
            return rel, chain, jp
    return None
