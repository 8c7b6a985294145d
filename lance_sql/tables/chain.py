"""Several scan units read as one engine partition, with the next scans started ahead.

Many small tables are read as a few chains rather than one stream per table (streams
compete for the GIL); the next :data:`PREFETCH_UNITS` scans are opened on a pool while
the current one is read, since opening releases the GIL. When most units are tiny
(:meth:`~.scan.ScanUnit.read_small`), an unfiltered read gathers them into groups read
as one pool task and one batch each. An unfiltered ``count(*)`` comes from metadata.
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

from lance_sql.tables.scan import (
    ScanUnit,
    balanced_groups,
    empty_batches,
    normalize_filter,
    projected_schema,
)

#: Batches pulled from one unit's scan at a time (read-ahead per unit).
BURST = 16

#: Units of a chain whose scans run ahead of the one being read.
PREFETCH_UNITS = 2

#: Small units read by one task of the gathered route, and the rows that end a group sooner.
GATHER = 64
GATHER_ROWS = 16384

_POOL = concurrent.futures.ThreadPoolExecutor(
    max_workers=max(4, 4 * (os.cpu_count() or 1)), thread_name_prefix="lance-sql-prefetch"
)

B = TypeVar("B")
_END = object()


def _first(iterator: Iterator[B]) -> object:
    return next(iterator, _END)


def prefetched(iterators: Iterable[Iterator[B]], ahead: int = PREFETCH_UNITS) -> Iterator[B]:
    """The items of ``iterators`` in order; the first item of the next ``ahead`` is pulled
    early on the pool (that starts a lazy scan).

    One thread at a time advances an iterator; a first item the pool has not started
    is pulled here instead; when the consumer stops, started iterators are closed as
    their first pull ends. Errors surface when the item is reached.
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
        if filter is None and columns:
            small = sum(not u.starts_ahead(None) for u in self.units)
            if small and 2 * small >= len(self.units):
                return self._gathered(list(columns), batch_size)
        batches = (u.to_batches(columns, filter, batch_size) for u in self.units)
        ahead = PREFETCH_UNITS if any(u.starts_ahead(filter) for u in self.units) else 0
        return prefetched(batches, ahead)

    def _gathered(self, columns: list[str], batch_size: int | None) -> Iterator[pa.RecordBatch]:
        """Small units read in groups on the pool, each group's rows as one batch (module
        doc); a unit that no longer reads that way is streamed in its place."""
        schema = projected_schema(self._schema, columns)
        reads = (_read_group(g, columns) for g in _groups(self.units))
        for parts in prefetched(reads):
            tables: list[pa.Table] = []
            for part in parts:
                if isinstance(part, ScanUnit):
                    yield from _combined(tables, schema, batch_size)
                    tables = []
                    yield from part.to_batches(columns, None, batch_size)
                else:
                    tables.extend(part)
            yield from _combined(tables, schema, batch_size)

    def _counted(self, batch_size: int | None) -> Iterator[pa.RecordBatch]:
        """``count(*)`` without a filter: live rows from metadata, no page read."""
        yield from empty_batches(sum(u.count_rows() for u in self.units), batch_size)

    def count_rows(self, filter: pc.Expression | None = None) -> int:
        return sum(u.count_rows(filter) for u in self.units)

    def describe(self) -> str:
        return "; ".join(u.describe() for u in self.units)


def _groups(units: Sequence[ScanUnit]) -> Iterator[Sequence[ScanUnit]]:
    start = rows = 0
    for i, u in enumerate(units):
        rows += u.estimated_rows or 0
        if i + 1 - start >= GATHER or rows >= GATHER_ROWS:
            yield units[start : i + 1]
            start, rows = i + 1, 0
    if start < len(units):
        yield units[start:]


def _read_group(
    units: Sequence[ScanUnit], columns: list[str]
) -> Iterator[list[list[pa.Table] | ScanUnit]]:
    """One item: each unit's tables (:meth:`~.scan.ScanUnit.read_small`), or the unit."""
    yield [u if (t := u.read_small(columns)) is None else t for u in units]


def _combined(
    tables: list[pa.Table], schema: pa.Schema, batch_size: int | None
) -> Iterator[pa.RecordBatch]:
    """The rows of ``tables`` (``schema``'s names and types) as few batches."""
    if not any(t.num_rows for t in tables):
        return
    arrays = [
        pa.chunked_array([c for t in tables for c in t.column(f.name).chunks], type=f.type)
        for f in schema
    ]
    table = pa.Table.from_arrays(arrays, schema=schema).combine_chunks()
    yield from (b for b in table.to_batches(max_chunksize=batch_size) if b.num_rows)


def chain_units(units: Sequence[ScanUnit], k: int, schema: pa.Schema) -> list[ScanUnit]:
    """``units`` as at most ``k`` chains balanced by estimated rows."""
    groups = balanced_groups([(i, u.estimated_rows or 0) for i, u in enumerate(units)], k)
    return [ChainedUnit([units[i] for i in g], schema) for g in groups]
