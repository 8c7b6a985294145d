"""``NOT IN`` between two namespaces: lance-sql's rewrite (not_in.py) vs the plan as built.

orders (bucket[16] on customer_id) and customers (bucket[8] on id), the
appendix F data of ``bench_spj.py`` (``--orders``/``--customers`` rows), and

    SELECT count(*), sum(o.amount) FROM orders o
    WHERE o.customer_id NOT IN (SELECT c.id FROM customers c WHERE c.segment <> 'segment1')

Variants, alternated for ``--rounds`` rounds in this one process (ratios of medians):

- ``rewritten``: ``lance_sql.SessionContext()`` defaults: the null-aware anti
  join becomes a plain anti join (storage-partitioned when the per-join
  decision keeps it) plus two one-row NULL checks;
- ``rewritten_spj``: the same with the per-join decision off
  (``ctx.spj_small_side_rows = 0``): the anti join always storage-partitioned;
- ``as_built``: ``SET lance.spj = false`` on a query with no other pass to apply,
  so the plan runs as DataFusion built it (its null-aware hash anti join: the
  only behaviour before session 8);
- ``memory``: plain DataFusion over the same rows as memory tables.

    /work/venv/bin/python benchmarks/bench_not_in.py [--orders 5000000] [--customers 1000000]
        [--rounds 9]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_spj import write

QUERY = (
    "SELECT count(*), sum(o.amount) FROM orders o WHERE o.customer_id NOT IN "
    "(SELECT c.id FROM customers c WHERE c.segment <> 'segment1')"
)


def contexts(root: Path) -> dict[str, Any]:
    import datafusion

    import lance_sql
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    out: dict[str, Any] = {}
    for name, spj in (("rewritten", True), ("rewritten_spj", True), ("as_built", False)):
        ctx = lance_sql.SessionContext(spj=spj)
        if name == "rewritten_spj":
            ctx.spj_small_side_rows = 0
        ctx.register_namespace("orders", str(root / "orders"))
        ctx.register_namespace("customers", str(root / "customers"))
        out[name] = ctx
    memory = datafusion.SessionContext()
    for name in ("orders", "customers"):
        memory.from_arrow(PartitionedNamespace.open(str(root / name)).to_table(), name=name)
    out["memory"] = memory
    return out


def _storage_partitioned(ctx: Any) -> bool:
    plan = ctx.sql("EXPLAIN " + QUERY).to_arrow_table().column("plan").to_pylist()
    return any("StoragePartitionedJoin:" in (p or "") for p in plan)


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--orders", type=int, default=5_000_000)
    p.add_argument("--customers", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=9)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write(root, args.orders, args.customers)
        ctxs = contexts(root)
        answers = {n: ctx.sql(QUERY).to_arrow_table().to_pylist() for n, ctx in ctxs.items()}
        first = answers["memory"]
        for n, a in answers.items():
            assert a[0]["count(*)"] == first[0]["count(*)"], (n, a, first)
        spj = {n: _storage_partitioned(ctxs[n]) for n in ("rewritten", "rewritten_spj")}
        times: dict[str, list[float]] = {n: [] for n in ctxs}
        for _ in range(args.rounds):
            for n, ctx in ctxs.items():
                start = time.perf_counter()
                ctx.sql(QUERY).to_arrow_table()
                times[n].append(time.perf_counter() - start)
    med = {n: statistics.median(t) for n, t in times.items()}
    out = {
        "rewritten_s": med["rewritten"],
        "rewritten_spj_s": med["rewritten_spj"],
        "as_built_s": med["as_built"],
        "memory_s": med["memory"],
        "rewritten_over_as_built": med["rewritten"] / med["as_built"],
        "rewritten_spj_over_as_built": med["rewritten_spj"] / med["as_built"],
        "rewritten_over_memory": med["rewritten"] / med["memory"],
    }
    print(
        f"orders={args.orders} customers={args.customers} rounds={args.rounds} "
        f"storage-partitioned={spj} rows={first[0]['count(*)']}"
    )
    print(" ".join(f"{k}={v:.3f}" for k, v in out.items()))
    return out


if __name__ == "__main__":
    main()
