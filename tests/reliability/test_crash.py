"""A writer killed with SIGKILL at random moments never corrupts the namespace.

Each trial forks an appending child (from a pre-imported "zygote" process, so a
trial costs only the append) and kills it after a random delay spread over the
append's duration. After each trial: the namespace opens; it holds the rows of
before the append or after it, never part of it; every ``read_version`` in
``__manifest`` exists; and the next append succeeds. At the end,
``cleanup_namespace`` removes what the killed writers left and the namespace
reads identically.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from datetime import timedelta

import lance
import pytest
from conftest import WORKERS, worker_env
from workers import batch_for, check_snapshot

from lance_sql.tables.namespace.cleanup import cleanup_namespace
from lance_sql.tables.namespace.namespace import PartitionedNamespace

CRASH_WRITER = 1  # an odd writer: shared partitions, new tables created over the trials
NEXT_WRITER = 7
KILL_POINTS = 20  # an append of 3 partitions passes ~16 step boundaries; the rest finish


def start_zygote() -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(WORKERS), "zygote"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=worker_env(),
    )


def send(
    proc: subprocess.Popen, root: str, writer: int, i: int, delay: float, point: int = -1
) -> dict:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{root} {writer} {i} {delay} {point}\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    assert line, "the zygote process died"
    return json.loads(line)


def markers(ns: PartitionedNamespace) -> set[int]:
    return set(ns.to_table(columns=["commit"]).column("commit").to_pylist())


def check_invariants(root: str, before: set[int], marker: int) -> set[int]:
    ns = PartitionedNamespace.open(root)
    snap = check_snapshot(ns)
    assert snap["partial"] == [], snap
    now = markers(ns)
    assert now in (before, before | {marker}), (sorted(before), sorted(now))
    for entry in ns.tables():
        ds = lance.dataset(entry.uri, version=entry.read_version)  # the pinned version exists
        assert ds.version == entry.read_version
    return now


def run_trials(root: str, trials: int, seed: int) -> dict:
    rng = random.Random(seed)
    proc = start_zygote()
    stats = {"trials": 0, "killed": 0, "finished": 0, "committed": 0}
    try:
        # Calibrate: a full append tells how long the window to kill in is.
        for warm in (90_000, 90_001):
            result = send(proc, root, CRASH_WRITER, warm, -1)
            assert result["exit"] == 0, result
        duration = result["seconds"]
        before = markers(PartitionedNamespace.open(root))
        writer_ns = PartitionedNamespace.open(root)
        for t in range(1, trials + 1):
            marker = CRASH_WRITER * 100_000 + t
            if t % 2:  # every step boundary of the protocol in turn
                point, delay = (t // 2) % KILL_POINTS, -1.0
            else:  # anywhere, including inside pylance's own writes
                point, delay = -1, rng.uniform(0.0, duration * 1.1)
            result = send(proc, root, CRASH_WRITER, t, delay, point)
            stats["trials"] += 1
            if result["killed"]:
                stats["killed"] += 1
            else:
                assert result["exit"] == 0, result
                stats["finished"] += 1
            now = check_invariants(root, before, marker)
            stats["committed"] += marker in now
            # The next append succeeds (it restores over whatever the killed one left).
            nxt = NEXT_WRITER * 100_000 + t
            writer_ns.append(batch_for(NEXT_WRITER, t))
            before = check_invariants(root, now, nxt)
            assert nxt in before
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=60)
    return stats


def test_sigkill_writer_50_trials(tmp_path, make_namespace):
    root = make_namespace()
    stats = run_trials(root, trials=50, seed=10)
    assert stats["trials"] == 50
    assert stats["killed"] >= 10  # the delays really land inside appends
    print("crash trials:", stats)
    ns = PartitionedNamespace.open(root)
    rows = ns.to_table().sort_by([("commit", "ascending"), ("k", "ascending"), ("v", "ascending")])
    report = cleanup_namespace(ns, older_than=timedelta(0), dry_run=False)
    print(report)
    after = PartitionedNamespace.open(root)
    assert after.manifest_version == ns.manifest_version
    again = after.to_table().sort_by(
        [("commit", "ascending"), ("k", "ascending"), ("v", "ascending")]
    )
    assert again.equals(rows)
    after.append(batch_for(NEXT_WRITER, 10_000))
    assert after.count_rows() == rows.num_rows + batch_for(NEXT_WRITER, 10_000).num_rows
    second = cleanup_namespace(PartitionedNamespace.open(root), older_than=timedelta(0))
    assert second.files == []


@pytest.mark.slow
def test_sigkill_writer_500_trials(tmp_path, make_namespace):
    root = make_namespace()
    stats = run_trials(root, trials=500, seed=11)
    print("crash trials:", stats)
