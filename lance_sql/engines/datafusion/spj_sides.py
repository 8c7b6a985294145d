"""The two sides of a storage-partitioned join's groups, and the private context they run in.

Each group's query runs in a :func:`private_context` over :data:`LEFT_TABLE` and
:data:`RIGHT_TABLE`: the join's namespaces restricted to the group's partition
tables. What each side reads is planned once per query (:func:`plan_side_reads`);
a group reads each side into memory unless it holds more than
:data:`MATERIALIZE_ROWS` rows, so a skewed group cannot exhaust memory.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import datafusion
import pyarrow as pa
import pyarrow.compute as pc
from substrait import plan_pb2

from lance_sql.engines.datafusion import functions
from lance_sql.engines.datafusion import substrait_plan as sp
from lance_sql.engines.datafusion.namespace_plans import planner_prune
from lance_sql.engines.datafusion.namespace_provider import NamespaceTable
from lance_sql.engines.datafusion.provider import ScanUnitDataset, capture_scans
from lance_sql.engines.datafusion.prune_plan import preorder
from lance_sql.engines.datafusion.sql_rewrite import register_rows
from lance_sql.planning.joins.plan import JoinGroup
from lance_sql.planning.scan_plan import ScanPlan
from lance_sql.tables.chain import ChainedUnit
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.scan import (
    ScanUnit,
    empty_batches,
    matches_nothing,
    normalize_filter,
    projected_schema,
)

#: The table names of the two sides inside a group's query.
LEFT_TABLE, RIGHT_TABLE = "__spj_left", "__spj_right"
#: A group side with at most this many rows (before filtering) is read into memory.
MATERIALIZE_ROWS = 4_000_000
#: Rows per batch inside a group's query (and per batch of a side read into memory).
GROUP_BATCH_ROWS = 65536
#: A nested group query runs with these settings: one partition, nothing spawned.
GROUP_CONFIG = {
    "datafusion.execution.target_partitions": "1",
    "datafusion.execution.batch_size": str(GROUP_BATCH_ROWS),
    "datafusion.optimizer.repartition_joins": "false",
    "datafusion.optimizer.enable_round_robin_repartition": "false",
}


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


def group_context(
    left: SpjSide,
    right: SpjSide,
    group: JoinGroup | None,
    reads: dict[str, SideRead] | None = None,
) -> Any:
    """A private context with both sides as scans, restricted to ``group`` (all when None),
    read as ``reads`` plans them (streamed when None)."""
    ctx = private_context()
    for table, side, refs in (
        (LEFT_TABLE, left, None if group is None else group.left),
        (RIGHT_TABLE, right, None if group is None else group.right),
    ):
        ctx.register_table(table, group_side(side, refs, None if reads is None else reads[table]))
    return ctx


@dataclass(frozen=True)
class SideRead:
    """What every group reads of one side.

    ``filter``: what DataFusion pushes into the side's scan (re-applied by the
    query); ``partitions``: the partition tables it can match (None: all).
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
    """Each side's columns the query reads, from its plan over empty in-memory sides
    (which take no filters, so their scans list the WHERE's columns too)."""
    ctx = private_context()
    for name, side in sides.items():
        register_rows(ctx, name, side.schema.empty_table())
    used: dict[str, set[str]] = {name: set() for name in sides}
    seen: set[str] = set()
    for node in preorder(group.dataframe(ctx).optimized_logical_plan()):
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
            side.schema,
            lambda _f, s=side.schema: ScanPlan.of_units([ChainedUnit([], s)]),
            name=side.name,
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


def side_table(side: SpjSide, refs: Sequence[Any] | None) -> NamespaceTable:
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


def group_side(side: SpjSide, refs: Sequence[Any] | None, read: SideRead | None) -> ScanUnitDataset:
    """One side of a group: read into memory, or streamed when unplanned or too large."""
    if read is None or refs is None:
        return side_table(side, refs)
    kept = read.partitions
    ids = [r.object_id for r in refs if kept is None or r.object_id in kept]
    units = side.namespace.scan_units(ids, schema=side.schema)
    if sum(u.estimated_rows or 0 for u in units) > MATERIALIZE_ROWS:
        return side_table(side, refs)
    return _in_memory_side(side, units, read)


def _in_memory_side(side: SpjSide, units: Sequence[ScanUnit], read: SideRead) -> ScanUnitDataset:
    """A group side read into memory now, scanned by DataFusion like any side.

    Not a DataFusion memory table: with its statistics DataFusion's filter
    pushdown can move a condition onto the wrong side of repeated names
    (``a.v > 2`` applied to ``b.v``).
    """
    unit = InMemorySideUnit(units, read, side.schema)
    plan = ScanPlan.of_units([unit], unit.describe())
    return ScanUnitDataset(side.schema, lambda _filter: plan, name=side.name)


class InMemorySideUnit(ScanUnit):
    """Rows of some partition tables read once into memory with a :class:`SideRead`.

    A scan asking for another filter or a column not read streams from storage.
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


@dataclass(frozen=True)
class GroupQuery:
    """The query every group runs: a join subtree (Substrait) over the two side tables.

    ``udfs``: the user's scalar UDFs it calls; ``inside``: what runs in each group
    besides the join (EXPLAIN); ``tables``: other tables the join's inputs read.
    """

    plan: plan_pb2.Plan
    udfs: tuple[Any, ...] = ()
    inside: str = ""
    tables: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, ctx: Any, plan: plan_pb2.Plan) -> GroupQuery:
        """The query of ``plan`` with the UDFs and other tables of ``ctx`` it reads."""
        reads = {t for r in sp.walk(sp.root_rel(plan)) if (t := sp.table_name(r)) is not None}
        tables = tuple(
            (n, ctx.table_provider(n)) for n in sorted(reads - {LEFT_TABLE, RIGHT_TABLE})
        )
        return cls(plan, _user_udfs(ctx, plan), "", tables)

    def dataframe(self, ctx: Any) -> Any:
        """The query planned in ``ctx`` (a :func:`private_context` holding both side tables)."""
        for udf in self.udfs:
            ctx.register_udf(udf)
        for name, table in self.tables:
            if not ctx.table_exist(name):
                ctx.register_table(name, table)
        return ctx.create_dataframe_from_logical_plan(sp.from_substrait(ctx, self.plan))


@functools.cache
def _builtin_functions() -> frozenset[str]:
    """Scalar functions every group context has."""
    return frozenset(private_context().udfs())


def _user_udfs(ctx: Any, plan: plan_pb2.Plan) -> tuple[Any, ...]:
    """The plan's functions that are registered UDFs of ``ctx`` but not DataFusion built-ins."""
    builtin = _builtin_functions()
    out = []
    for name in sorted(set(sp.function_names(plan).values())):
        if name in builtin:
            continue
        try:
            out.append(ctx.udf(name))
        except Exception:  # an aggregate or a built-in of another kind
            continue
    return tuple(out)


def group_schema(left: SpjSide, right: SpjSide, group: GroupQuery) -> pa.Schema:
    """The output schema of ``group``, its columns named ``c0``, ``c1``, ... (nothing read)."""
    schema = group.dataframe(group_context(left, right, None)).schema()
    return pa.schema([f.with_name(f"c{i}") for i, f in enumerate(schema)])
