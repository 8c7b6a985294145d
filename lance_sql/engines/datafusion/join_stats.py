"""Metadata-driven join planning: exact row bounds from Lance manifests, as hints DataFusion reads.

DataFusion gets no statistics from lance-sql's tables; a ``LIMIT n`` over a join
input is the one hint that makes it collect a small input as the build side. A
``LIMIT`` must never remove a row, so the bound counts live rows at the version
the query reads (a follow-latest table is read through a copy pinned at it).
Only inputs under the broadcast threshold are hinted; others are left to
:mod:`.join_swap`'s estimates.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from substrait import algebra_pb2, plan_pb2

from lance_sql.engines.datafusion import substrait_plan as sp
from lance_sql.engines.datafusion.join_swap import (
    Estimator,
    RelationRows,
    bare_table_name,
    output_width,
    reorder_flat_trees,
    swap_inner_joins,
)
from lance_sql.engines.datafusion.lance_provider import LanceDatasetTable, lance_dataset
from lance_sql.engines.datafusion.semi_reduce import reduce_aggregate_inputs
from lance_sql.engines.datafusion.sql_rewrite import (
    fresh_table_name,
    register_query_table,
)
from lance_sql.tables.lance_table import LanceTable

Rel = algebra_pb2.Rel
J = algebra_pb2.JoinRel

#: DataFusion 55's default ``datafusion.optimizer.hash_join_single_partition_threshold_rows``
DEFAULT_THRESHOLD_ROWS = 131_072
THRESHOLD_KEY = "datafusion.optimizer.hash_join_single_partition_threshold_rows"

_SET = algebra_pb2.SetRel


@dataclass(frozen=True)
class TableCount:
    """The live rows of one registered Lance dataset at the version the query will read."""

    rows: int
    #: a provider registered without a version (``table.follow_latest``) is read through
    #: a copy pinned at ``snapshot`` once hinted
    provider: LanceDatasetTable
    snapshot: Any


@dataclass
class JoinStats:
    """What the pass did: one line per hinted join input (for EXPLAIN)."""

    lines: list[str] = field(default_factory=list)
    error: str | None = None  # why no hint was given (the plan is left as it was)


def plan_join_stats(
    ctx: Any,
    plan: plan_pb2.Plan,
    *,
    namespaces: Mapping[str, Any] | None = None,
    extra_rows: Mapping[str, float] | None = None,
) -> JoinStats:
    """Order, hint and swap joins by Lance metadata (in place).

    ``namespaces`` (by name) and ``extra_rows`` (estimated rows of other tables,
    e.g. storage-partitioned joins) feed the estimates.
    """
    out = JoinStats()
    limit = threshold_rows(ctx)
    backup = plan_pb2.Plan()
    backup.CopyFrom(plan)
    try:
        counts = _BoundCounter(ctx)
        estimate = Estimator(sp.function_names(plan), namespaces or {}, counts.rows_of, extra_rows)
        width = lambda rel: output_width(ctx, plan, rel)  # noqa: E731
        out.lines += reorder_flat_trees(plan, estimate, width)
        out.lines += reduce_aggregate_inputs(plan, estimate, width)
        if limit >= 1:  # a threshold of 0 turns DataFusion's broadcast off: no hints
            _hint(ctx, plan, limit, out, counts)
        out.lines += swap_inner_joins(plan, estimate, width)
    except Exception as exc:  # never fail (or half-edit) a query for a hint
        plan.CopyFrom(backup)
        out.lines = []
        out.error = f"{type(exc).__name__}: {exc}"[:200]
    return out


def _hint(ctx: Any, plan: plan_pb2.Plan, limit: int, out: JoinStats, counts: _BoundCounter) -> None:
    """Hint every join input (also inside subqueries) whose bound is at most ``limit``.

    Innermost first: a hint moves its input under a new relation."""
    joins = [m for m in sp.messages(plan) if isinstance(m, Rel) and sp.kind(m) == "join"]
    for rel in reversed(joins):
        for side_name in ("left", "right"):
            side = getattr(rel.join, side_name)
            if sp.kind(side) in ("fetch", "sort"):
                continue
            bound = counts.rows(side)
            if bound is None or not 1 <= bound <= limit:
                continue
            tables = _pin_reads(ctx, side, counts)
            sp.wrap_in_fetch(side, bound)
            what = ", ".join(tables) or "input"
            out.lines.append(
                f"{side_name} input ({what}): at most {bound} rows (Lance metadata) <= "
                f"{limit}: DataFusion may collect and broadcast it (CollectLeft)"
            )


class _BoundCounter(RelationRows):
    """Row upper bounds of relations, from the tables' metadata (each table counted once)."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.tables: dict[str, TableCount | None] = {}
        #: table name -> the per-query name of its pinned copy, and back
        self.copies: dict[str, str] = {}
        self.aliases: dict[str, str] = {}

    def table(self, name: str) -> TableCount | None:
        if name not in self.tables:
            self.tables[name] = table_count(self.ctx, name)
        return self.tables[name]

    def rows_of(self, name: str | None) -> int | None:
        """The live rows of table ``name`` (of a pinned copy: its table's); None: not Lance."""
        count = None if name is None else self.table(self.aliases.get(name, name))
        return None if count is None else count.rows

    def read(self, rel: Rel) -> int | None:
        return self.rows_of(bare_table_name(rel))

    def filter(self, below: int, condition: algebra_pb2.Expression) -> int:
        return below  # a filter keeps at most all rows

    def aggregate(self, agg: algebra_pb2.AggregateRel) -> int | None:
        if not agg.groupings or all(not g.expression_references for g in agg.groupings):
            # a global aggregate: one row (grouping sets of () only: one per set)
            return max(1, len(agg.groupings))
        below = self.rows(agg.input)
        if below is None:
            return None
        # each grouping set has at most one row per input row; an empty set has one row
        # even over no input (GROUPING SETS ((a), ()) of 0 rows is 1 row)
        empty = sum(1 for g in agg.groupings if not g.expression_references)
        return below * len(agg.groupings) + empty

    def join(self, kind: int, left: int | None, right: int | None) -> int | None:
        if kind in sp.LEFT_ONLY_JOINS:
            return left
        if kind in sp.RIGHT_ONLY_JOINS:
            return right
        if left is None or right is None:
            return None
        if kind == J.JOIN_TYPE_INNER:
            return left * right
        if kind == J.JOIN_TYPE_LEFT:
            return left * max(right, 1)
        if kind == J.JOIN_TYPE_RIGHT:
            return right * max(left, 1)
        if kind == J.JOIN_TYPE_OUTER:
            return left * right + left + right
        return None

    def set(self, op: int, parts: list[int]) -> int | None:
        if not parts:
            return None
        if op in (_SET.SET_OP_UNION_ALL, _SET.SET_OP_UNION_DISTINCT):
            return sum(parts)
        if op in (
            _SET.SET_OP_INTERSECTION_PRIMARY,
            _SET.SET_OP_INTERSECTION_MULTISET,
            _SET.SET_OP_INTERSECTION_MULTISET_ALL,
        ):
            return min(parts)
        if op in (
            _SET.SET_OP_MINUS_PRIMARY,
            _SET.SET_OP_MINUS_PRIMARY_ALL,
            _SET.SET_OP_MINUS_MULTISET,
        ):
            return parts[0]
        return None


