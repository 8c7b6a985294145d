"""Concurrent writer processes against one namespace: no lost or partial commits.

8 writer processes each run 25 appends; every append writes a few rows into a
private partition and two partitions other writers also write, all tagged with
one commit marker. A reader process polls meanwhile and checks that every
snapshot it sees holds each commit's rows entirely or not at all. At the end,
the namespace (and pylance on each partition table at its pinned version)
holds exactly the rows of the appends reported successful, and every failure is
a CommitConflictError naming the partition or ``__manifest``.
"""

from __future__ import annotations

import time
from pathlib import Path

import lance
import pytest
from conftest import read_lines, start_worker
from workers import batch_for, check_snapshot

from lance_sql.tables.namespace.namespace import PartitionedNamespace


def run_writers(root: str, tmp_path: Path, writers: int, appends: int, timeout: float) -> dict:
    stop = tmp_path / "stop-reader"
    reader = start_worker("read", root, stop)
    procs = [start_worker("append", root, w, appends) for w in range(writers)]
    outcomes: dict[int, list[dict]] = {}
    deadline = time.monotonic() + timeout
    for w, p in enumerate(procs):
        out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        assert p.returncode == 0, f"writer {w} failed: {err[-2000:]}"
        outcomes[w] = read_lines(out)
    stop.write_text("stop")
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err[-2000:]
    return {"writers": outcomes, "reader": read_lines(out)[-1]}


def check_outcome(root: str, result: dict, appends: int) -> dict:
    expected_rows = 0
    expected_commits = set()
    conflicts = 0
    for w, lines in result["writers"].items():
        assert [line["i"] for line in lines] == list(range(appends))
        for line in lines:
            if line["ok"]:
                expected_rows += line["rows"]
                expected_commits.add(w * 100_000 + line["i"])
            else:
                assert line["error"] == "conflict", line
                msg = line["message"]
                assert "partition" in msg or "__manifest" in msg, msg
                conflicts += 1
    ns = PartitionedNamespace.open(root)
    snap = check_snapshot(ns)
    assert snap["partial"] == []
    table = ns.to_table()
    assert table.num_rows == expected_rows
    assert set(table.column("commit").to_pylist()) == expected_commits
    for marker in expected_commits:
        w, i = divmod(marker, 100_000)
        got = table.filter(table.column("commit").to_numpy() == marker)
        assert got.sort_by("k").column("k").to_pylist() == sorted(
            batch_for(w, i).column("k").to_pylist()
        )
    pylance_rows = 0
    for entry in ns.tables():
        ds = lance.dataset(entry.uri, version=entry.read_version)
        pylance_rows += ds.count_rows()
    assert pylance_rows == expected_rows
    reader = result["reader"]
    assert reader["bad"] == [], reader["bad"]
    assert reader["errors"] == [], reader["errors"]
    assert reader["snapshots"] > 0
    disjoint = sum(1 for m in expected_commits if (m // 100_000) % 2 == 0)
    return {
        "rows": expected_rows,
        "ok": len(expected_commits),
        "ok_disjoint_writers": disjoint,
        "ok_shared_writers": len(expected_commits) - disjoint,
        "conflicts": conflicts,
    }


def test_concurrent_writers_8x25(make_namespace, tmp_path):
    root = make_namespace()
    result = run_writers(root, tmp_path, writers=8, appends=25, timeout=240)
    summary = check_outcome(root, result, appends=25)
    assert summary["ok"] > 0
    print("concurrency 8x25:", summary, "reader snapshots:", result["reader"]["snapshots"])


@pytest.mark.slow
def test_concurrent_writers_big(make_namespace, tmp_path):
    root = make_namespace()
    result = run_writers(root, tmp_path, writers=16, appends=100, timeout=3000)
    summary = check_outcome(root, result, appends=100)
    assert summary["ok"] > 0
    print("concurrency 16x100:", summary, "reader snapshots:", result["reader"]["snapshots"])
