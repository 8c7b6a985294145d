"""Several scan units read as one engine partition, with the next scans started ahead.

A namespace of many small partition tables is scanned as a few balanced
*chains* (one per engine partition) rather than one stream per table, since
every concurrent stream competes for the GIL. Reading the tables of a chain
strictly one after the other would leave the cores idle while each table's
pylance scan is opened and planned (about 0.5-1 ms per table, mostly in Rust
with the GIL released), so :class:`ChainedUnit` starts the next
:data:`PREFETCH_UNITS` tables' scans on a thread pool while the current one
is read (:func:`prefetched`); not when every unit reads without a scanner
(:meth:`~.scan.ScanUnit.starts_ahead`: the thread hop would cost more).

``SELECT count(*)`` with no filter (``columns=[]``, no filter) reads no data
at all: the chain's row count comes from metadata (live rows: physical rows
minus deletions, of the pinned versions) and is emitted as zero-column
batches.
"""

from __future__ import annotations

import collections
import concurrent.futures
import itertools
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.tables.scan import ScanUnit, balanced_groups, empty_batches, normalize_filter

#: Batches pulled from one unit's scan at a time (read-ahead per unit).
BURST = 16

#: Units of a chain whose scans run ahead of the one being read.
PREFETCH_UNITS = 2

_POOL = concurrent.futures.ThreadPoolExecutor(
    max_workers=max(4, 4 * (os.cpu_count() or 1)), thread_name_prefix="lance-sql-prefetch"
)

B = TypeVar("B")
_END = object()


def _first(iterator: Iterator[B]) -> object:
    return next(iterator, _END)


def prefetched(iterators: Iterable[Iterator[B]], ahead: int = PREFETCH_UNITS) -> Iterator[B]:
    """The items of ``iterators`` in order; the first item of the next ``ahead`` is pulled early.

    Pulling an iterator's first item is what starts a lazy scan (opening the
    pylance scanner, planning, the first decode), so up to ``ahead`` scans
    run on the pool while the current one is consumed here. An iterator is
    only ever advanced by one thread at a time. A first item the pool has not
    started yet is pulled here instead (never waits behind other queries'
    work). When the consumer stops early, started iterators are closed as
    soon as their first pull ends. Errors surface when the item is reached.
    """
    source = iter(iterators)
    pending: collections.deque[tuple[Iterator[B], concurrent.futures.Future[object]]] = (
        collections.deque()
    )

    def refill() -> None:
        while len(pending) < ahead:
            it = next(source, None)
            if it is None:
                return
            pending.append((it, _POOL.submit(_first, it)))

    raw = current = next(source, None)
    try:
        while current is not None:
            refill()
            while burst := list(itertools.islice(current, BURST)):
                yield from burst
            if not pending:
                raw = current = next(source, None)
                continue
            raw, future = pending.popleft()
            first = _first(raw) if future.cancel() else future.result()
            current = raw if first is _END else itertools.chain((first,), raw)  # type: ignore[arg-type]
    finally:
        if raw is not None:
            _close(raw)
        for it, future in pending:
            if future.cancel():
                _close(it)
            else:
                future.add_done_callback(lambda _f, it=it: _close(it))


def _close(iterator: Iterator[object]) -> None:
    close = getattr(iterator, "close", None)
    if close is not None:
        close()


class ChainedUnit(ScanUnit):
    """Several units read one after the other as one engine partition (see module doc)."""

    def __init__(self, units: Sequence[ScanUnit], schema: pa.Schema) -> None:
        self.units = list(units)
        self._schema = schema

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    @property
    def estimated_rows(self) -> int | None:
        return sum(u.estimated_rows or 0 for u in self.units)

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        batch_size: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        if columns is not None and not columns and normalize_filter(filter) is None:
            return self._counted(batch_size)
        filter = normalize_filter(filter)
        batches = (u.to_batches(columns, filter, batch_size) for u in self.units)
        ahead = PREFETCH_UNITS if any(u.starts_ahead(filter) for u in self.units) else 0
        return prefetched(batches, ahead)

    def _counted(self, batch_size: int | None) -> Iterator[pa.RecordBatch]:
        """``count(*)`` without a filter: live rows from metadata, no page read."""
        yield from empty_batches(sum(u.count_rows() for u in self.units), batch_size)

    def count_rows(self, filter: pc.Expression | None = None) -> int:
        return sum(u.count_rows(filter) for u in self.units)

    def describe(self) -> str:
        return "; ".join(u.describe() for u in self.units)


def chain_units(units: Sequence[ScanUnit], k: int, schema: pa.Schema) -> list[ScanUnit]:
    """``units`` as at most ``k`` chains balanced by estimated rows."""
    groups = balanced_groups([(i, u.estimated_rows or 0) for i, u in enumerate(units)], k)
    return [ChainedUnit([units[i] for i in g], schema) for g in groups]


__all__ = ["BURST", "PREFETCH_UNITS", "ChainedUnit", "chain_units", "prefetched"]
