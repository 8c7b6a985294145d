"""Subprocess entry point: one writer mixing appends, deletes and merges (``python
lifecycle_workers.py ROOT WRITER OPS``); prints one JSON line per operation.

Operation ``i`` of writer ``w``: ``i % 3 == 0`` appends ``batch_for(w, i)``;
``1`` deletes the rows of the writer's latest appended marker still present
(``commit = m``); ``2`` merges into the rows of such a marker (``v = v + 1000``,
keys ``commit, k, v``). Markers are the workers' commit markers.
"""

from __future__ import annotations

import sys

from workers import batch_for, commit_marker, emit, storage_options


def main(root: str, writer: int, ops: int) -> None:
    from lance_sql import PartitionedNamespace
    from lance_sql.errors import CommitConflictError

    ns = PartitionedNamespace.open(root, storage_options=storage_options())
    live: list[int] = []  # markers appended (ok) and not deleted (ok), merged or not
    merged: set[int] = set()
    for i in range(ops):
        kind = ("append", "delete", "merge")[i % 3]
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


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
    sys.stdout.flush()
