"""Deletes, merges and compactions killed with SIGKILL at every step never show half-done.

Each trial forks (from a pre-imported zygote) a process running one operation
on one commit marker's rows (delete, merge ``v + 1000``, or compact) and kills
it at a step boundary of the protocol (staged files, each Lance commit, row
delete, compaction), walking through them in turn. After each trial the
namespace opens, every marker is whole, and the rows are exactly those of
before or after the operation; the next operation succeeds on what the killed
one left. At the end ``cleanup`` removes the leftovers and the rows are unchanged.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta

import lance
import pytest
from conftest import HERE, worker_env
from workers import batch_for, check_snapshot

import lance_sql
from lance_sql.tables.namespace.cleanup import cleanup_namespace

WRITER = 3
OPS = ("delete", "merge", "compact")
POINTS = 30  # restore + delete or compaction per table, then __manifest; later points finish


def _rows(root: str) -> list[tuple[int, int, int, int]]:
    t = lance_sql.PartitionedNamespace.open(root).to_table()
    return sorted(
        zip(*(t.column(c).to_pylist() for c in ("commit", "k", "writer", "v")), strict=True)
    )


def _after(rows: list[tuple[int, int, int, int]], op: str, marker: int) -> list:
    if op == "delete":
        return [r for r in rows if r[0] != marker]
    if op == "merge":
        return sorted((c, k, w, v + 1000 if c == marker else v) for c, k, w, v in rows)
    return rows


def _send(proc: subprocess.Popen, *args: object) -> dict:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(" ".join(map(str, args)) + "\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    assert line, "the zygote died"
    return json.loads(line)


def run_trials(root: str, trials: int) -> dict[str, int]:
    ns = lance_sql.PartitionedNamespace.open(root)
    for i in range(trials + 4):  # markers to operate on, several fragments per table
        ns.append(batch_for(WRITER, i))
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "lifecycle_workers.py"), "zygote"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=worker_env(),
    )
    stats = {"trials": 0, "killed": 0, "finished": 0, "took_effect": 0}
    try:
        for t in range(trials):
            op = OPS[t % 3]
            marker = WRITER * 100_000 + t
            before = _rows(root)
            k = t // 3  # every operation walks the same boundaries in turn
            point = (k * 5 + k // 6) % POINTS
            result = _send(proc, root, op, marker, point)
            stats["trials"] += 1
            if result["killed"]:
                stats["killed"] += 1
            else:
                assert result["exit"] == 0, result
                stats["finished"] += 1
            fresh = lance_sql.PartitionedNamespace.open(root)
            assert check_snapshot(fresh)["partial"] == []
            for entry in fresh.tables():
                assert lance.dataset(entry.uri, version=entry.read_version).version == (
                    entry.read_version
                )
            now = _rows(root)
            after = _after(before, op, marker)
            assert now in (before, after), (op, marker)
            stats["took_effect"] += now == after != before
            if now == before and op != "compact":  # the next writer finishes the job
                if op == "delete":
                    fresh.delete(f"commit = {marker}")
                else:
                    src = batch_for(WRITER, t).select(["commit", "k", "v"])
                    fresh.merge(
                        src,
                        on=["commit", "k", "v"],
                        when_matched_update={"v": "target.v + 1000"},
                    )
                assert _rows(root) == after
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=60)
    return stats


def _run(make_namespace, trials: int) -> None:
    root = make_namespace()
    stats = run_trials(root, trials)
    assert stats["killed"] >= trials // 3, stats
    print("lifecycle crash trials:", stats)
    rows = _rows(root)
    cleanup_namespace(
        lance_sql.PartitionedNamespace.open(root), older_than=timedelta(0), dry_run=False
    )
    assert _rows(root) == rows


def test_sigkill_during_delete_merge_compact(make_namespace) -> None:
    _run(make_namespace, 24)


@pytest.mark.slow
def test_sigkill_during_delete_merge_compact_60(make_namespace) -> None:
    _run(make_namespace, 60)
