"""Memory of ``lance_ns`` reads: what the Spark planning worker imports (issue #20).

In local-cluster mode the Python worker running ``partitions()`` was the largest
Python process of a ``lance_ns`` read (395 MB RSS): planning a ``where`` option
imported numba to hash two bucket literals and DataFusion to cast one DATE
literal. Both now take a path without those imports for a few values; these
tests pin that (in a fresh process, since imports are per process) and that the
small paths give the same values as the compiled / DataFusion ones.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from lance_sql.spec.literals import datafusion_cast
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from udfs.hashing import _PYTHON_MAX_ROWS, murmur3

SCHEMA = pa.schema(
    [
        pa.field("customer_id", pa.int64()),
        pa.field("ts", pa.timestamp("us", "UTC")),
        pa.field("v", pa.float64()),
    ]
)


def _arrays() -> list[pa.Array]:
    rng = np.random.default_rng(20)
    n = 3 * _PYTHON_MAX_ROWS + 5
    words = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    return [
        pa.array(words),
        pa.array(words.astype(np.int32), pa.int32()),
        pa.array(words.astype(np.int8), pa.int8()),
        pa.array(words.view(np.uint64).astype(np.uint32), pa.uint32()),
        pa.array(words.view(np.uint64), pa.uint64()),
        pa.array([None if k % 7 == 0 else "x" * (k % 11) + str(k) for k in range(n)]),
        pa.array([bytes(rng.integers(0, 256, k % 9, dtype=np.uint8)) for k in range(n)]),
        pa.array(["é€" * (k % 5) for k in range(n)], pa.large_string()),
        pa.array([1.5, -0.0, float("nan"), None, float("inf")] * (n // 5)),
        pa.array(words.astype(np.int32) % 100_000, pa.int32()).cast(pa.date32()),
        pa.array(words // 1000).cast(pa.timestamp("us", "UTC")),
        pa.array([True, False, None] * (n // 3)),
    ]


@pytest.mark.parametrize("arr", _arrays(), ids=lambda a: str(a.type))
def test_small_arrays_hash_like_the_kernels(arr: pa.Array) -> None:
    """Arrays of at most _PYTHON_MAX_ROWS values (hashed in Python) equal the kernels."""
    assert len(arr) > _PYTHON_MAX_ROWS
    want = murmur3(arr)  # compiled kernels
    for size in (1, 2, _PYTHON_MAX_ROWS):
        pieces = [murmur3(arr.slice(i, size)) for i in range(0, len(arr), size)]
        assert pa.concat_arrays(pieces).equals(want), size


def test_small_hash_vectors() -> None:
    """NOTES 2.1 test vectors through the small path."""
    assert murmur3(pa.array([1, -1], pa.int64())).to_pylist() == [1392991556, 1651860712]
    assert murmur3(pa.array([34], pa.int32())).to_pylist() == [2017239379]
    assert murmur3(pa.array(["US", "", None])).to_pylist() == [-629525236, 0, None]


@pytest.mark.parametrize(
    "text",
    ["2026-01-04", "1970-01-01", "0001-01-01", "9999-12-31", "1969-12-31", "2024-02-29"],
)
def test_iso_date_literal_equals_datafusion(text: str) -> None:
    import datafusion

    got = datafusion_cast(f"'{text}'", pa.date32())
    table = datafusion.SessionContext().sql(f"SELECT arrow_cast('{text}', 'Date32') AS v")
    assert got == table.to_arrow_table().column(0).cast(pa.int32())[0].as_py()


@pytest.mark.parametrize("text", ["2023-02-29", "2025-13-45"])
def test_bad_date_literal_still_raises(text: str) -> None:
    from lance_sql.errors import PlanningError

    with pytest.raises(PlanningError):
        datafusion_cast(f"'{text}'", pa.date32())


PLAN = """
import json, sys
from lance_sql.engines.spark.source import LanceNamespaceDataSource
out = {}
for where in sys.argv[2:]:
    ds = LanceNamespaceDataSource({"path": sys.argv[1], "where": where})
    parts = ds.reader(ds.schema()).partitions()
    out[where] = sum(len(p.units) for p in parts)
