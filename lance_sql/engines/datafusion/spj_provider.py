"""A storage-partitioned join as one table: one DataFusion partition per chain of join groups.

The settings that make a per-group join shuffle-free (``repartition_joins``
off) are session-wide, and the user's other joins must be planned as before.
So the join is not planned in the user's session at all: :class:`SpjTable` is
a :class:`ScanUnitDataset` whose units are :class:`GroupJoinUnit` s, and each
unit runs its groups' query (the join, the WHERE conditions and, for an
conditions inside the join: see :mod:`.spj_plan`) in
a private DataFusion context where each side is the namespace restricted to
the group's partition tables. The outer query sees a table with one
partition per unit: groups run in parallel, memory is bounded by a group,
and no ``RepartitionExec`` sits over either namespace scan (those scans live
inside the units).

A group reads each side into memory first (:meth:`ScanUnit.read_table`: one
native pylance read per partition table, off the GIL, decoded in parallel) and
its query scans those rows (:class:`InMemorySideUnit`). What
each side reads is planned once per query (:func:`plan_side_reads`): the
columns the group query needs, the filter DataFusion would push into the
side's scan (applied by Lance while reading; the query applies its WHERE
again) and the partition tables that filter can match. A side holding more
than :data:`MATERIALIZE_ROWS` rows in a group is streamed instead, so a skewed
group cannot exhaust memory. Measured on the appendix F benchmark, reading
the sides into memory took SPJ from 1.08 to 0.97 of the plain join's time,
0.89 with 65,536-row batches (``docs/benchmarks/spj.md``).

Why a dedicated thread pool: units are iterated on DataFusion's tokio worker
threads, where a nested query cannot block on the (global) runtime, and a
nested query whose plan spawns tasks would wait for workers that are all
blocked in units. So each group's query runs with ``collect()`` on a plain
thread of :data:`_POOL`, planned with one target partition and side tables of
one partition each: its plan spawns nothing, so it never needs a tokio worker
(measured: ``execute_stream`` spawns and deadlocks; ``collect`` does not).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import datafusion
import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.engines.datafusion import functions
from lance_sql.engines.datafusion.namespace_provider import (
    EmptyUnit,
    NamespaceTable,
    planner_prune,
)
from lance_sql.engines.datafusion.provider import ScanPlan, ScanUnitDataset, capture_scans
from lance_sql.planning.joins.plan import JoinGroup, JoinPlan
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.scan import (
    ScanUnit,
    conform,
    empty_batches,
    matches_nothing,
    normalize_filter,
    projected_schema,
    with_sql_semantics,
)

#: join types that produce no row in a group whose left / right side has no row
_NEEDS_LEFT = ("inner", "semi", "right_semi", "left", "anti")
_NEEDS_RIGHT = ("inner", "semi", "right_semi", "right", "right_anti")
#: More groups than this are chained into this many units (one DataFusion partition each).
MAX_UNITS = 256
#: The table names of the two sides inside a group's query.
LEFT_TABLE, RIGHT_TABLE = "__spj_left", "__spj_right"
#: A group side with at most this many rows (before filtering) is read into memory.
MATERIALIZE_ROWS = 4_000_000
#: Rows per batch inside a group's query (and per batch of a side read into memory).
#: Measured on the appendix F benchmark: 65536 took 0.80 of the plain join's time
#: where 16384 took 0.89, at the same peak memory.
GROUP_BATCH_ROWS = 65536
#: A nested group query runs with these settings: one partition, nothing spawned.
GROUP_CONFIG = {
    "datafusion.execution.target_partitions": "1",
    "datafusion.execution.batch_size": str(GROUP_BATCH_ROWS),
    "datafusion.optimizer.repartition_joins": "false",
    "datafusion.optimizer.enable_round_robin_repartition": "false",
}

_POOL_LOCK = threading.Lock()
_POOL: ThreadPoolExecutor | None = None


def group_pool() -> ThreadPoolExecutor:
    """The process-wide threads that run group queries (one per core: bounds concurrent groups)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(
                max_workers=max(1, os.cpu_count() or 1), thread_name_prefix="lance-spj"
            )
        return _POOL


