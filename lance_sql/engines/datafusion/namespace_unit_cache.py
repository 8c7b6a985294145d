"""Scan units of the partition tables a namespace table has read, cached by pin."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from lance_sql.errors import LanceSqlError
from lance_sql.tables.dataset_cache import open_all
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.namespace.reader import (
    PartitionTable,
    open_for_read,
    partition_units,
)
from lance_sql.tables.scan import ScanUnit

#: (object_id, uri, read_version, read_branch, read_tag) of a partition table entry.
_PinKey = tuple[str, str, "int | None", "str | None", "str | None"]


#: Cached pins kept at least, before pins a new view no longer has are dropped.
STALE_PINS_MIN = 1024


def _pin(entry: PartitionTable) -> _PinKey:
    return (entry.object_id, entry.uri, entry.read_version, entry.read_branch, entry.read_tag)


class _UnitCache:
    """Scan units of the partition tables a :class:`NamespaceTable` has read, by pin.

    Units hold no per-scan state, so queries reuse those of every earlier query that
    read the same pins; a table read at latest or at a tag is planned again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._view: PartitionedNamespace | None = None
        self._by_pin: dict[_PinKey, list[ScanUnit]] = {}
        #: pins read at latest or at a tag: planned again for each view
        self._unpinned: set[_PinKey] = set()
        self._all: list[ScanUnit] | None = None

    def units(
        self,
        ns: PartitionedNamespace,
        partitions: Iterable[PartitionTable | str] | None,
        table: Any,  # the NamespaceTable asking
    ) -> list[ScanUnit]:
        """Units of ``partitions`` (object ids or entries; all when None) in object id order."""
        by_pin, every = self._for_view(ns)
        if partitions is None and every is not None:
            return every
        if partitions is not None:
            # entries by bisection in the view's sorted tables: a pruned query selecting
            # one of 100,000s costs what it selects (its tables are in object id order)
            wanted = sorted({p if isinstance(p, str) else p.object_id for p in partitions})
            found = [ns.table_entry(oid) for oid in wanted]
            unknown = [oid for oid, e in zip(wanted, found, strict=True) if e is None]
            if unknown:
                raise LanceSqlError(f"not partition tables of this namespace: {unknown}")
            entries = [e for e in found if e is not None]
        else:
            entries = ns.tables()
        missing = [e for e in entries if _pin(e) not in by_pin]
        if missing:
            opts = table.storage_options
            opened = open_all(missing, lambda e: open_for_read(e, storage_options=opts))
            fresh = {
                _pin(e): partition_units(
                    e,
                    o,
                    table.schema,
                    rows_per_unit=table.rows_per_unit,
                    storage_options=table.storage_options,
                    metrics=table.metrics,
                    scan_options=getattr(table, "scan_options", None),
                )
                for e, o in zip(missing, opened, strict=True)
            }
            with self._lock:
                by_pin.update(fresh)
                if by_pin is self._by_pin:
                    self._unpinned.update(k for k in fresh if k[2] is None or k[4])
        out = [u for e in entries for u in by_pin[_pin(e)]]
        if partitions is None:
            with self._lock:
                if self._view is ns:
                    self._all = out
        return out

    def _for_view(
        self, ns: PartitionedNamespace
    ) -> tuple[dict[_PinKey, list[ScanUnit]], list[ScanUnit] | None]:
        """The units by pin for view ``ns`` (a new view drops those of latest/tag reads)."""
        with self._lock:
            if self._view is ns:
                return self._by_pin, self._all
            for k in self._unpinned:
                self._by_pin.pop(k, None)
            self._unpinned = set()
            self._all = None
            self._view = ns
            by_pin = self._by_pin
        # (amortized: stale pins pile up; the tables listed only then: 1-3 ms at 100,000)
        if len(by_pin) > STALE_PINS_MIN and len(by_pin) > 2 * len(ns.tables()):
            live = {_pin(e) for e in ns.tables()}
            with self._lock:
                self._by_pin = {k: v for k, v in self._by_pin.items() if k in live}
                return self._by_pin, self._all
        return by_pin, None
