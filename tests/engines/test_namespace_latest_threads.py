"""Queries from many threads while another thread appends: each answer is one committed snapshot.

The latest-version check of a registered namespace runs outside the table's
lock; a query must still see exactly the rows of one ``__manifest`` version
(never a mix, never an older version than one the same thread already saw),
and a query after the last append sees every row.
"""

from __future__ import annotations

import threading

import pyarrow as pa

import lance_sql
from lance_sql import PartitionedNamespace


def _batch(i: int) -> pa.Table:
    return pa.table(
        {
            "k": pa.array([i % 3] * 5, pa.int64()),
            "v": pa.array([i * 100 + j for j in range(5)], pa.int64()),
        }
    )


def test_threads_see_whole_snapshots_while_appends_commit(tmp_path) -> None:
    spec = [{"field_id": "k", "source": "k", "transform": {"type": "identity"}}]
    ns = PartitionedNamespace.create(str(tmp_path / "ns"), _batch(0).schema, spec)
    ns.append(_batch(0))
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", str(tmp_path / "ns"))
    appends = 8
    # (count, sum) after 1..appends+1 batches: the only answers a snapshot can give
    snapshots = {}
    for n in range(1, appends + 2):
        rows = pa.concat_tables([_batch(i) for i in range(n)])
        snapshots[(rows.num_rows, sum(rows.column("v").to_pylist()))] = n
    seen: list[list[int]] = [[] for _ in range(4)]
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader(i: int) -> None:
        try:
            while not stop.is_set():
                got = ctx.sql("SELECT count(*) AS n, sum(v) AS s FROM t").to_pylist()[0]
                key = (got["n"], got["s"])
                assert key in snapshots, f"rows of no committed version: {key}"
                seen[i].append(snapshots[key])
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for i in range(1, appends + 1):
        ns.append(_batch(i))
    stop.set()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    for versions in seen:
        assert versions == sorted(versions), "a thread saw an older snapshot after a newer one"
    final = ctx.sql("SELECT count(*) AS n, sum(v) AS s FROM t").to_pylist()[0]
    assert snapshots[(final["n"], final["s"])] == appends + 1