@dataclass(frozen=True)
class SpjSide:
    """One side of the join: the pinned namespace, its alias in the query and its table name."""

    namespace: PartitionedNamespace
    schema: pa.Schema  # the registered table's schema (columns matched by field id)
    alias: str
    name: str  # the registered table name (for EXPLAIN)


def private_context() -> Any:
    """A DataFusion context with :data:`GROUP_CONFIG` and the lance-sql functions."""
    config = datafusion.SessionConfig()
    for key, value in GROUP_CONFIG.items():
        config = config.set(key, value)
    ctx = datafusion.SessionContext(config)
    functions.register_functions(ctx)
    return ctx


def group_context(left: SpjSide, right: SpjSide, group: JoinGroup | None) -> Any:
    """A private context with both sides as scans, restricted to ``group`` (all when None).

    Each side prunes with the planner too (the group query's WHERE conditions
    on one side arrive as that side's scan filter), and is one partition.
    """
    ctx = private_context()
    for table, side, refs in (
        (LEFT_TABLE, left, None if group is None else group.left),
        (RIGHT_TABLE, right, None if group is None else group.right),
    ):
        ctx.register_table(table, _side_table(side, refs))
    return ctx


@dataclass(frozen=True)
class SideRead:
    """What every group reads of one side (planned once per query by :func:`plan_side_reads`).

    ``columns``: what the group query needs from the side; ``filter``: the
    conjuncts DataFusion pushes into the side's scan (pre-applied while
    reading, re-applied by the query); ``partitions``: the partition tables
    that filter can match (None: all of them).
    """

    columns: tuple[str, ...]
    filter: pc.Expression | None
    partitions: frozenset[str] | None


def plan_side_reads(left: SpjSide, right: SpjSide, group: GroupQuery) -> dict[str, SideRead]:
    """The :class:`SideRead` of :data:`LEFT_TABLE` and :data:`RIGHT_TABLE` for ``group``."""
    sides = {LEFT_TABLE: left, RIGHT_TABLE: right}
    columns = _needed_columns(sides, group)
    filters = _pushed_filters(sides, group)
    reads = {}
    for name, side in sides.items():
        pruned = planner_prune(filters[name], side.namespace, side.schema)
        reads[name] = SideRead(
            columns[name], filters[name], None if pruned is None else frozenset(pruned)
        )
    return reads


def _needed_columns(sides: dict[str, SpjSide], group: GroupQuery) -> dict[str, tuple[str, ...]]:
    """Each side's columns the query reads, from its plan over empty in-memory sides.

    In-memory tables take no filters, so their scans list every column the
    query uses, including those only its WHERE mentions.
    """
    ctx = private_context()
    for name, side in sides.items():
        ctx.register_record_batches(name, [[_empty_batch(side.schema)]])
    used: dict[str, set[str]] = {name: set() for name in sides}
    seen: set[str] = set()
    pending = [group.dataframe(ctx).optimized_logical_plan()]
    while pending:
        node = pending.pop()
        pending.extend(node.inputs())
        scan = node.to_variant()
        if type(scan).__name__ == "TableScan" and scan.table_name() in used:
            seen.add(scan.table_name())
            used[scan.table_name()].update(col for _, col in scan.projection())
    out = {}
    for name, side in sides.items():
        names = side.schema.names
        if name not in seen:  # not scanned as such (an optimizer rewrite): read everything
            out[name] = tuple(names)
        else:  # no column at all (only rows counted): one column carries the row count
            out[name] = tuple(n for n in names if n in used[name]) or tuple(names[:1])
    return out


def _pushed_filters(
    sides: dict[str, SpjSide], group: GroupQuery
) -> dict[str, pc.Expression | None]:
    """The filter DataFusion pushes into each side's scan (None when several scans differ)."""
    ctx = private_context()
    # scans that only record what DataFusion asks of them: no partition table is opened
    tables = {
        name: ScanUnitDataset(
            side.schema, lambda _f, s=side.schema: ScanPlan.of_units([EmptyUnit(s)]), name=side.name
        )
        for name, side in sides.items()
    }
    for name, table in tables.items():
        ctx.register_table(name, table)
    with capture_scans() as records:
        group.dataframe(ctx).execution_plan()
    out: dict[str, pc.Expression | None] = {}
    for name, table in tables.items():
        mine = [normalize_filter(r.filter) for r in records if r.dataset is table]
        out[name] = mine[0] if mine and all(_same(f, mine[0]) for f in mine) else None
    return out


