"""Partition-wise aggregation: an aggregate grouped by a namespace's partition source, per table.

A namespace partitioned by a transform of ``k`` holds all rows of one ``k`` in
one partition table, so an aggregate grouped by ``k`` is complete per table
(any measure, HAVING too). Which tables hold one value is the join planner's
answer for the namespace self-joined on ``k``. Applied from :data:`MIN_INPUT_ROWS`
estimated rows over two or more tables, only in plans rewritten anyway.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pyarrow as pa
from substrait import algebra_pb2, plan_pb2

from lance_sql.engines.datafusion import substrait_plan as sp
from lance_sql.engines.datafusion.join_swap import Estimator
from lance_sql.engines.datafusion.spj_provider import SpjTable
from lance_sql.engines.datafusion.spj_sides import LEFT_TABLE, GroupQuery, SpjSide
from lance_sql.planning.joins.plan import JoinGroup, JoinPlan, plan_join

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
    """Run every aggregate grouped by its namespace's partition source per table (in place)."""
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
