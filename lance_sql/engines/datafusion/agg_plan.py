"""Partial aggregation inside storage-partitioned join groups (two-phase aggregation).

An aggregate of ``sum``, ``count``, ``min``, ``max`` (no DISTINCT, no FILTER, one
grouping set) over a storage-partitioned join, through filters and projections
only, runs per group (the same ``AggregateRel``); the query combines the groups'
rows with a final aggregate (``sum`` of sums, ``coalesce``-d ``sum`` of counts,
``min`` of mins, ``max`` of maxes, cast back). Each joined row is in exactly one group.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
from substrait import algebra_pb2, plan_pb2

from lance_sql.engines.datafusion import substrait_plan as sp
from lance_sql.engines.datafusion.eager_agg import eager_aggregate
from lance_sql.engines.datafusion.spj_provider import SpjTable
from lance_sql.engines.datafusion.spj_sides import group_schema
from lance_sql.engines.datafusion.sql_rewrite import fresh_table_name, register_query_table
from lance_sql.spec.time_ranges import datafusion_type_name

_FINAL = {"sum": "sum({c})", "min": "min({c})", "max": "max({c})", "count": "coalesce(sum({c}), 0)"}
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
        schema = group_schema(table.left, table.right, group)
        name = fresh_table_name("__lance_spj_agg")
        partial = SpjTable(
            table.plan, table.left, table.right, name=name, group=group, schema=schema
        )
        register_query_table(ctx, name, partial)
        final = _final_rel(ctx, plan, name, original, functions)
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
            name not in _FINAL
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
        expr = _FINAL[fn].format(c=f"c{keys + i}")
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