def _same(a: pc.Expression | None, b: pc.Expression | None) -> bool:
    return a is None if b is None else a is not None and a.equals(b)


def _empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([], schema=schema)


def _side_table(side: SpjSide, refs: Sequence[Any] | None) -> NamespaceTable:
    ids = None if refs is None else [r.object_id for r in refs]
    registered = side.schema

    def prune(filter: pc.Expression | None, ns: PartitionedNamespace) -> list[str] | None:
        pruned = planner_prune(filter, ns, registered)
        if ids is None:
            return pruned
        return list(ids) if pruned is None else [i for i in ids if i in set(pruned)]

    table = NamespaceTable(
        side.namespace, name=side.name, follow_latest=False, prune=prune, partitions=1
    )
    table._lance_schema = registered  # the registered column names (field ids match)
    return table


def run_group(table: SpjTable, group: JoinGroup) -> list[pa.RecordBatch]:
    """One group's query, collected (called on a :func:`group_pool` thread)."""
    ctx = private_context()
    reads = table.side_reads
    for name, side, refs in (
        (LEFT_TABLE, table.left, group.left),
        (RIGHT_TABLE, table.right, group.right),
    ):
        ctx.register_table(name, _group_side(side, refs, None if reads is None else reads[name]))
    return [b for b in table.group.dataframe(ctx).collect() if b.num_rows]


def _group_side(side: SpjSide, refs: Sequence[Any], read: SideRead | None) -> ScanUnitDataset:
    """One side of a group: read into memory, or streamed when unplanned or too large."""
    if read is None:
        return _side_table(side, refs)
    kept = read.partitions
    ids = [r.object_id for r in refs if kept is None or r.object_id in kept]
    units = side.namespace.scan_units(ids, schema=side.schema)
    if sum(u.estimated_rows or 0 for u in units) > MATERIALIZE_ROWS:
        return _side_table(side, refs)
    return _in_memory_side(side, units, read)


def _in_memory_side(side: SpjSide, units: Sequence[ScanUnit], read: SideRead) -> ScanUnitDataset:
    """A group side read into memory now, scanned by DataFusion like any side.

    Not a DataFusion memory table: those carry statistics, and with them
    DataFusion 55 swaps join inputs and pushes WHERE conditions through
    projections whose column names repeat (both sides' ``k``), where its
    physical filter pushdown can move a condition onto the wrong side (seen
    in the differential test: ``a.v > 2`` applied to ``b.v``). A scan of
    unknown size keeps the plan of the streamed side, which the plain join
    has too.
    """
    unit = InMemorySideUnit(units, read, side.schema)
    plan = ScanPlan.of_units([unit], unit.describe())
    return ScanUnitDataset(side.schema, lambda _filter: plan, name=side.name)


class InMemorySideUnit(ScanUnit):
    """Rows of some partition tables read once into memory with a :class:`SideRead`.

    DataFusion plans the group query again over this side and pushes the same
    filter, so the rows are served as read (sliced, not copied). A scan asking
    for anything else (another filter, a column not read) streams from storage
    instead: correct before fast.
    """

    def __init__(self, units: Sequence[ScanUnit], read: SideRead, schema: pa.Schema) -> None:
        self._units = list(units)
        self._read = read
        self._schema = schema
        tables = [u.read_table(read.columns, read.filter) for u in self._units]
        self._table = (
            pa.concat_tables(tables)
            if tables
            else projected_schema(schema, read.columns).empty_table()
        )

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def describe(self) -> str:
        return f"in memory: {self._table.num_rows} rows of {len(self._units)} partition table(s)"

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        batch_size: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        wanted = list(self._schema.names) if columns is None else list(columns)
        filter = normalize_filter(filter)
        if matches_nothing(filter):
            return iter(())
        if not _same(filter, self._read.filter) or not set(wanted) <= set(self._table.column_names):
            return (b for u in self._units for b in u.to_batches(columns, filter, batch_size))
        if not wanted:
            return empty_batches(self._table.num_rows, batch_size)
        chunk = batch_size or GROUP_BATCH_ROWS
        return (b for b in self._table.select(wanted).to_batches(chunk) if b.num_rows)


