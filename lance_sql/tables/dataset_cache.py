"""Opened Lance datasets shared across queries: one pylance session, an LRU by pinned version.

Opening a table reads and parses its manifest, again for every new context and every
``__manifest`` version that pins it unchanged. The cache is keyed by *pinned* version
(immutable, so a hit is always right); "latest" and tags (which move) are never cached.
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Generic, TypeVar

#: Byte capacities of the shared pylance session's caches.
METADATA_CACHE_BYTES = 512 * 1024 * 1024
INDEX_CACHE_BYTES = 1024 * 1024 * 1024

#: Opened datasets kept across queries (each holds its manifest: a few KB to a few MB).
OPEN_CACHE_ENTRIES = 4096

#: Threads that open (or, for a row operation, read) datasets concurrently.
OPEN_THREADS = max(8, 2 * (os.cpu_count() or 1))

T = TypeVar("T")


class PerProcess(Generic[T]):
    """``factory()``, made on the first call and shared by every thread of the process; a
    forked child (PySpark workers) makes its own, since sessions, pools and locks do not
    survive a fork."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._after_fork()
        os.register_at_fork(after_in_child=self._after_fork)

    def _after_fork(self) -> None:
        self._lock = threading.Lock()
        self._value: T | None = None

    def __call__(self) -> T:
        with self._lock:
            if self._value is None:
                self._value = self._factory()
            return self._value


def _new_read_session() -> Any:
    import lance

    return lance.Session(
        metadata_cache_size_bytes=METADATA_CACHE_BYTES,
        index_cache_size_bytes=INDEX_CACHE_BYTES,
    )


#: The process-wide ``lance.Session`` that every read-only open shares.
read_session: PerProcess[Any] = PerProcess(_new_read_session)


def options_key(storage_options: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    """Storage options as a hashable part of a cache key."""
    return tuple(sorted((storage_options or {}).items()))


V = TypeVar("V")


class OpenCache(Generic[V]):
    """A bounded, thread-safe LRU (``capacity`` entries, ``max_weight`` total; the newest
    entry is kept even if heavier); :meth:`get_or_open` opens a missing key outside the
    lock, and the first stored result wins."""

    def __init__(
        self,
        capacity: int = OPEN_CACHE_ENTRIES,
        weight: Callable[[V], int] = lambda _: 0,
        max_weight: int = 0,
    ) -> None:
        self.capacity = capacity
        self._weight = weight
        self._max_weight = max_weight
        self._total = 0
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: Hashable, value: V) -> V:
        with self._lock:
            existing = self._items.get(key)
            if existing is not None:
                self._items.move_to_end(key)
                return existing
            self._items[key] = value
            self._total += self._weight(value)
            while len(self._items) > self.capacity or (
                len(self._items) > 1 and self._total > self._max_weight
            ):
                _, old = self._items.popitem(last=False)
                self._total -= self._weight(old)
            return value

    def get_or_open(self, key: Hashable, opener: Callable[[], V]) -> V:
        hit = self.get(key)
        if hit is not None:
            return hit
        return self.put(key, opener())

    def discard(self, key: Hashable) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._total -= self._weight(old)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._total = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


def version_token(
    uri: str, version: int, branch: str | None, storage_options: Mapping[str, str] | None
) -> tuple[Any, ...] | None:
    """What identifies the manifest file of ``uri`` at ``version`` (None: not found): a root
    restored from a backup and written again reuses version numbers for other rows, so
    cached opens are checked against this (one ``stat`` or HEAD)."""
    from lance_sql.format.storage import resolve
    from lance_sql.format.versions import branch_root, manifest_name_v1, manifest_name_v2

    try:
        versions = branch_root(resolve(uri, storage_options), branch).join("_versions")
        for name in (manifest_name_v2(version), manifest_name_v1(version)):
            try:
                info = versions.fs.info(f"{versions.path}/{name}")
            except FileNotFoundError:
                continue
            return (name, *(info.get(k) for k in _TOKEN_KEYS))
    except (OSError, ValueError):
        return None
    return None


_TOKEN_KEYS = ("size", "mtime", "ino", "created", "ETag", "LastModified", "etag", "generation")


class PinnedCache(Generic[V]):
    """:class:`OpenCache` of opens at a pinned version, each checked by :func:`version_token`."""

    def __init__(self, capacity: int = OPEN_CACHE_ENTRIES) -> None:
        self._cache: OpenCache[tuple[V, tuple[Any, ...] | None]] = OpenCache(capacity)
        self.misses = 0  # opens (tests and benchmarks count them)

    def get_or_open(
        self,
        key: Hashable,
        token: Callable[[], tuple[Any, ...] | None],
        opener: Callable[[], V],
        valid: Callable[[V], bool] = lambda _: True,
    ) -> V:
        """The cached value of ``key`` if its token still matches and ``valid`` holds, else a
        fresh ``opener()`` (cached with the token read before opening)."""
        now = token()
        hit = self._cache.get(key)
        if hit is not None and now is not None and hit[1] == now and valid(hit[0]):
            return hit[0]
        if hit is not None:
            self._cache.discard(key)
        self.misses += 1
        value = opener()
        if now is None:
            return value  # no token to check a later hit against: not cached
        return self._cache.put(key, (value, now))[0]

    def clear(self) -> None:
        self._cache.clear()
        self.misses = 0


#: Datasets reopened at a pinned version by scan units shipped to other processes
#: (Spark tasks unpickle units; a reused Python worker keeps them across tasks).
_PINNED: PinnedCache[Any] = PinnedCache()


def open_pinned(uri: str, version: int, storage_options: Mapping[str, str] | None) -> Any:
    """The pylance dataset at ``uri`` and ``version``, shared process-wide (never commit on it)."""
    import lance

    opts = dict(storage_options) if storage_options else None
    return _PINNED.get_or_open(
        (uri, version, options_key(storage_options)),
        lambda: version_token(uri, version, None, storage_options),
        lambda: lance.dataset(uri, version=version, storage_options=opts, session=read_session()),
        lambda ds: bool(ds.version == version),  # nobody moved the shared dataset (checkout)
    )


_POOL = concurrent.futures.ThreadPoolExecutor(
    max_workers=OPEN_THREADS, thread_name_prefix="lance-sql-open"
)

R = TypeVar("R")


def open_all(items: Iterable[T], opener: Callable[[T], R]) -> list[R]:
    """``[opener(i) for i in items]``, run concurrently on a process-wide pool (the first
    error is raised); safe from any thread, as the pool never calls back into DataFusion."""
    items = list(items)
    if len(items) <= 1:
        return [opener(i) for i in items]
    futures = [_POOL.submit(opener, i) for i in items]
    return [f.result() for f in futures]
