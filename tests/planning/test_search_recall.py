"""ANN recall@10 of a namespace search at default parameters, against numpy brute force.

Default index (``create_index(column)``: IVF_HNSW_SQ) and default search
parameters (lance-sql's ``refine_factor`` default for quantized indexes).
The full size (100,000 random 128-dim vectors over 32 partitions, recall
>= 0.95) is marked slow; the default suite runs a smaller namespace.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lance_sql


def _recall(tmp_path: Path, n: int, dim: int, parts: int, queries: int) -> float:
    rng = np.random.default_rng(42)
    vecs = rng.random((n, dim), dtype=np.float32)
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            ("p", pa.int32()),
            ("emb", pa.list_(pa.float32(), dim)),
        ]
    )
    spec = [{"field_id": "p", "source": "p", "transform": {"type": "identity"}}]
    ns = lance_sql.PartitionedNamespace.create(tmp_path / "ns", schema, spec)
    ns.append(
        pa.table(
            {
                "id": np.arange(n),
                "p": (np.arange(n) % parts).astype(np.int32),
                "emb": pa.FixedSizeListArray.from_arrays(pa.array(vecs.ravel()), dim),
            },
            schema=schema,
        )
    )
    ns.create_index("emb")
    rep = ns.search("emb", vecs[0], k=10, explain=True)
    assert rep.searched == parts and rep.indexed == parts
    hits = 0
    for q in rng.random((queries, dim), dtype=np.float32):
        truth = set(np.argsort(((vecs - q) ** 2).sum(1))[:10].tolist())
        got = ns.search("emb", q, k=10, columns=["id"])
        hits += len(truth & set(got.column("id").to_pylist()))
    return hits / (10 * queries)


def test_recall_small(tmp_path: Path) -> None:
    assert _recall(tmp_path, 8_000, 32, 8, 30) >= 0.9


@pytest.mark.slow
def test_recall_100k_128d_32_partitions(tmp_path: Path) -> None:
    recall = _recall(tmp_path, 100_000, 128, 32, 50)
    print(f"recall@10 = {recall:.3f}")
    assert recall >= 0.95
