"""An aggregate a plan computes twice, computed once (TPC-H q15's view).

DataFusion inlines a view, so a query reading one twice runs its aggregate twice.
An aggregate subtree occurring more than once (byte for byte) that reads a
lance-sql table and calls no volatile function runs once, into memory (at most
:data:`MAX_ROWS` rows), and every occurrence reads that result.
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
    (in place); the names of the memory tables it registers in ``ctx`` for the query."""
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
