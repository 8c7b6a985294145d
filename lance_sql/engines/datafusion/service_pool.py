"""``lance_sql.ServicePool``: SQL queries run in worker processes, to use every core.

Part of a query's time is Python (table provider callbacks), which runs one
thread at a time per process; workers each hold a ``SessionContext`` with the
same registrations. Workers are started with ``spawn``: a forked process would
inherit DataFusion's and pylance's runtime threads in an unusable state.
"""

from __future__ import annotations

import concurrent.futures
import concurrent.futures.process
import multiprocessing
import os
import pickle
import threading
import time
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

#: (kind, name, location, keyword arguments) of each registration, in order
Registration = tuple[str, str, str, tuple[tuple[str, Any], ...]]


class ServicePool:
    """Run SQL on ``processes`` worker processes sharing the registered tables.

    ``processes``: worker count (default: the CPU count). ``warm_up``: queries
    every worker runs once when it starts (e.g. one that reads every partition
    table, so that the first real queries find them open).
    """

    def __init__(self, processes: int | None = None, *, warm_up: Sequence[str] = ()) -> None:
        self.processes = max(1, int(processes or os.cpu_count() or 1))
        self._warm_up = tuple(warm_up)
        self._registrations: tuple[Registration, ...] = ()
        self._lock = threading.Lock()
        self._executor: concurrent.futures.ProcessPoolExecutor | None = None

    # -- tables ---------------------------------------------------------------------
    def register_namespace(self, name: str, root: str | os.PathLike[str], **options: Any) -> None:
        """``SessionContext.register_namespace(name, root, **options)`` in every worker."""
        self._register("namespace", name, os.fspath(root), options)

    def register_lance(self, name: str, uri: str | os.PathLike[str], **options: Any) -> None:
        """``SessionContext.register_lance(name, uri, **options)`` in every worker."""
        self._register("lance", name, os.fspath(uri), options)

    def _register(self, kind: str, name: str, where: str, options: dict[str, Any]) -> None:
        entry: Registration = (kind, name, where, tuple(sorted(options.items())))
        _check_registration(entry)  # the caller sees a bad registration here, not later
        with self._lock:
            kept = tuple(r for r in self._registrations if r[1] != name)
            self._registrations = (*kept, entry)

    # -- queries --------------------------------------------------------------------
    def submit(self, query: str) -> concurrent.futures.Future[pa.Table]:
        """A future of ``query``'s result table, run in a free worker."""
        with self._lock:
            registrations = self._registrations
            executor = self._started()
        try:
            inner = executor.submit(_run, registrations, query)
        except concurrent.futures.process.BrokenProcessPool:  # a worker died: start anew
            with self._lock:
                if self._executor is executor:
                    self._executor = None
                executor = self._started()
            inner = executor.submit(_run, registrations, query)
        outer: concurrent.futures.Future[pa.Table] = concurrent.futures.Future()

        def done(f: concurrent.futures.Future[tuple[bool, Any]]) -> None:
            try:
                ok, value = f.result()
            except BaseException as exc:  # the worker died: this query fails, the next
                outer.set_exception(exc)  # one starts new workers (see above)
                return
            if ok:
                outer.set_result(pa.ipc.open_stream(value).read_all())
            else:
                outer.set_exception(value)

        inner.add_done_callback(done)
        return outer

    def start(self, timeout: float = 600.0) -> None:
        """Start every worker and wait until each has registered the tables and run ``warm_up``.

        Optional: the first queries start workers as needed (and wait for them).
        """
        with self._lock:
            executor = self._started()
        seen: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(seen) < self.processes:
            left = deadline - time.monotonic()
            if left <= 0:
                missing = self.processes - len(seen)
                raise TimeoutError(f"ServicePool: {missing} workers did not start in time")
            pings = [executor.submit(_pid, 0.05) for _ in range(self.processes)]
            seen.update(f.result(timeout=left) for f in pings)

    def sql(self, query: str) -> pa.Table:
        """``query``'s result as a ``pyarrow.Table`` (run in a worker process)."""
        return self.submit(query).result()

    def _started(self) -> concurrent.futures.ProcessPoolExecutor:
        if self._executor is None:
            self._executor = concurrent.futures.ProcessPoolExecutor(
                max_workers=self.processes,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_worker,
                initargs=(self._registrations, self._warm_up),
            )
        return self._executor

    def close(self) -> None:
        """Stop the workers (queries already submitted finish first)."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)

    def __enter__(self) -> ServicePool:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __repr__(self) -> str:
        names = ", ".join(r[1] for r in self._registrations)
        return f"ServicePool(processes={self.processes}, tables=[{names}])"


def _check_registration(entry: Registration) -> None:
    _, name, _, options = entry
    try:
        pickle.dumps(options)
    except Exception as exc:
        from lance_sql.errors import PlanningError

        raise PlanningError(
            f"ServicePool: the options of table {name!r} cannot be sent to a worker process "
            f"({exc}); pass plain values (strings, numbers, dicts)"
        ) from exc


# -- worker side (runs in the worker processes) -------------------------------------

_WORKER: dict[str, Any] = {"registrations": None, "ctx": None}


def _context(registrations: tuple[Registration, ...]) -> Any:
    """This worker's context with exactly ``registrations`` applied (made anew on change)."""
    if _WORKER["registrations"] == registrations and _WORKER["ctx"] is not None:
        return _WORKER["ctx"]
    from lance_sql.engines.datafusion.context import SessionContext

    ctx = SessionContext()
    for kind, name, where, options in registrations:
        if kind == "namespace":
            ctx.register_namespace(name, where, **dict(options))
        else:
            ctx.register_lance(name, where, **dict(options))
    _WORKER["ctx"], _WORKER["registrations"] = ctx, registrations
    return ctx


def _start_worker(registrations: tuple[Registration, ...], warm_up: tuple[str, ...]) -> None:
    """Register and warm up; a failure is left for the first query to raise (a failing
    initializer would break the whole pool)."""
    try:
        ctx = _context(registrations)
        for query in warm_up:
            ctx.sql(query).collect()
    except Exception:
        return


def _pid(pause: float) -> int:
    time.sleep(pause)  # holds this worker a moment, so that the other pings reach the others
    return os.getpid()


def _run(registrations: tuple[Registration, ...], query: str) -> tuple[bool, Any]:
    """(True, Arrow IPC stream bytes) or (False, the error to raise in the caller)."""
    try:
        table = _context(registrations).sql(query).to_arrow_table()
    except Exception as exc:
        return False, _sendable(exc)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return True, sink.getvalue()


def _sendable(exc: Exception) -> Exception:
    """``exc`` if it survives pickling, else an error of the nearest class that does."""
    try:
        back = pickle.loads(pickle.dumps(exc))
        if type(back) is type(exc) and str(back) == str(exc):
            return exc
    except Exception:
        pass
    from lance_sql.errors import LanceSqlError

    message = str(exc)
    for cls in type(exc).__mro__:
        if issubclass(cls, LanceSqlError) or cls is Exception:
            try:
                made = cls(message)
                pickle.loads(pickle.dumps(made))
                return made
            except Exception:
                continue
    return Exception(message)
