"""8 writer processes mixing appends, deletes and merges on one namespace (issue #17).

Every operation is one ``__manifest`` commit or nothing: at the end each commit
marker's rows are all present (appended, not deleted) or all absent, with
``v`` shifted by 1000 exactly when a merge of that marker succeeded; a reader
polling meanwhile never sees part of a marker; every failure is a
``CommitConflictError``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from conftest import HERE, read_lines, start_worker, worker_env
from workers import batch_for

from lance_sql.tables.namespace.namespace import PartitionedNamespace


def _writer(root: str, w: int, ops: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(HERE / "lifecycle_workers.py"), root, str(w), str(ops)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=worker_env(),
    )


def test_appends_deletes_and_merges_8_writers(make_namespace, tmp_path: Path) -> None:
    root = make_namespace()
    stop = tmp_path / "stop-reader"
    reader = start_worker("read", root, stop)
    ops = 12
    procs = [_writer(root, w, ops) for w in range(8)]
    deadline = time.monotonic() + 400
    results: dict[int, list[dict]] = {}
    for w, p in enumerate(procs):
        out, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
        assert p.returncode == 0, err[-2000:]
        results[w] = read_lines(out)
    stop.write_text("stop")
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err[-2000:]
    seen = read_lines(out)[-1]
    assert seen["bad"] == [] and seen["errors"] == [], seen

    present: set[int] = set()
    shifted: set[int] = set()
    oks = {"append": 0, "delete": 0, "merge": 0}
    for lines in results.values():
        for line in lines:
            if not line["ok"]:
                assert line["error"] == "conflict", f"{line['error']}: {line['message']}"
                continue
            oks[line["op"]] += 1
            m = line["marker"]
            if line["op"] == "append":
                present.add(m)
            elif line["op"] == "delete":
                w, i = divmod(m, 100_000)
                assert line["rows"] == batch_for(w, i).num_rows
                present.discard(m)
            else:
                assert line["rows"] == batch_for(*divmod(m, 100_000)).num_rows
                shifted.add(m)
    assert oks["append"] > 0 and oks["delete"] > 0 and oks["merge"] > 0, oks
    table = PartitionedNamespace.open(root).to_table()
    assert set(table.column("commit").to_pylist()) == present
    for m in present:
        want = batch_for(*divmod(m, 100_000))
        got = table.filter(table.column("commit").to_numpy() == m)
        delta = 1000 if m in shifted else 0
        got_kv = zip(got.column("k").to_pylist(), got.column("v").to_pylist(), strict=True)
        want_kv = zip(want.column("k").to_pylist(), want.column("v").to_pylist(), strict=True)
        assert sorted(got_kv) == sorted((k, v + delta) for k, v in want_kv)
    print("lifecycle concurrency 8x12:", oks, "reader snapshots:", seen["snapshots"])
