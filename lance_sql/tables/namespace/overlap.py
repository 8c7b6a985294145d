"""Run one function on a helper thread while the caller does something else.

The writer computes a file's column bounds (Arrow kernels) while Lance writes
the file (Rust): both release the GIL, so on two cores the bounds cost no wall
time. One long-lived helper thread per process (threads do not survive a
``fork``, e.g. PySpark's worker daemon, so a forked child makes its own).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

_POOL: tuple[int, ThreadPoolExecutor] | None = None
_LOCK = threading.Lock()


def _after_fork() -> None:  # the parent's lock may have been held by another thread
    global _LOCK
    _LOCK = threading.Lock()


os.register_at_fork(after_in_child=_after_fork)


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _LOCK:
        if _POOL is None or _POOL[0] != os.getpid():
            _POOL = (os.getpid(), ThreadPoolExecutor(1, thread_name_prefix="lance-sql-overlap"))
        return _POOL[1]


class Overlap:
    """``fn(*args)`` started on the helper thread (or run at once when ``inline``);
    :meth:`join` waits for it and re-raises its error."""

    def __init__(self, fn: Any, *args: Any, inline: bool = False) -> None:
        self._future: Future[Any] | None = None
        if inline:
            fn(*args)
        else:
            self._future = _pool().submit(fn, *args)

    def join(self, *, quiet: bool = False) -> None:
        """Wait for the function; raise its error unless ``quiet`` (the caller is already
        raising one of its own)."""
        future, self._future = self._future, None
        if future is None:
            return
        error = future.exception()
        if error is not None and not quiet:
            raise error


__all__ = ["Overlap"]
