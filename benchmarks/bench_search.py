"""Search over a partitioned namespace against pylance on one table, ratios in one run.

100,000 random 128-dim float32 vectors and a short text per row, in 32
partitions (identity on ``p``), with a vector index (``create_index("emb")``:
IVF_HNSW_SQ) and an INVERTED text index; the same rows also in one Lance
dataset with one index of the same type. Variants run in a random order in
every round (machine load and caches hit all alike); medians of ``--rounds``
rounds:

- ``one``: ``ns.search(where="p = 5")`` / pylance ``to_table(nearest=...,
  filter="p = 5", prefilter=True)`` on that partition table (same
  ``refine_factor`` as lance-sql's default);
- ``all``: ``ns.search`` over all 32 partitions / pylance on the one dataset
  with one index, and recall@10 of both against numpy brute force;
- ``fts``: ``ns.search("txt", term, where="p = 5")`` / pylance
  ``full_text_query`` on that partition table;
- ``fts alone`` and ``one alone``: the same two pairs, each alone, alternating
  (3 x rounds);
- ``threads``: latency p50/p99 of ``lance_search`` in SQL from 8 threads on one
  ``lance_sql.SessionContext``.

    python benchmarks/bench_search.py --rounds 200 [--data /tmp/bench_search]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
from lance.query import MatchQuery

import lance_sql
from lance_sql.planning.search_table import DEFAULT_REFINE

DIM = 128
WORDS = [f"w{i}" for i in range(200)]


def build(root: Path, n: int, parts: int) -> tuple:
    rng = np.random.default_rng(0)
    vecs = rng.random((n, DIM), dtype=np.float32)
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            ("p", pa.int32()),
            ("txt", pa.string()),
            ("emb", pa.list_(pa.float32(), DIM)),
        ]
    )
    table = pa.table(
        {
            "id": np.arange(n),
            "p": (np.arange(n) % parts).astype(np.int32),
            "txt": [" ".join(rng.choice(WORDS, 4)) for _ in range(n)],
            "emb": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), DIM),
        },
        schema=schema,
    )
    spec = [{"field_id": "p", "source": "p", "transform": {"type": "identity"}}]
    ns = lance_sql.PartitionedNamespace.create(root / "ns", schema, spec)
    ns.append(table)
    t0 = time.perf_counter()
    ns.create_index("emb")
    ns.create_index("txt")
    ns_build = time.perf_counter() - t0
    one = lance.write_dataset(table, root / "one")
    t0 = time.perf_counter()
    one.create_index("emb", "IVF_HNSW_SQ")
    one_build = time.perf_counter() - t0
    print(f"index build: namespace {ns_build:.1f} s (vector + text), one dataset {one_build:.1f} s")
    return ns, lance.dataset(root / "one"), vecs


def _median_ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--parts", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--data", help="folder kept between runs (the index builds take minutes)")
    args = ap.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    root = Path(args.data or tempfile.mkdtemp())
    if (root / "one").exists():
        ns = lance_sql.PartitionedNamespace.open(root / "ns")
        one = lance.dataset(root / "one")
        emb = one.to_table(columns=["emb"]).column("emb").combine_chunks()
        vecs = emb.values.to_numpy().reshape(-1, DIM)
    else:
        root.mkdir(parents=True, exist_ok=True)
        ns, one, vecs = build(root, args.rows, args.parts)
    oid = lance_sql.plan_scan(ns, "p = 5").object_ids[0]
    part, _ = ns._open(next(e for e in ns.tables() if e.object_id == oid))
    rng = np.random.default_rng(1)
    queries = rng.random((args.rounds, DIM), dtype=np.float32)
    nearest = {"column": "emb", "k": 10, "refine_factor": DEFAULT_REFINE}
    times: dict[str, list[float]] = {
        k: [] for k in ("one", "one_pl", "all", "all_pl", "fts", "fts_pl")
    }
    hits = {"all": 0, "all_pl": 0}
    for i, q in enumerate(queries):
        term = WORDS[i % len(WORDS)]
        runs = {
            "one": lambda q=q: ns.search("emb", q, k=10, where="p = 5", columns=["id"]),
            "one_pl": lambda q=q: part.to_table(
                nearest={**nearest, "q": q}, filter="p = 5", prefilter=True, columns=["id"]
            ),
            "all": lambda q=q: ns.search("emb", q, k=10, columns=["id"]),
            "all_pl": lambda q=q: one.to_table(nearest={**nearest, "q": q}, columns=["id"]),
            "fts": lambda term=term: ns.search("txt", term, k=10, where="p = 5", columns=["id"]),
            "fts_pl": lambda term=term: part.to_table(
                full_text_query=MatchQuery(term, "txt"), limit=10, columns=["id"]
            ),
        }
        # a fresh random order each round: every variant follows every other alike (a fixed
        # order made ``fts`` always follow the 100,000-row search and ``fts_pl`` follow ``fts``)
        order = list(runs)
        random.Random(i).shuffle(order)
        truth = None
        for name in order:
            t0 = time.perf_counter()
            out = runs[name]()
            times[name].append(time.perf_counter() - t0)
            if name in hits:
                if truth is None:
                    truth = set(np.argsort(((vecs - q) ** 2).sum(1))[:10].tolist())
                hits[name] += len(truth & set(out.column("id").to_pylist()))
    med = {k: _median_ms(v) for k, v in times.items()}
    for a, b in (("one", "one_pl"), ("all", "all_pl"), ("fts", "fts_pl")):
        print(f"{a:>4}: {med[a]:7.2f} ms / {med[b]:7.2f} ms = {med[a] / med[b]:.2f}x")
    for pair in (("fts", "fts_pl"), ("one", "one_pl")):  # each pair alone, alternating
        alone: dict[str, list[float]] = {name: [] for name in pair}
        for i in range(3 * args.rounds):
            term, q = WORDS[i % len(WORDS)], queries[i % len(queries)]
            calls = {
                "fts": lambda term=term: ns.search(
                    "txt", term, k=10, where="p = 5", columns=["id"]
                ),
                "fts_pl": lambda term=term: part.to_table(
                    full_text_query=MatchQuery(term, "txt"), limit=10, columns=["id"]
                ),
                "one": lambda q=q: ns.search("emb", q, k=10, where="p = 5", columns=["id"]),
                "one_pl": lambda q=q: part.to_table(
                    nearest={**nearest, "q": q}, filter="p = 5", prefilter=True, columns=["id"]
                ),
            }
            for name in pair if i % 2 == 0 else reversed(pair):
                t0 = time.perf_counter()
                calls[name]()
                alone[name].append(time.perf_counter() - t0)
        a, b = _median_ms(alone[pair[0]]), _median_ms(alone[pair[1]])
        print(f"{pair[0]} alone: {a:7.2f} ms / {b:7.2f} ms = {a / b:.2f}x")
    n = len(queries) * 10
    print(f"recall@10: namespace {hits['all'] / n:.3f}, one dataset {hits['all_pl'] / n:.3f}")
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("items", root / "ns")
    lat: list[float] = []
    lock = threading.Lock()

    def worker(seed: int) -> None:
        r = np.random.default_rng(seed)
        for _ in range(max(1, args.rounds // 8)):
            v = ", ".join(f"{x:.4f}" for x in r.random(DIM))
            t0 = time.perf_counter()
            ctx.sql(f"SELECT id FROM lance_search('items', 'emb', [{v}], 10)").to_arrow_table()
            with lock:
                lat.append(time.perf_counter() - t0)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    lat.sort()
    p50 = lat[len(lat) // 2] * 1000
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000
    print(
        f"8 threads, SQL lance_search over 32 partitions: p50 {p50:.1f} ms, p99 {p99:.1f} ms, "
        f"{len(lat) / wall:.1f} queries/s"
    )
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
