"""Run one function on a helper thread while the caller does something else.

The writer computes bounds while Lance writes the file (both release the GIL). One
helper thread per process; a forked child makes its own.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from lance_sql.tables.dataset_cache import PerProcess

_pool = PerProcess(lambda: ThreadPoolExecutor(1, thread_name_prefix="lance-sql-overlap"))


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