out["imported"] = sorted(m for m in ("numba", "datafusion") if m in sys.modules)
print(json.dumps(out))
"""


def test_planning_a_where_imports_neither_numba_nor_datafusion(tmp_path: Path) -> None:
    """The Python worker running partitions() stays without numba and DataFusion."""
    root = str(tmp_path / "ns")
    ns = PartitionedNamespace.create(
        root,
        SCHEMA,
        [
            {"source": "ts", "transform": "year"},
            {"source": "ts", "transform": "month"},
            {"source": "ts", "transform": "day"},
            {"source": "customer_id", "transform": "bucket", "num_buckets": 8},
        ],
    )
    micros = np.arange(4000, dtype=np.int64) * (4 * 86_400_000_000 // 4000)
    start = 1_767_225_600_000_000  # 2026-01-01 UTC
    ns.append(
        pa.table(
            {
                "customer_id": np.arange(4000) % 97,
                "ts": pa.array(start + micros, pa.timestamp("us", "UTC")),
                "v": np.arange(4000, dtype=np.float64),
            },
            schema=SCHEMA,
        )
    )
    wheres = [
        "CAST(ts AS DATE) = DATE '2026-01-02'",
        "customer_id = 17 OR customer_id = 42",
        "customer_id IN (1, 2, 3) AND CAST(ts AS DATE) >= DATE '2026-01-03'",
    ]
    proc = subprocess.run(
        [sys.executable, "-c", PLAN, root, *wheres],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out.pop("imported") == []
    assert out[wheres[0]] == 8  # one day: its 8 buckets
    assert 1 <= out[wheres[1]] <= 2 * 4  # two buckets, four days at most
    assert 1 <= out[wheres[2]] <= 3 * 4  # three buckets (of 8) pruned


READ = """
import json, pickle, sys
def anon():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon"):
            return int(line.split()[1]) * 1024
reader, parts = pickle.load(open(sys.argv[1], "rb"))
out = []
for p in parts:  # warm: open the tables, load pylance's code
    for b in reader.read(p):
        break
for p in parts:
    before, rows, peak = anon(), 0, 0
    for b in reader.read(p):
        rows += b.num_rows
        peak = max(peak, anon() - before)
    out.append([rows, peak])
print(json.dumps(out))
"""


@pytest.mark.slow
def test_a_read_task_holds_a_few_batches_not_its_partition(tmp_path: Path) -> None:
    """A task's memory while it streams a partition does not grow with the partition.

    One partition of ~150 MB of decoded rows: the worker's anonymous memory
    (where pylance's decoded batches live) stays far below that.
    """
    import pickle

    from lance_sql.engines.spark.source import LanceNamespaceDataSource

    schema = pa.schema([pa.field("k", pa.int64()), pa.field("s", pa.utf8())])
    root = str(tmp_path / "ns")
    ns = PartitionedNamespace.create(
        root, schema, [{"source": "k", "transform": "bucket", "num_buckets": 2}]
    )
    n = 1_000_000
    pad = "x" * 140
    ns.append(pa.table({"k": np.arange(n), "s": pa.array([pad] * n)}, schema=schema))
    ds = LanceNamespaceDataSource({"path": root, "min_partitions": "1"})
    reader = ds.reader(ds.schema())
    parts = reader.partitions()
    assert len(parts) == 1  # the whole namespace in one task
    blob = tmp_path / "parts.pkl"
    blob.write_bytes(pickle.dumps((reader, parts)))
    proc = subprocess.run(
        [sys.executable, "-c", READ, str(blob)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    ((rows, peak),) = json.loads(proc.stdout.strip().splitlines()[-1])
    assert rows == n
    decoded = n * (8 + 4 + len(pad))
    print(f"peak anon growth {peak / 2**20:.0f} MiB for {decoded / 2**20:.0f} MiB decoded")
    assert peak < decoded / 4, (peak, decoded)
