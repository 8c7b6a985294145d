"""Subprocess entry point: one writer mixing appends, deletes and merges (``python
lifecycle_workers.py ROOT WRITER OPS``); prints one JSON line per operation.

Operation ``i`` of writer ``w``: ``i % 3 == 0`` appends ``batch_for(w, i)``;
``1`` merges into the rows of the writer's oldest appended marker still present
and not merged yet (``v = v + 1000``, keys ``commit, k, v``); ``2`` deletes the
rows of its latest appended marker still present (``commit = m``). Markers are
the workers' commit markers. (Merging before deleting: once concurrent deletes
stopped failing, a merge after the delete found no marker left to merge.)
"""

from __future__ import annotations

import os
import sys

from workers import batch_for, commit_marker, emit, storage_options


def main(root: str, writer: int, ops: int) -> None:
    from lance_sql import PartitionedNamespace
    from lance_sql.errors import CommitConflictError

    ns = PartitionedNamespace.open(root, storage_options=storage_options())
    live: list[int] = []  # markers appended (ok) and not deleted (ok), merged or not
    merged: set[int] = set()
    for i in range(ops):
        kind = ("append", "merge", "delete")[i % 3]
        out: dict[str, object] = {"i": i, "op": kind}
        try:
            if kind == "append":
                out["marker"] = commit_marker(writer, i)
                ns.append(batch_for(writer, i))
                live.append(commit_marker(writer, i))
            elif kind == "delete":
                if not live:
                    continue
                m = live[-1]
                out["marker"] = m
                out["rows"] = ns.delete(f"commit = {m}")
                live.remove(m)
            else:
                cands = [m for m in live if m not in merged]
                if not cands:
                    continue
                m = cands[0]
                out["marker"] = m
                w, j = divmod(m, 100_000)
                src = batch_for(w, j).select(["commit", "k", "v"])
                res = ns.merge(
                    src, on=["commit", "k", "v"], when_matched_update={"v": "target.v + 1000"}
                )
                out["rows"] = res.updated
                merged.add(m)
        except CommitConflictError as exc:
            out.update(ok=False, error="conflict", message=str(exc))
        except Exception as exc:  # reported; the test fails on it
            out.update(ok=False, error=type(exc).__name__, message=str(exc))
        else:
            out["ok"] = True
        emit(out)


def run_op(ns: object, op: str, marker: int) -> None:
    """One delete / merge / compact of ``marker``'s rows (what the crash trials kill)."""
    if op == "delete":
        ns.delete(f"commit = {marker}")  # type: ignore[attr-defined]
    elif op == "merge":
        src = batch_for(*divmod(marker, 100_000)).select(["commit", "k", "v"])
        ns.merge(  # type: ignore[attr-defined]
            src, on=["commit", "k", "v"], when_matched_update={"v": "target.v + 1000"}
        )
    else:
        ns.compact(target_rows_per_fragment=1000)  # type: ignore[attr-defined]


def install_kill_points(point: int) -> None:
    """SIGKILL this process at the ``point``-th step boundary: just before and after every
    staged file write, Lance commit, Lance row delete and compaction."""
    import signal

    import lance
    import lance.fragment
    from lance.dataset import DatasetOptimizer

    counter = [0]

    def tick() -> None:
        if counter[0] == point:
            os.kill(os.getpid(), signal.SIGKILL)
        counter[0] += 1

    def wrap(fn):  # type: ignore[no-untyped-def]
        def wrapped(*args, **kwargs):  # type: ignore[no-untyped-def]
            tick()
            out = fn(*args, **kwargs)
            tick()
            return out

        return wrapped

    lance.fragment.write_fragments = wrap(lance.fragment.write_fragments)
    lance.LanceDataset.commit = staticmethod(wrap(lance.LanceDataset.commit))
    lance.LanceDataset.delete = wrap(lance.LanceDataset.delete)
    DatasetOptimizer.compact_files = wrap(DatasetOptimizer.compact_files)


def zygote() -> None:
    """Fork one child per stdin line ``root op marker point``; the child runs the
    operation with a kill point installed (or finishes when the point is never reached).
    Reports ``{"killed", "exit"}`` per line. Lance is imported, never started, here."""
    import lance  # noqa: F401

    import lance_sql.tables.namespace.namespace

    while True:
        line = sys.stdin.readline()
        if not line:
            break
        if not line.strip():
            continue
        root, op, marker, point = line.split()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                import lance_sql  # registers the filter planner
                from lance_sql import PartitionedNamespace

                ns = PartitionedNamespace.open(root, storage_options=storage_options())
                del lance_sql
                install_kill_points(int(point))
                run_op(ns, op, int(marker))
            except BaseException as exc:
                sys.stderr.write(f"child {op} failed: {exc!r}\n")
                code = 3
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        emit(
            {
                "killed": os.WIFSIGNALED(status),
                "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
            }
        )


if __name__ == "__main__":
    if sys.argv[1] == "zygote":
        zygote()
    else:
        main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    sys.stdout.flush()
