"""Process CPU time of SQL DELETE / UPDATE on a 16-partition namespace (16,000 rows).

Each statement runs on a fresh copy of the namespace, 7 times; the median CPU
and wall times are printed with a label. Compare two trees by alternating runs:

    for r in 1 2 3; do for t in OLD NEW; do (cd $t && PYTHONPATH=$t \
        python benchmarks/bench_sql_dml.py $(basename $t)); done; done
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time

import pyarrow as pa

import lance_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace

STATEMENTS = [
    "DELETE FROM t WHERE k = 3",
    "DELETE FROM t WHERE f > 7000 AND s LIKE '1%'",
    "UPDATE t SET f = f + 1 WHERE k = 5 AND s < '5'",
]


def main(label: str) -> None:
    schema = pa.schema([("k", pa.int64()), ("s", pa.string()), ("f", pa.float64())])
    n = 16_000
    rows = pa.table(
        {
            "k": [i % 16 for i in range(n)],
            "s": [str(i) for i in range(n)],
            "f": [i * 0.5 for i in range(n)],
        },
        schema=schema,
    )
    base = tempfile.mkdtemp()
    spec = [{"field_id": "k", "source": "k", "transform": {"type": "identity"}}]
    PartitionedNamespace.create(base + "/ns", schema, spec).append(rows)
    for statement in STATEMENTS:
        times = []
        for _ in range(7):
            copy = tempfile.mkdtemp()
            shutil.copytree(base + "/ns", copy + "/ns")
            ctx = lance_sql.SessionContext()
            ctx.register_namespace("t", copy + "/ns")
            ctx.sql("SELECT count(*) FROM t").collect()
            cpu, wall = time.process_time(), time.perf_counter()
            ctx.sql(statement).collect()
            times.append((time.process_time() - cpu, time.perf_counter() - wall))
        cpu, wall = sorted(times)[len(times) // 2]
        print(f"{label}\t{statement}\tcpu={cpu * 1000:.1f}ms\twall={wall * 1000:.1f}ms")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "run")
