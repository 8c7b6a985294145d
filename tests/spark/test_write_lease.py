"""The lease/fence protocol against zombie task attempts (no Spark needed: threads play tasks)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from lance_sql.engines.spark import write_journal
from lance_sql.engines.spark.write_journal import (
    AttemptLease,
    WriteFencedError,
    fence_and_wait,
    journal_uri,
)


def test_no_journal_no_wait(tmp_path: Path) -> None:
    t0 = time.monotonic()
    assert fence_and_wait(str(tmp_path), "w1", None) == []
    assert time.monotonic() - t0 < 1.0
    assert not os.path.exists(journal_uri(str(tmp_path), "w1"))  # nothing created


def test_driver_waits_for_a_live_attempt_and_the_attempt_sees_the_fence(tmp_path: Path) -> None:
    root = str(tmp_path)
    events: list[str] = []

    def zombie() -> None:
        with AttemptLease(root, "w", "a1", None, heartbeat=0.05) as lease:
            try:
                while True:  # keeps "writing" until it notices the fence
                    time.sleep(0.02)
                    lease.check()
            except WriteFencedError:
                time.sleep(0.3)  # removing its own files takes a while
                events.append("zombie cleaned up")

    t = threading.Thread(target=zombie)
    t.start()
    time.sleep(0.2)
    alive = fence_and_wait(root, "w", None, stale=2.0, max_wait=10.0)
    events.append("driver proceeds")
    t.join()
    assert alive == []
    assert events == ["zombie cleaned up", "driver proceeds"]


def test_committed_attempts_are_not_waited_for(tmp_path: Path) -> None:
    root = str(tmp_path)
    lease = AttemptLease(root, "w", "winner", None)
    lease.__enter__()
    try:
        lease._stop.set()  # a committed attempt's lease that lingers: never waited for
        t0 = time.monotonic()
        assert fence_and_wait(root, "w", None, committed_attempts=["winner"], stale=5.0) == []
        assert time.monotonic() - t0 < 2.0
    finally:
        lease.__exit__(None, None, None)


def test_dead_attempt_is_given_up_after_stale(tmp_path: Path) -> None:
    root = str(tmp_path)
    d = journal_uri(root, "w")
    os.makedirs(d)
    Path(d, "dead.live").write_bytes(b"7")  # a killed worker's lease: never beats again
    t0 = time.monotonic()
    assert fence_and_wait(root, "w", None, stale=0.5, max_wait=10.0) == []
    assert 0.5 <= time.monotonic() - t0 < 5.0


def test_max_wait_bounds_the_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = str(tmp_path)
    monkeypatch.setattr(write_journal, "HEARTBEAT_SECONDS", 0.05)
    with AttemptLease(root, "w", "stuck", None, heartbeat=0.05) as lease:
        t0 = time.monotonic()
        alive = fence_and_wait(root, "w", None, stale=60.0, max_wait=0.5)
        assert alive == ["stuck"]
        assert time.monotonic() - t0 < 5.0
        with pytest.raises(WriteFencedError, match="stuck"):
            lease.check()
    assert not os.path.exists(os.path.join(journal_uri(root, "w"), "stuck.live"))
