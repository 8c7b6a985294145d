"""Let DataFusion's workers leave Python before the interpreter exits.

A worker still pulling a scan batch while the interpreter finalizes aborts the
process (docs/engine-notes.md). :func:`guarded` wraps every batch iterator handed
to DataFusion; an ``atexit`` hook ends them and waits until no worker has been
inside one for :data:`GRACE` seconds (at most :data:`MAX_WAIT`).
"""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Iterator
from typing import TypeVar

T = TypeVar("T")

#: Quiet time (s) after the last batch pull before the interpreter may finalize.
GRACE = 0.05
#: Longest wait (s) at exit for pulls still running.
MAX_WAIT = 5.0

_lock = threading.Lock()
_state = {"busy": 0, "last": 0.0, "closing": False}


class _Guarded(Iterator[T]):
    __slots__ = ("_it",)

    def __init__(self, it: Iterator[T]) -> None:
        self._it = it

    def __next__(self) -> T:
        if _state["closing"]:
            raise StopIteration
        with _lock:
            _state["busy"] += 1
        try:
            return next(self._it)
        finally:
            with _lock:
                _state["busy"] -= 1
                _state["last"] = time.monotonic()


def guarded(it: Iterator[T]) -> Iterator[T]:
    """``it``, ending at once when the interpreter is about to exit."""
    return _Guarded(it)


def drain(grace: float = GRACE, max_wait: float = MAX_WAIT) -> None:
    """Stop handing out batches and wait until no worker pulls one (the ``atexit`` hook)."""
    _state["closing"] = True
    deadline = time.monotonic() + max_wait
    while time.monotonic() < deadline:
        with _lock:
            if _state["busy"] == 0 and time.monotonic() - float(_state["last"]) >= grace:
                return
        time.sleep(0.005)


atexit.register(drain)