def table_count(ctx: Any, name: str) -> TableCount | None:
    """The live rows of Lance dataset ``name`` at the version a scan now reads, else None."""
    provider = lance_dataset(ctx, name)
    if provider is None:
        return None
    snapshot = provider.table.snapshot()
    return TableCount(provider.live_rows(snapshot), provider, snapshot)


_PINNED_LOCK = threading.Lock()
_PINNED: weakref.WeakKeyDictionary[LanceDatasetTable, tuple[int, int, LanceDatasetTable]] = (
    weakref.WeakKeyDictionary()
)


def _pinned(provider: LanceDatasetTable, snapshot: Any) -> LanceDatasetTable:
    """``provider`` pinned at ``snapshot`` (cached while the version is current)."""
    with _PINNED_LOCK:
        cached = _PINNED.get(provider)
        if cached is not None and cached[:2] == (snapshot.version, provider.partitions):
            return cached[2]
    source = provider.table
    table = LanceTable(
        source.uri,
        snapshot.dataset,
        follow_latest=False,
        storage_options=source.storage_options,
    )
    table.schema = source.schema
    table.metrics = source.metrics
    copy = LanceDatasetTable(table, name=provider.name, partitions=provider.partitions)
    with _PINNED_LOCK:
        _PINNED[provider] = (snapshot.version, provider.partitions, copy)
    return copy


def _pin_reads(ctx: Any, rel: Rel, counts: _BoundCounter) -> list[str]:
    """Point reads of follow-latest tables under ``rel`` at their counted versions; the tables."""
    labels: list[str] = []
    for node in sp.walk(rel):
        name = bare_table_name(node)
        if name is None:
            continue
        original = counts.aliases.get(name, name)
        count = counts.table(original)
        if count is None:
            continue
        label = f"{original} v{count.snapshot.version}"
        if label not in labels:
            labels.append(label)
        if name != original or not count.provider.table.follow_latest:
            continue  # read through its pinned copy already, or pinned when registered
        copy = counts.copies.get(original)
        if copy is None:
            copy = counts.copies[original] = fresh_table_name("__lance_pinned")
            counts.aliases[copy] = original
            register_query_table(ctx, copy, _pinned(count.provider, count.snapshot))
        sp.rename_tables(node, original, copy)
    return labels


def threshold_rows(ctx: Any) -> int:
    """The context's ``hash_join_single_partition_threshold_rows`` (read with ``SHOW`` once;
    ``lance_sql.SessionContext.sql`` forgets it at a ``SET`` statement)."""
    cached = getattr(ctx, "_join_threshold_rows", None)
    if cached is not None:
        return int(cached)
    try:
        import datafusion

        table = datafusion.SessionContext.sql(ctx, f"SHOW {THRESHOLD_KEY}").to_pydict()
        value = int(table["value"][0])
    except Exception:  # a context that refuses SHOW: DataFusion's default
        value = DEFAULT_THRESHOLD_ROWS
    with contextlib.suppress(AttributeError):  # (a context without a __dict__: each time)
        ctx._join_threshold_rows = value
    return value