class GroupQuery(Protocol):
    """The query every group runs over :data:`LEFT_TABLE` and :data:`RIGHT_TABLE`."""

    def dataframe(self, ctx: Any) -> Any:
        """The query planned in ``ctx`` (a :func:`private_context` holding both side tables)."""
        ...

    def describe(self) -> str:
        """What runs inside each group besides the join, for EXPLAIN ("" for nothing)."""
        ...


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
        for batch in self._stream():
            batch = batch.rename_columns(self.schema.names)  # group output -> c0, c1, ...
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


def _rows_only(n: int) -> pa.RecordBatch:
    return pa.table({"_": pa.nulls(n)}).select([]).to_batches()[0]


class SpjTable(ScanUnitDataset):
    """The result of a compatible :class:`JoinPlan` as a table (one unit per group).

    ``group`` is the query each group runs over tables :data:`LEFT_TABLE`
    and :data:`RIGHT_TABLE`; ``schema`` its output schema (see
    :func:`group_schema`).
    """

    def __init__(
        self,
        plan: JoinPlan,
        left: SpjSide,
        right: SpjSide,
        *,
        name: str,
        group: GroupQuery,
        schema: pa.Schema,
        max_units: int = MAX_UNITS,
    ) -> None:
        if not plan.compatible:
            raise ValueError(f"{name}: the join plan is not compatible ({plan.reason})")
        self.plan = plan
        self.left = left
        self.right = right
        self.group = group
        self.max_units = max_units
        self.side_reads: dict[str, SideRead] | None = None
        #: the estimates the decision to storage-partition was taken on (:mod:`.spj_decision`)
        self.estimate = ""
        #: the join this table replaced, its estimated output rows and its EXPLAIN name
        #: (set by :mod:`.spj_plan`; the plain join is put back by ``restore_unaggregated``)
        self.original: Any = None
        self.output_rows: float | None = None
        self.where = name
        super().__init__(schema, self._plan_units, name=name)

    def prepare(self) -> None:
        """Plan what each group reads of each side (:func:`plan_side_reads`).

        Call it on the caller's thread before the query runs: nested DataFusion
        planning cannot run inside DataFusion's runtime (where this table's
        partitions are asked for). Unprepared, or if it cannot be planned,
        every group streams its sides (slower, same rows).
        """
        try:
            self.side_reads = plan_side_reads(self.left, self.right, self.group)
        except Exception:
            self.side_reads = None

    def live_groups(self) -> list[JoinGroup]:
        """The groups that can produce rows, given the partitions each side's filter keeps.

        An inner or semi join needs rows on both sides, a left (anti) join on the
        left, a right (anti) join on the right, a full join on either.
        """
        groups = list(self.plan.groups)
        if self.side_reads is None:
            return groups
        kept = [self.side_reads[LEFT_TABLE].partitions, self.side_reads[RIGHT_TABLE].partitions]
        how = self.plan.how
        need = (how in _NEEDS_LEFT, how in _NEEDS_RIGHT)
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
        k = min(len(groups), self.max_units)
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
        inside = self.group.describe()
        pushed = f", in each group: {inside}" if inside else ""
        estimate = f", {self.estimate}" if self.estimate else ""
        return (
            f"StoragePartitionedJoin: {self.left.name} {self.left.alias} x "
            f"{self.right.name} {self.right.alias}, how={plan.how}, on=[{on}], "
            f"groups={len(groups)}, regrouping={plan.regrouping}, "
            f"partitions left={nl} right={nr}{estimate}{pushed}"
        )


def group_schema(left: SpjSide, right: SpjSide, group: GroupQuery) -> pa.Schema:
    """The output schema of ``group`` (logical planning only: nothing is read)."""
    ctx = group_context(left, right, None)
    return group.dataframe(ctx).schema()


__all__ = [
    "GROUP_CONFIG",
    "LEFT_TABLE",
    "MATERIALIZE_ROWS",
    "RIGHT_TABLE",
    "GroupJoinUnit",
    "GroupQuery",
    "InMemorySideUnit",
    "SideRead",
    "SpjSide",
    "SpjTable",
    "group_pool",
    "group_schema",
    "plan_side_reads",
    "private_context",
    "run_group",
]
