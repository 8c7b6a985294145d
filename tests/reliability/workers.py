"""Subprocess entry points for the reliability tests (run as ``python workers.py CMD ...``).

Real processes, not threads: concurrent writers and a SIGKILL must exercise
the same file-system races a deployment sees. Each command prints one JSON
document per line on stdout, which the test reads back.

The namespace used by these tests has columns ``k`` (int32, identity
partition), ``writer`` (int32), ``commit`` (int64, one value per append: the
"marker" a reader groups by) and ``v`` (int64).
"""

from __future__ import annotations

import json
import os
import sys
import time

import pyarrow as pa

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int32(), nullable=False),
        pa.field("writer", pa.int32(), nullable=False),
        pa.field("commit", pa.int64(), nullable=False),
        pa.field("v", pa.int64(), nullable=False),
    ]
)
SPEC = [{"source": "k", "transform": "identity"}]
ROWS_PER_PARTITION = 2


def storage_options() -> dict[str, str] | None:
    text = os.environ.get("LANCE_SQL_TEST_STORAGE_OPTIONS")
    return json.loads(text) if text else None


def partitions_of(writer: int, i: int) -> list[int]:
    """Partitions of append ``i`` of ``writer``.

    Even writers touch only their own two partitions (disjoint from everyone:
    their conflicts must be rebased away); odd writers touch a private one and
    two they share with other odd writers (true conflicts on the same table).
    """
    if writer % 2 == 0:
        return [100 + writer, 200 + writer]
    return [100 + writer, writer % 3, (writer + i) % 4]


def commit_marker(writer: int, i: int) -> int:
    return writer * 100_000 + i


def batch_for(writer: int, i: int) -> pa.Table:
    """Rows of one append: ROWS_PER_PARTITION rows in each partition, one marker."""
    keys = []
    for p in dict.fromkeys(partitions_of(writer, i)):
        keys.extend([p] * ROWS_PER_PARTITION)
    n = len(keys)
    marker = commit_marker(writer, i)
    return pa.table(
        {
            "k": pa.array(keys, pa.int32()),
            "writer": pa.array([writer] * n, pa.int32()),
            "commit": pa.array([marker] * n, pa.int64()),
            "v": pa.array(range(n), pa.int64()),
        },
        schema=SCHEMA,
    )


