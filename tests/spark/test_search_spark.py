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
