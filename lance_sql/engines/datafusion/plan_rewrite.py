"""lance-sql's plan-level integration: one rewrite of a DataFrame's plan, right before it runs.

Run at each execution, so partition lists are resolved against the namespaces'
current manifests, as plain scans are. The optimized logical plan goes through
Substrait, is edited by the passes and read back; it is only used when a pass
applied and its output schema equals the original (names, types, nullability),
else the original plan runs and the reason is reported.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from lance_sql.engines.datafusion import substrait_plan as sp
from lance_sql.engines.datafusion.agg_plan import (
    PartitionAggTable,
    partition_wise_aggregates,
    push_partial_aggregates,
)
from lance_sql.engines.datafusion.join_emit_names import name_columns_apart
from lance_sql.engines.datafusion.join_order import reorder_namespace_joins
from lance_sql.engines.datafusion.join_stats import plan_join_stats
from lance_sql.engines.datafusion.join_swap import namespace_rows, output_width
from lance_sql.engines.datafusion.lance_provider import lance_dataset
from lance_sql.engines.datafusion.not_in import expand_not_in
from lance_sql.engines.datafusion.outer_join_elimination import eliminate_outer_joins
from lance_sql.engines.datafusion.prune_plan import attach_prune_filters, preorder, scan_name
from lance_sql.engines.datafusion.shared_aggregates import (
    repeated_aggregate,
    share_repeated_aggregates,
)
from lance_sql.engines.datafusion.spj_plan import (
    compatible_pair,
    storage_partitioned_joins,
    unaggregated_pairs,
)
from lance_sql.engines.datafusion.sql_rewrite import query_scope
from lance_sql.errors import first_line
from lance_sql.tables.dataset_cache import OpenCache
from lance_sql.tables.substrait_schema import arrow_nested_names


@dataclass
class Rewrite:
    """The DataFrame to run and what lance-sql did to it (for EXPLAIN)."""

    dataframe: Any
    used: list[Any] = field(default_factory=list)  # SpjTables
    reasons: list[str] = field(default_factory=list)  # namespace joins left as they were
    pruned: dict[str, Any] = field(default_factory=dict)  # pruning copies of namespace tables
    #: the output column names when the rewritten plan had to rename duplicates, else None
    names: list[str] | None = None
    #: join inputs given a row-count hint from Lance metadata (:mod:`.join_stats`)
    join_stats: list[str] = field(default_factory=list)
    #: why filters DataFusion did not push could not prune (the prune pass did not run)
    prune_reasons: list[str] = field(default_factory=list)
    #: outer joins a WHERE made inner (:mod:`.outer_join_elimination`): ``RIGHT -> INNER``
    outer_joins: list[str] = field(default_factory=list)


def rewrite(
    ctx: Any,
    df: Any,
    *,
    aggregates: bool = True,
    skip: dict[frozenset[str], str] | None = None,
) -> Rewrite:
    """``df`` with lance-sql's plan passes applied (``df`` itself when none applies).

    ``aggregates``: also move aggregates over storage-partitioned joins into
    the groups (:mod:`.agg_plan`); a rewrite whose schema differs with it is
    tried again without it. ``skip``: namespace pairs not to storage-partition
    (:func:`.spj_plan.unaggregated_pairs`).
    """
    namespaces = ctx.registered_namespaces()
    shape = _skip_shape(df, namespaces) if ENABLE_SKIP_CACHE[0] else None
    if shape is not None and _SKIPS.known(ctx, shape):
        return Rewrite(df)  # this plan shape over these tables: no pass applies (see _Skips)
    logical = df.optimized_logical_plan()
    text = logical.display_indent()
    all_scans = [name for node in preorder(logical) if (name := scan_name(node)) is not None]
    scans = [s for s in all_scans if s in namespaces]
    lance = any(s in namespaces or lance_dataset(ctx, s) is not None for s in all_scans)
    # joins of namespaces only (TPC-H q4, q12) are ordered by estimates too
    want_stats = getattr(ctx, "join_stats_enabled", True) and " Join:" in text and lance
    want_shared = lance and repeated_aggregate(text)  # a view read twice (TPC-H q15)
    if not scans and not want_stats and not want_shared:
        if shape is not None:
            _SKIPS.remember(ctx, shape)
        return Rewrite(df)
    joins = len(scans) >= 2 and " Join:" in text
    want_spj = ctx.spj_enabled and joins
    want_prune = bool(scans) and "Filter:" in text
    # an outer join under a WHERE (apache/datafusion#21246: outer_join_elimination)
    want_outer = "Filter:" in text and any(f" {k} Join:" in text for k in ("Left", "Right", "Full"))
    out = Rewrite(df)
    if joins and not ctx.spj_enabled:
        out.reasons.append("turned off (SET lance.spj = true turns it on)")
    if not (want_spj or want_prune or want_stats or want_outer or want_shared):
        if shape is not None and not out.reasons:
            _SKIPS.remember(ctx, shape)
        return out
    try:
        plan = sp.to_substrait(ctx, logical)
    except Exception as exc:  # DataFusion cannot express the plan in Substrait
        why = f"the plan cannot be rewritten ({first_line(exc)[:200]})"
        if want_spj:
            out.reasons.append(why)
        if want_prune:
            out.prune_reasons.append(why)
        if want_stats:
            out.join_stats.append(f"not used ({why})")
        return out
    try:
        wants = (want_spj, want_prune, want_stats, " null_aware" in text, want_outer, want_shared)
        return _rewrite_plan(ctx, df, plan, logical, out, namespaces, wants, aggregates, skip or {})
    except Exception as exc:  # a pass that fails never fails the query: run it as built
        return _unchanged(out, f"the plan could not be rewritten ({first_line(exc)[:200]})")


#: what may hide a join or a subquery from the plan as built (they appear when optimized)
_NOT_CACHED = ("Join", "ubquery", "Exists", "Union", "Recursive", "Window", "Unnest")
_TABLE_SCAN = re.compile(r"TableScan: ([^\s,]+)")
#: a number or date literal as DataFusion displays it (``Int64(5)``, ``Date32("2024-01-03")``,
#: SQL's DATE as a CAST of Utf8). Strings are not masked: ``LIKE 'abc'`` and ``LIKE 'ab%'``
#: plan differently.
_LITERAL = re.compile(
    r"\b((?:U?Int|Float)\d+|Date32|Date64)\((?:\"[0-9-]*\"|[0-9.eE+-]*|NULL)\)"
    r"|\bCAST\(Utf8\(\"[0-9-]+\"\) AS (Date32|Date64)\)"
)


def _skip_shape(df: Any, namespaces: dict[str, Any]) -> tuple[Any, ...] | None:
    """The key of ``df``'s plan for :data:`_SKIPS`, or None when it must not be cached.

    The plan as built with number and date literals masked (one key per shape),
    only scanning registered namespaces (by provider object) and with no join,
    subquery or union. Only the prune pass could apply to it: a skip never changes
    an answer, at worst it reads more tables.
    """
    text = df.logical_plan().display_indent()
    if any(word in text for word in _NOT_CACHED):
        return None
    names = _TABLE_SCAN.findall(text)
    if not names or any(n not in namespaces for n in names):
        return None
    shape = _LITERAL.sub(_masked, text)
    return (shape, tuple(id(namespaces[n]) for n in names)), tuple(namespaces[n] for n in names)


def _masked(match: re.Match[str]) -> str:
    return f"{match.group(1) or match.group(2)}(?)"


class _Skips:
    """Plan shapes for which :func:`rewrite` found that no pass applies, per context (bounded).

    The providers are held in the value, so a provider's id cannot be reused while
    its entry lives.
    """

    capacity = 4096

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def _cache(self, ctx: Any) -> OpenCache[tuple[Any, ...]]:
        cache = ctx.__dict__.get("_lance_rewrite_skips")
        if cache is None:
            with self._lock:
                cache = ctx.__dict__.setdefault("_lance_rewrite_skips", OpenCache(self.capacity))
        return cache  # type: ignore[no-any-return]

    def known(self, ctx: Any, shape: tuple[Any, ...]) -> bool:
        key, providers = shape
        held = self._cache(ctx).get((key, bool(ctx.spj_enabled)))
        hit = held is not None and all(a is b for a, b in zip(held, providers, strict=True))
        with self._lock:
            if hit:
                self.hits += 1
            else:
                self.misses += 1
        return hit

    def remember(self, ctx: Any, shape: tuple[Any, ...]) -> None:
        key, providers = shape
        self._cache(ctx).put((key, bool(ctx.spj_enabled)), providers)


_SKIPS = _Skips()
#: switch for benchmarks (bench_service.py --cuts-off): [False] decides every plan anew
ENABLE_SKIP_CACHE = [True]


def _rewrite_plan(
    ctx: Any,
    df: Any,
    plan: Any,
    logical: Any,
    out: Rewrite,
    namespaces: dict[str, Any],
    wants: tuple[bool, bool, bool, bool, bool, bool],
    aggregates: bool,
    skip: dict[frozenset[str], str],
) -> Rewrite:
    """The passes over ``plan`` (Substrait) and the checked result (see :func:`rewrite`)."""
    want_spj, want_prune, want_stats, null_aware, want_outer, want_shared = wants
    with query_scope(ctx):
        changed = False
        if want_prune:
            out.pruned = attach_prune_filters(ctx, plan, namespaces)
            changed = bool(out.pruned)
        # after pruning, which pairs the plan's reads with the logical plan's scans
        why = expand_not_in(ctx, plan, logical) if null_aware else None
        if why is not None:
            return _unchanged(out, why, spj=want_spj)
        tables = {**namespaces, **out.pruned}
        width = lambda rel: output_width(ctx, plan, rel)  # noqa: E731
        if want_shared:  # before the passes that annotate one copy (join statistics)
            is_lance = lambda n: n in tables or lance_dataset(ctx, n) is not None  # noqa: E731
            changed = bool(share_repeated_aggregates(ctx, plan, is_lance)) or changed
        if want_spj:
            reorder_namespace_joins(
                plan,
                lambda a, b, keys: compatible_pair(
                    tables, a, b, keys, ctx=ctx, functions=sp.function_names(plan), skip=skip
                ),
                tables,
                width,
            )
            spj = storage_partitioned_joins(ctx, plan, tables, skip)
            out.used, out.reasons = list(spj.used), [*out.reasons, *spj.reasons]
            changed = changed or bool(spj.used)
            if spj.used and aggregates:
                out.used += push_partial_aggregates(ctx, plan, spj.used)
            unaggregated = unaggregated_pairs(ctx, plan, spj.used) if spj.used else {}
            if unaggregated:  # plan again, those pairs left to DataFusion (spj_plan)
                return rewrite(ctx, df, aggregates=aggregates, skip={**skip, **unaggregated})
        if ctx.spj_enabled and aggregates and "Aggregate:" in logical.display_indent():
            pagg = partition_wise_aggregates(ctx, plan, tables)
            out.used += pagg
            changed = changed or bool(pagg)
        if want_outer:  # after SPJ: a join SPJ ran is a read now, its columns named apart
            same_types = lambda p: _same_types(ctx, p, df)  # noqa: E731
            out.outer_joins = eliminate_outer_joins(plan, width, same_types)
            changed = changed or bool(out.outer_joins)
        if want_stats:
            stats = plan_join_stats(ctx, plan, namespaces=tables, extra_rows=_spj_rows(out.used))
            out.join_stats = stats.lines or ([f"not used ({stats.error})"] if stats.error else [])
            changed = changed or bool(stats.lines)
        if changed or want_outer:  # after every join pass; the outer joins left: see there
            padded = name_columns_apart(plan, width, padded_sides=want_outer)
            changed = changed or bool(padded)
        if not changed:
            return out
        out.names = _unique_output_names(plan, df.schema())
        try:
            new = ctx.create_dataframe_from_logical_plan(sp.from_substrait(ctx, plan))
            schema = new.schema()
            if out.names is not None:
                schema = pa.schema(
                    [f.with_name(n) for f, n in zip(schema, out.names, strict=True)],
                    metadata=schema.metadata,
                )
            same = schema.equals(df.schema(), check_metadata=False)
            # DataFusion re-optimizes the plan when it runs: make it do so now, where
            # a failure (e.g. its Substrait consumer reading a one-sided column
            # equality of an outer join as a join key) falls back to the original
            new.optimized_logical_plan()
        except Exception as exc:
            return _unchanged(out, f"the rewritten plan was refused ({first_line(exc)[:200]})")
    if not same:
        if aggregates and want_spj and len(out.used) > len(spj.used):
            return rewrite(ctx, df, aggregates=False, skip=skip)
        return _unchanged(out, "the rewritten plan changes the output schema")
    read = {sp.table_name(r) for r in sp.walk(sp.root_rel(plan))}
    out.used = [t for t in out.used if t.name in read]
    for table in out.used:
        table.prepare()
    out.dataframe = new
    return out


def _unique_output_names(plan: Any, schema: pa.Schema) -> list[str] | None:
    """Make the plan's output names unique (in place); the original names if they were not.

    A storage-partitioned join is one table, whose columns cannot share a name:
    the plan outputs ``name__lance_<i>`` and :class:`~.dataframe.LanceDataFrame`
    gives the results their original names back.
    """
    root = next(r.root for r in plan.relations if r.HasField("root"))
    every = list(root.names)  # depth first: struct field names follow their column's
    tops, at = [], 0
    for f in schema:  # ``schema``: the query's output (its struct fields are not renamed)
        tops.append(at)
        at += 1 + arrow_nested_names(f.type)
    if at != len(every):
        raise ValueError(f"the plan's output has {len(every)} names, the query's {at}")
    names = [every[i] for i in tops]
    if len(set(names)) == len(names):
        return None
    seen: set[str] = set()
    for i, (at, name) in enumerate(zip(tops, names, strict=True)):
        every[at] = name if name not in seen else f"{name}__lance_{i}"
        seen.add(name)
    del root.names[:]
    root.names.extend(every)
    return names


def _same_types(ctx: Any, plan: Any, df: Any) -> bool:
    """Whether ``plan`` outputs the types and nullability ``df`` does (names aside)."""
    try:
        new = ctx.create_dataframe_from_logical_plan(sp.from_substrait(ctx, plan)).schema()
    except Exception:  # cannot be consumed: not the same
        return False
    old = df.schema()
    return [(f.type, f.nullable) for f in new] == [(f.type, f.nullable) for f in old]


def _unchanged(out: Rewrite, why: str, spj: bool = False) -> Rewrite:
    """``out`` for the plan as built; ``spj``: ``why`` is the reason for the whole plan."""
    reasons = [why] if spj else []
    reasons += [f"{t.left.name} x {t.right.name}: {why}" for t in out.used]
    out.reasons = [*out.reasons, *reasons]
    out.used, out.pruned, out.names, out.join_stats, out.outer_joins = [], {}, None, [], []
    return out


def _spj_rows(tables: list[Any]) -> dict[str, float]:
    """Estimated rows of each storage-partitioned join's table: its larger side's."""
    out = {}
    for table in tables:
        if isinstance(table, PartitionAggTable):  # an aggregate: the estimate of what it replaced
            if table.output_rows is not None:
                out[table.name] = table.output_rows
            continue
        try:
            out[table.name] = max(
                namespace_rows(table.left.namespace), namespace_rows(table.right.namespace)
            )
        except Exception:  # not a storage-partitioned join's table (aggregates): no estimate
            continue
    return out
