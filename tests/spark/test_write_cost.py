"""Fixed costs of a ``lance_ns`` write task (issue #19: writes with many tasks).

Every Spark task of a Python data source unpickles the writer and runs its
``write`` in a (reused) Python worker; with 64-200 tasks per job the fixed
part of that is what grows (docs/benchmarks/spark_write.md). These tests pin
what a task must not pay: a large pickled writer, a read of ``__manifest``, or
imports it does not need (DataFusion, sqlglot: ~100 MB and ~1 s per worker).
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

from lance_sql.engines.spark.types import spark_struct
from lance_sql.engines.spark.write import LanceNamespaceWriter
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SCHEMA = pa.schema(
    [
        pa.field("order_id", pa.int64(), nullable=False),
        pa.field("customer_id", pa.int64(), nullable=False),
        pa.field("note", pa.utf8()),
    ]
)
SPEC = [{"source": "customer_id", "transform": "bucket", "num_buckets": 16}]

TASK = """
import json, pickle, sys
import pyarrow as pa
writer = pickle.loads(open(sys.argv[1], "rb").read())
n = 5000
batch = pa.record_batch(
    {"order_id": pa.array(range(n), pa.int64()),
     "customer_id": pa.array([i % 977 for i in range(n)], pa.int64()),
     "note": pa.array([f"n{i % 10}" for i in range(n)])})
message = writer.write(iter([batch]))
print(json.dumps({
    "rows": message.rows,
    "imported": sorted(m for m in ("datafusion", "sqlglot") if m in sys.modules),
    "message_bytes": len(pickle.dumps(message)),
}))
"""


def test_a_write_task_pays_no_avoidable_fixed_cost(tmp_path: Path) -> None:
    root = str(tmp_path / "ns")
    PartitionedNamespace.create(root, SCHEMA, SPEC)
    writer = LanceNamespaceWriter({"path": root}, False, spark_struct(SCHEMA))
    blob = pickle.dumps(writer)
    assert len(blob) < 16_384  # shipped to every task
    path = tmp_path / "writer.pkl"
    path.write_bytes(blob)
    # the snapshot travels with the writer: a task that read __manifest would fail
    (tmp_path / "ns" / "__manifest").rename(tmp_path / "ns" / "__manifest.away")
    proc = subprocess.run(
        [sys.executable, "-c", TASK, str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["rows"] == 5000
    assert out["imported"] == []
    assert out["message_bytes"] < 64 * 1024  # 16 partitions' staged fragments


def _journal_entries(root: str, write_id: str) -> list[dict[str, object]]:
    from lance_sql.engines.spark.write_journal import journal_uri

    folder = Path(journal_uri(root, write_id))
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def test_journal_entries_per_task(tmp_path: Path) -> None:
    """Appending into existing tables journals one object per file and no location entries;
    new tables (named by this write) also get their location, once per attempt."""
    root = str(tmp_path / "ns")
    PartitionedNamespace.create(root, SCHEMA, SPEC)
    n = 4000
    rows = pa.table(
        {
            "order_id": pa.array(range(n), pa.int64()),
            "customer_id": pa.array([i % 977 for i in range(n)], pa.int64()),
            "note": pa.array([f"n{i % 10}" for i in range(n)]),
        },
        schema=SCHEMA,
    )
    first = LanceNamespaceWriter({"path": root}, False, spark_struct(SCHEMA))
    message = first.write(iter(rows.to_batches()))
    created = _journal_entries(root, first.write_id)
    tables = {e["location"] for e in created}
    assert len(tables) == 16
    assert sorted(e["location"] for e in created if e["file"] is None) == sorted(tables)
    first.commit([message])
    assert PartitionedNamespace.open(root).count_rows() == n

    second = LanceNamespaceWriter({"path": root}, False, spark_struct(SCHEMA))
    message = second.write(iter(rows.to_batches()))
    appended = _journal_entries(root, second.write_id)
    assert len(appended) == 16 and all(e["file"] is not None for e in appended)
    second.commit([message])
    assert PartitionedNamespace.open(root).count_rows() == 2 * n
