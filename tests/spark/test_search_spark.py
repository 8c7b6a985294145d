"""``lance_sql.spark.search`` / ``search_batch`` equal the Python search (local[2])."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

import lance_sql
import lance_sql.spark as lance_spark

DIM = 4
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("region", pa.string()),
        ("emb", pa.list_(pa.float32(), DIM)),
    ]
)
SPEC = [{"field_id": "region", "source": "region", "transform": {"type": "identity"}}]


def _ns(root: Path) -> tuple[lance_sql.PartitionedNamespace, np.ndarray]:
    rng = np.random.default_rng(3)
    n = 1500
    v = rng.random((n, DIM), dtype=np.float32)
    ns = lance_sql.PartitionedNamespace.create(root, SCHEMA, SPEC)
    ns.append(
        pa.table(
            {
                "id": np.arange(n),
                "region": [f"r{i % 5}" for i in range(n)],
                "emb": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), DIM),
            },
            schema=SCHEMA,
        )
    )
    ns.create_index("emb", "IVF_FLAT")
    return ns, v


def test_spark_search_equals_python_search(spark: Any, tmp_path: Path) -> None:
    ns, _ = _ns(tmp_path / "ns")
    q = [0.2, 0.4, 0.6, 0.8]
    for where in (None, "region IN ('r1', 'r3')"):
        for opts in ({}, {"use_index": False}):
            df = lance_spark.search(
                spark, f"file:{ns.root}", "emb", q, 12, where=where, columns=["id", "region"],
                **opts,
            )  # fmt: skip
            got = [(r["id"], r["region"]) for r in df.collect()]
            want = ns.search("emb", q, k=12, where=where, columns=["id", "region"], **opts)
            assert got == list(zip(want["id"].to_pylist(), want["region"].to_pylist(), strict=True))


def test_spark_batch_search(spark: Any, tmp_path: Path) -> None:
    ns, _ = _ns(tmp_path / "ns")
    rng = np.random.default_rng(5)
    qs = [(i, [float(x) for x in rng.random(DIM)]) for i in range(6)]
    queries = spark.createDataFrame(qs, "qid long, query array<float>")
    df = lance_spark.search_batch(spark, str(ns.root), queries, "emb", k=4, columns=["id"])
    rows = df.collect()
    assert len(rows) == 6 * 4
    for qid, vec in qs:
        got = sorted((r["_rank"], r["id"]) for r in rows if r["qid"] == qid)
        want = ns.search("emb", np.asarray(vec, np.float32), k=4, columns=["id"])
        assert [i for _, i in got] == want["id"].to_pylist()


def test_spark_hybrid_search_equals_python_hybrid(spark: Any, tmp_path: Path) -> None:
    """``text=`` fuses the vector list (exact: numpy) and the term-match text list by RRF."""
    schema = pa.schema([*SCHEMA, pa.field("txt", pa.string())])
    rng = np.random.default_rng(7)
    n = 900
    v = rng.random((n, DIM), dtype=np.float32)
    words = ["red", "blue", "green", "sky"]
    ns = lance_sql.PartitionedNamespace.create(tmp_path / "hy", schema, SPEC)
    ns.append(
        pa.table(
            {
                "id": np.arange(n),
                "region": [f"r{i % 3}" for i in range(n)],
                "emb": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), DIM),
                "txt": [" ".join(rng.choice(words, 2)) for _ in range(n)],
            },
            schema=schema,
        )
    )
    ns.create_index("txt", "INVERTED")
    q = [0.3, 0.1, 0.9, 0.5]
    for where, k in ((None, 10), ("region IN ('r0', 'r2')", 7)):
        df = lance_spark.search(
            spark, str(ns.root), "emb", q, k, where=where, columns=["id", "region"],
            text=("txt", "sky"), rrf_k=20, use_index=False,
        )  # fmt: skip
        assert df.columns == ["id", "region", "_distance", "_score", "_hybrid_score"]
        got = df.collect()
        want = ns.search(
            vector=("emb", q), text=("txt", "sky"), k=k, where=where, rrf_k=20,
            use_index=False, columns=["id", "region"],
        )  # fmt: skip
        assert [r["id"] for r in got] == want["id"].to_pylist()
        np.testing.assert_allclose([r["_hybrid_score"] for r in got], want["_hybrid_score"])
        assert [r["_distance"] for r in got] == want["_distance"].to_pylist()
        # the vector list is numpy's exact top k; the text list matches the term
        keep = [i for i in range(n) if where is None or f"r{i % 3}" in ("r0", "r2")]
        d = ((v[keep] - np.asarray(q, np.float32)) ** 2).sum(1)
        exact = {keep[i] for i in np.argsort(d, kind="stable")[:k]}
        txt = ns.to_table(["id", "txt"]).to_pylist()
        sky = {r["id"] for r in txt if "sky" in r["txt"].split()}
        for r in got:
            assert r["id"] in exact or r["id"] in sky
            assert (r["_distance"] is not None) == (r["id"] in exact)