def emit(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def cmd_append(root: str, writer: int, count: int) -> None:
    """``count`` appends; each outcome is reported (ok with rows, or the error)."""
    from lance_sql.errors import CommitConflictError
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    ns = PartitionedNamespace.open(root, storage_options=storage_options())
    for i in range(count):
        data = batch_for(writer, i)
        try:
            version = ns.append(data)
        except CommitConflictError as exc:
            emit({"i": i, "ok": False, "error": "conflict", "message": str(exc)})
        except Exception as exc:  # reported, and the test fails on it
            emit({"i": i, "ok": False, "error": type(exc).__name__, "message": str(exc)})
        else:
            emit({"i": i, "ok": True, "rows": data.num_rows, "version": version})


def check_snapshot(ns: object) -> dict[str, object]:
    """Rows of one namespace snapshot grouped by commit marker; partial commits listed."""
    table = ns.to_table(columns=["writer", "commit"])  # type: ignore[attr-defined]
    counts: dict[int, int] = {}
    for marker in table.column("commit").to_pylist():
        counts[marker] = counts.get(marker, 0) + 1
    partial = []
    for marker, n in counts.items():
        writer, i = divmod(marker, 100_000)
        if n != batch_for(writer, i).num_rows:
            partial.append([marker, n])
    return {"rows": table.num_rows, "commits": len(counts), "partial": partial}


def cmd_read(root: str, stop_file: str) -> None:
    """Poll the latest snapshot until ``stop_file`` exists; report every inconsistency."""
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    seen = 0
    bad: list[object] = []
    errors: list[str] = []
    last_rows = -1
    while True:
        stop = os.path.exists(stop_file)
        try:
            ns = PartitionedNamespace.open(root, storage_options=storage_options())
            result = check_snapshot(ns)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
        else:
            seen += 1
            if result["partial"]:
                bad.append({"version": ns.manifest_version, **result})
            last_rows = int(result["rows"])  # type: ignore[arg-type]
        if stop:
            break
        time.sleep(0.1)
    emit({"snapshots": seen, "bad": bad, "errors": errors[:20], "last_rows": last_rows})


def cmd_crash_append(root: str, writer: int, i: int) -> None:
    """One append (the test kills this process at a random moment)."""
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    ns = PartitionedNamespace.open(root, storage_options=storage_options())
    emit({"ready": True})
    ns.append(batch_for(writer, i))
    emit({"done": True})


def install_kill_point(point: int) -> None:
    """SIGKILL this process at the ``point``-th step boundary of the write protocol.

    Boundaries are just before and just after every call of
    ``lance.fragment.write_fragments`` (staging files of a partition table or of
    ``__manifest``) and ``lance.LanceDataset.commit`` (Restore, table commits,
    the ``__manifest`` commit), so the trials walk through every step.
    """
    import signal

    import lance
    import lance.fragment

    counter = [0]

    def tick() -> None:
        if counter[0] == point:
            os.kill(os.getpid(), signal.SIGKILL)
        counter[0] += 1

    def wrap(fn):
        def wrapped(*args, **kwargs):
            tick()
            out = fn(*args, **kwargs)
            tick()
            return out

        return wrapped

    lance.fragment.write_fragments = wrap(lance.fragment.write_fragments)
    commit = lance.LanceDataset.commit
    lance.LanceDataset.commit = staticmethod(wrap(commit))


def cmd_zygote() -> None:
    """Fork one appending child per stdin line; kill it at a step boundary or after a delay.

    Importing pylance and lance-sql takes seconds on a loaded machine; forking a
    process that imported them (but never started Lance's runtime) makes each
    crash trial cost only the append itself. Lines: ``root writer i delay
    point``. The child first reads the namespace (warming Lance up, so the
    delay falls inside the append proper), says so on a pipe, then appends.
    ``point >= 0`` kills it at that step boundary (:func:`install_kill_point`);
    otherwise the zygote kills it ``delay`` seconds after it said ready (a
    negative delay lets it finish). Reports ``{"killed", "exit", "seconds"}``
    where seconds is the append's own duration when it finished.
    """
    import signal

    import lance  # noqa: F401  (imported before fork, never used here)

    import lance_sql.tables.namespace.namespace  # noqa: F401

    while True:
        line = sys.stdin.readline()
        if not line:
            break
        if not line.strip():
            continue
        root, writer, i, delay, point = line.split()
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: warm up, one append, then leave without any cleanup
            os.close(rfd)
            code = 0
            try:
                from lance_sql.tables.namespace.namespace import PartitionedNamespace

                ns = PartitionedNamespace.open(root, storage_options=storage_options())
                ns.to_table()
                if int(point) >= 0:
                    install_kill_point(int(point))
                os.write(wfd, b"ready\n")
                start = time.monotonic()
                ns.append(batch_for(int(writer), int(i)))
                os.write(wfd, f"{time.monotonic() - start}\n".encode())
            except BaseException as exc:
                sys.stderr.write(f"child append failed: {exc!r}\n")
                code = 3
            os._exit(code)
        os.close(wfd)
        with os.fdopen(rfd, "rb") as pipe:
            pipe.readline()  # "ready" (or EOF if the child died first)
            wait = float(delay)
            status = None
            if wait >= 0 and int(point) < 0:
                deadline = time.monotonic() + wait
                while status is None and time.monotonic() < deadline:
                    done, st = os.waitpid(pid, os.WNOHANG)
                    if done:
                        status = st
                    else:
                        time.sleep(0.001)
                if status is None:
                    os.kill(pid, signal.SIGKILL)  # a zombie ignores it: WIFSIGNALED tells
            if status is None:
                _, status = os.waitpid(pid, 0)
            tail = pipe.read().decode().split()
        emit(
            {
                "killed": os.WIFSIGNALED(status),
                "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
                "seconds": float(tail[-1]) if tail else None,
            }
        )


def main(argv: list[str]) -> None:
    cmd = argv[0]
    if cmd == "append":
        cmd_append(argv[1], int(argv[2]), int(argv[3]))
    elif cmd == "read":
        cmd_read(argv[1], argv[2])
    elif cmd == "zygote":
        cmd_zygote()
    elif cmd == "crash-append":
        cmd_crash_append(argv[1], int(argv[2]), int(argv[3]))
    else:
        raise SystemExit(f"unknown command {cmd!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
