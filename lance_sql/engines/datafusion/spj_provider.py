"""A storage-partitioned join as one table: one DataFusion partition per join group.

The settings that make a per-group join shuffle-free (``repartition_joins``
off) are session-wide, and the user's other joins must be planned as before.
So the join is not planned in the user's session at all: :class:`SpjTable` is
a :class:`ScanUnitDataset` whose units are :class:`GroupJoinUnit` s, and each
unit runs its group's join on its own. The outer query sees a
table with one partition per group: groups run in parallel, memory is bounded
by a group, and no ``RepartitionExec`` sits over either namespace scan (those
scans live inside the units).

Units execute on DataFusion's tokio worker threads, and a nested DataFusion
query there deadlocks (it needs workers of the same global runtime, all
blocked in units). So a group's join runs in Arrow's own hash join
(``pyarrow.Table.join``, Acero: NULL keys never match), on both sides'
partition tables read with the namespace's scan units.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.engines.datafusion.provider import ScanPlan, ScanUnitDataset
from lance_sql.planning.joins.plan import JoinGroup, JoinPlan
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.scan import (
    ScanUnit,
    conform,
    matches_nothing,
    projected_schema,
    with_sql_null_semantics,
)

#: More groups than this are chained into this many units (one DataFusion partition each).
MAX_UNITS = 256


@dataclass(frozen=True)
class SpjSide:
    """One side of the join: the pinned namespace, its alias in the query and its columns."""

    namespace: PartitionedNamespace
    schema: pa.Schema  # the registered table's schema (columns matched by field id)
    alias: str
    name: str  # the registered table name (for EXPLAIN)
    columns: tuple[str, ...]


def spj_column(alias: str, column: str) -> str:
    """The SPJ table's name for ``alias.column`` (quoted in SQL: it contains a dot)."""
    return f"{alias}.{column}"


def spj_schema(left: SpjSide, right: SpjSide, how: str) -> pa.Schema:
    """Left columns then right columns, renamed ``alias.col``; outer sides become nullable."""
    fields = []
    for side, nullable in ((left, how in ("right", "full")), (right, how in ("left", "full"))):
        schema = side.schema
        for c in side.columns:
            f = schema.field(c)
            fields.append(
                pa.field(spj_column(side.alias, c), f.type, f.nullable or nullable, f.metadata)
            )
    return pa.schema(fields)


class GroupJoinUnit(ScanUnit):
    """The join of one or more groups, run in a private shuffle-free DataFusion context."""

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
        sql_filter = None if filter is None else with_sql_null_semantics(filter)
        for batch in self._stream():
            if sql_filter is not None:
                batch = pa.Table.from_batches([batch]).filter(sql_filter).combine_chunks()
                batches = batch.to_batches() or []
            else:
                batches = [batch]
            for b in batches:
                if b.num_rows == 0:
                    continue
                if columns is not None and not columns:
                    yield _rows_only(b.num_rows)
                    continue
                yield conform(b.select(list(out_schema.names)) if columns else b, out_schema)

    def _stream(self) -> Iterator[pa.RecordBatch]:
        t = self._table
        for g in self.groups:
            yield from group_join(g, t.plan, t.left, t.right, t.schema).to_batches()


def _side_table(side: SpjSide, refs: Sequence[object]) -> pa.Table:
    """The group's partition tables of one side, columns renamed ``alias.col``."""
    ids = [r.object_id for r in refs]  # type: ignore[attr-defined]
    cols = list(side.columns)
    names = [spj_column(side.alias, c) for c in cols]
    schema = projected_schema(side.schema, cols)
    batches = []
    if ids:
        for unit in side.namespace.scan_units(ids, schema=side.schema):
            batches.extend(unit.to_batches(cols))
    table = pa.Table.from_batches(batches, schema=schema) if batches else schema.empty_table()
    return table.rename_columns(names)


def group_join(
    group: JoinGroup, plan: JoinPlan, left: SpjSide, right: SpjSide, schema: pa.Schema
) -> pa.Table:
    """One group's join with Arrow's hash join (NULL keys never match)."""
    lt = _side_table(left, group.left)
    rt = _side_table(right, group.right)
    lkeys = [spj_column(left.alias, a) for a, _ in plan.on]
    rkeys = [spj_column(right.alias, b) for _, b in plan.on]
    if plan.how == "inner" and (lt.num_rows == 0 or rt.num_rows == 0):
        return schema.empty_table()
    joined = lt.join(
        rt, lkeys, rkeys, join_type=_ARROW_JOIN[plan.how], coalesce_keys=False, use_threads=False
    )
    return joined.select(schema.names).cast(schema)


_ARROW_JOIN = {"inner": "inner", "left": "left outer", "right": "right outer", "full": "full outer"}


def _rows_only(n: int) -> pa.RecordBatch:
    return pa.table({"_": pa.nulls(n)}).select([]).to_batches()[0]


class SpjTable(ScanUnitDataset):
    """The result of a compatible :class:`JoinPlan` as a table (one unit per group)."""

    def __init__(
        self,
        plan: JoinPlan,
        left: SpjSide,
        right: SpjSide,
        *,
        name: str,
        extra_condition: str | None = None,
        max_units: int = MAX_UNITS,
    ) -> None:
        if not plan.compatible:
            raise ValueError(f"{name}: the join plan is not compatible ({plan.reason})")
        self.plan = plan
        self.left = left
        self.right = right
        self.extra_condition = extra_condition
        self.max_units = max_units
        super().__init__(spj_schema(left, right, plan.how), self._plan_units, name=name)

    def _plan_units(self, _filter: pc.Expression | None) -> ScanPlan:
        groups = list(self.plan.groups)
        k = min(len(groups), self.max_units)
        units: list[ScanUnit] = (
            [GroupJoinUnit(self, groups[i::k]) for i in range(k)]
            if groups
            else [GroupJoinUnit(self, [JoinGroup((), (), ())])]
        )
        return ScanPlan(units, self.description())

    def description(self) -> str:
        plan = self.plan
        on = ", ".join(f"{a}={b}" for a, b in plan.on)
        nl = sum(len(g.left) for g in plan.groups)
        nr = sum(len(g.right) for g in plan.groups)
        extra = f", condition={self.extra_condition}" if self.extra_condition else ""
        return (
            f"StoragePartitionedJoin: {self.left.name} {self.left.alias} x "
            f"{self.right.name} {self.right.alias}, how={plan.how}, on=[{on}]{extra}, "
            f"groups={len(plan.groups)}, regrouping={plan.regrouping}, "
            f"partitions left={nl} right={nr}"
        )


__all__ = ["GroupJoinUnit", "SpjSide", "SpjTable", "spj_column", "spj_schema"]
