"""An aggregate a plan computes twice, computed once (TPC-H q15's view).

DataFusion 55 inlines a view, so a query that reads one twice (q15: the view,
and its maximum in a scalar subquery) plans and runs the view's aggregate
twice, scanning ``lineitem`` twice. Here an aggregate subtree that occurs more
than once in the Substrait plan (byte for byte, subqueries included), reads a
lance-sql table and calls no volatile function, runs once, into memory, and
every occurrence reads that result instead: the answer is the same rows (each
occurrence computes the same ones). A result over :data:`MAX_ROWS` rows is not
kept (the plan stays as it was). EXPLAIN runs the shared aggregate too (its
plan reads the result, shown as a memory table named ``__lance_shared_<n>``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from lance_sql.engines.datafusion import substrait_plan as sp
from lance_sql.engines.datafusion.semi_reduce import calls_volatile
from lance_sql.engines.datafusion.sql_rewrite import fresh_table_name, register_query_table

#: most rows of a shared aggregate held in memory
MAX_ROWS = 1_000_000


def repeated_aggregate(plan_text: str) -> bool:
    """Whether an optimized plan's text shows one aggregate twice (a cheap pre-check)."""
    lines = [s for line in plan_text.splitlines() if (s := line.strip()).startswith("Aggregate:")]
    return len(lines) != len(set(lines))


def share_repeated_aggregates(ctx: Any, plan: Any, is_lance: Callable[[str], bool]) -> list[str]:
    """Run each repeated aggregate of ``plan`` once and point its occurrences at the result
    (in place); the names of the memory tables it registers in ``ctx`` for the query
    (:func:`~.sql_rewrite.register_query_table`: dropped once the plan is consumed)."""
    functions = sp.function_names(plan)
    names: list[str] = []
    refused: set[bytes] = set()
    while True:  # the largest first; then what is left (an inner one was replaced with it)
        groups: dict[bytes, list[Any]] = {}
        for msg in sp.messages(plan):
            if isinstance(msg, sp.Rel) and msg.HasField("aggregate"):
                groups.setdefault(msg.SerializeToString(deterministic=True), []).append(msg)
        repeated = [(k, g) for k, g in groups.items() if len(g) > 1 and k not in refused]
        if not repeated:
            return names
        key, group = max(repeated, key=lambda kg: len(kg[0]))
        try:
            name = _materialize(ctx, plan, group[0], functions, is_lance)
        except Exception:  # cannot run alone (e.g. it reads an outer query's columns)
            name = None
        if name is None:
            refused.add(key)
            continue
        names.append(name)
        read = sp.table_read(ctx, name)
        for rel in group:
            rel.CopyFrom(read)


def _materialize(
    ctx: Any, plan: Any, rel: Any, functions: dict[int, str], is_lance: Callable[[str], bool]
) -> str | None:
    """``rel``'s rows as a memory table registered in ``ctx`` (its name), or None."""
    reads = [sp.table_name(m) for m in sp.messages(rel) if isinstance(m, sp.Rel)]
    if not any(n is not None and is_lance(n) for n in reads):
        return None
    if calls_volatile(rel, functions):
        return None
    sub = ctx.create_dataframe_from_logical_plan(sp.from_substrait(ctx, sp.subplan(plan, rel)))
    batches = sub.limit(MAX_ROWS + 1).collect()
    if sum(b.num_rows for b in batches) > MAX_ROWS or not batches:
        return None
    name = fresh_table_name("__lance_shared")
    register_query_table(ctx, name, pa.Table.from_batches(batches))
    return name
