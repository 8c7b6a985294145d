"""A storage-partitioned join as one table: one DataFusion partition per chain of join groups.

Shuffle-free join settings are session-wide, so each unit runs its groups' query
in a private context. It runs with ``collect()`` on a thread of :data:`_POOL`,
planned with one partition: units are iterated on tokio workers, where a nested
query cannot block on the runtime, and a plan that spawns tasks would deadlock.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Self

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.engines.datafusion.provider import ScanUnitDataset
from lance_sql.engines.datafusion.spj_sides import (
    LEFT_TABLE,
    RIGHT_TABLE,
    GroupQuery,
    SideRead,
    SpjSide,
    group_context,
    group_schema,
    plan_side_reads,
)
from lance_sql.engines.datafusion.sql_rewrite import fresh_table_name, register_query_table
from lance_sql.planning.joins.plan import PRESERVED, JoinGroup, JoinPlan
from lance_sql.planning.scan_plan import ScanPlan
from lance_sql.tables.dataset_cache import PerProcess
from lance_sql.tables.scan import (
    ScanUnit,
    conform,
    empty_batches,
    matches_nothing,
    projected_schema,
    with_sql_semantics,
)

#: More groups than this are chained into this many units (one DataFusion partition each).
MAX_UNITS = 256

#: The process-wide threads that run group queries (one per core: bounds concurrent groups).
group_pool = PerProcess(
    lambda: ThreadPoolExecutor(max(1, os.cpu_count() or 1), thread_name_prefix="lance-spj")
)


def run_group(table: SpjTable, group: JoinGroup) -> list[pa.RecordBatch]:
    """One group's query, collected (called on a :func:`group_pool` thread)."""
    ctx = group_context(table.left, table.right, group, table.side_reads)
    return [b for b in table.group.dataframe(ctx).collect() if b.num_rows]


class GroupJoinUnit(ScanUnit):
    """The query of one or more groups, each run in a private shuffle-free DataFusion context."""

    def __init__(self, table: SpjTable, groups: Sequence[JoinGroup]) -> None:
        self._table = table
        self.groups = tuple(groups)

    @property
    def schema(self) -> pa.Schema:
        return self._table.schema

    def describe(self) -> str:
        n = sum(len(g.left) + len(g.right) for g in self.groups)
        return f"GroupJoin(groups={len(self.groups)}, partition_tables={n})"

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        batch_size: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        if matches_nothing(filter):
            return
        out_schema = projected_schema(self.schema, columns)
        sql_filter = None if filter is None else with_sql_semantics(filter, self.schema)
        for b in self._stream():
            b = b.rename_columns(self.schema.names)  # group output -> c0, c1, ...
            if sql_filter is not None:
                b = b.filter(sql_filter)
            if b.num_rows == 0:
                continue
            if columns is not None and not columns:
                yield from empty_batches(b.num_rows, None)
                continue
            b = conform(b, self.schema)
            yield b.select(list(out_schema.names)) if columns else b

    def _stream(self) -> Iterator[pa.RecordBatch]:
        """Run the groups one after the other; the next group starts while this one is consumed."""
        pool = group_pool()
        pending: Future[list[pa.RecordBatch]] | None = None
        for i, g in enumerate(self.groups):
            current = pending or pool.submit(run_group, self._table, g)
            pending = None
            batches = current.result()
            if i + 1 < len(self.groups):
                pending = pool.submit(run_group, self._table, self.groups[i + 1])
            yield from batches
            del batches


class SpjTable(ScanUnitDataset):
    """The result of a compatible :class:`JoinPlan` as a table (one unit per group)."""

    def __init__(
        self,
        plan: JoinPlan,
        left: SpjSide,
        right: SpjSide,
        *,
        name: str,
        group: GroupQuery,
    ) -> None:
        if not plan.compatible:
            raise ValueError(f"{name}: the join plan is not compatible ({plan.reason})")
        self.plan = plan
        self.left = left
        self.right = right
        self.group = group
        self.side_reads: dict[str, SideRead] | None = None
        #: the estimates the decision to storage-partition was taken on (:func:`.spj_plan.decide`)
        self.estimate = ""
        #: the join's estimated output rows and its EXPLAIN name (set by :mod:`.spj_plan`)
        self.output_rows: float | None = None
        self.where = name
        super().__init__(group_schema(left, right, group), self._plan_units, name=name)

    @classmethod
    def register(
        cls, ctx: Any, prefix: str, plan: JoinPlan, left: SpjSide, right: SpjSide, group: GroupQuery
    ) -> Self:
        """A new table of ``group``, registered in ``ctx`` for this query only."""
        name = fresh_table_name(prefix)
        table = cls(plan, left, right, name=name, group=group)
        register_query_table(ctx, name, table)
        return table

    def prepare(self) -> None:
        """Plan what each group reads of each side, on the caller's thread (nested planning
        cannot run inside DataFusion's runtime); unprepared, every group streams its sides."""
        try:
            self.side_reads = plan_side_reads(self.left, self.right, self.group)
        except Exception:
            self.side_reads = None

    def live_groups(self) -> list[JoinGroup]:
        """The groups that can produce rows, given the partitions each side's filter keeps."""
        groups = list(self.plan.groups)
        if self.side_reads is None:
            return groups
        kept = [self.side_reads[LEFT_TABLE].partitions, self.side_reads[RIGHT_TABLE].partitions]
        # a side is needed unless the other side's unmatched rows are kept
        keep_left, keep_right = PRESERVED[self.plan.how]
        need = (not keep_right, not keep_left)
        out = []
        for g in groups:
            has = [
                any(keep is None or r.object_id in keep for r in refs)
                for keep, refs in zip(kept, (g.left, g.right), strict=True)
            ]
            if (need[0] and not has[0]) or (need[1] and not has[1]) or not any(has):
                continue
            out.append(g)
        return out

    def _plan_units(self, _filter: pc.Expression | None) -> ScanPlan:
        groups = self.live_groups()
        k = min(len(groups), MAX_UNITS)
        units: list[ScanUnit] = (
            [GroupJoinUnit(self, groups[i::k]) for i in range(k)]
            if groups
            else [GroupJoinUnit(self, [JoinGroup((), (), ())])]
        )
        return ScanPlan.of_units(units, self.description())

    def description(self) -> str:
        plan = self.plan
        on = ", ".join(f"{a}={b}" for a, b in plan.on)
        groups = self.live_groups()
        nl = sum(len(g.left) for g in groups)
        nr = sum(len(g.right) for g in groups)
        inside = self.group.inside
        pushed = f", in each group: {inside}" if inside else ""
        estimate = f", {self.estimate}" if self.estimate else ""
        return (
            f"StoragePartitionedJoin: {self.left.name} {self.left.alias} x "
            f"{self.right.name} {self.right.alias}, how={plan.how}, on=[{on}], "
            f"groups={len(groups)}, regrouping={plan.regrouping}, "
            f"partitions left={nl} right={nr}{estimate}{pushed}"
        )
