"""Scan units of the partition tables a namespace table has read, cached by pin."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from lance_sql.errors import LanceSqlError
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.namespace.reader import (
    PartitionTable,
    open_many_for_read,
    partition_units,
)
from lance_sql.tables.scan import ScanUnit

#: (object_id, uri, read_version, read_branch, read_tag) of a partition table entry.
_PinKey = tuple[str, str, "int | None", "str | None", "str | None"]


def _pin(entry: PartitionTable) -> _PinKey:
    return (entry.object_id, entry.uri, entry.read_version, entry.read_branch, entry.read_tag)


class _UnitCache:
    """Scan units of the partition tables a :class:`NamespaceTable` has read, by pin.

    Units hold no per-scan state, so a query reuses the units (open datasets,
    column mappings, fragment splits) of every earlier query that read the
    same pins. Kept per namespace view; a new ``__manifest`` version carries
    over the units of tables it pins at the same version (a table read at
    latest or at a tag is planned again). Missing tables are opened
    concurrently (:func:`~lance_sql.tables.namespace.reader.open_many_for_read`).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._view: PartitionedNamespace | None = None
        self._pins: dict[str, _PinKey] = {}
        self._by_pin: dict[_PinKey, list[ScanUnit]] = {}
        self._all: list[ScanUnit] | None = None
        #: object id -> (position in ``ns.tables()``, entry) of the current view
        self._order: dict[str, tuple[int, PartitionTable]] = {}

    def units(
        self,
        ns: PartitionedNamespace,
        partitions: Iterable[PartitionTable | str] | None,
        table: Any,  # the NamespaceTable asking
    ) -> list[ScanUnit]:
        """Units of ``partitions`` (object ids or entries; all when None) in object id order."""
        pins, by_pin, every, order = self._for_view(ns)
        if partitions is None and every is not None:
            return every
        if partitions is not None:
            wanted = {p if isinstance(p, str) else p.object_id for p in partitions}
            unknown = wanted - pins.keys()
            if unknown:
                raise LanceSqlError(f"not partition tables of this namespace: {sorted(unknown)}")
            # object id order without a pass over every table of the view (a pruned
            # service query selects one of hundreds)
            entries = [order[oid][1] for oid in sorted(wanted, key=lambda o: order[o][0])]
        else:
            entries = ns.tables()
        missing = [e for e in entries if pins[e.object_id] not in by_pin]
        if missing:
            opened = open_many_for_read(missing, storage_options=table.storage_options)
            fresh = {
                pins[e.object_id]: partition_units(
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
        out = [u for e in entries for u in by_pin[pins[e.object_id]]]
        if partitions is None:
            with self._lock:
                if self._view is ns:
                    self._all = out
        return out

    def _for_view(
        self, ns: PartitionedNamespace
    ) -> tuple[
        dict[str, _PinKey],
        dict[_PinKey, list[ScanUnit]],
        list[ScanUnit] | None,
        dict[str, tuple[int, PartitionTable]],
    ]:
        with self._lock:
            if self._view is ns:
                return self._pins, self._by_pin, self._all, self._order
        tables = ns.tables()
        pins = {e.object_id: _pin(e) for e in tables}
        order = {e.object_id: (i, e) for i, e in enumerate(tables)}
        keep = {k for k in pins.values() if k[2] is not None and not k[4]}
        with self._lock:
            if self._view is not ns:
                self._by_pin = {k: v for k, v in self._by_pin.items() if k in keep}
                self._pins = pins
                self._order = order
                self._all = None
                self._view = ns
            return self._pins, self._by_pin, self._all, self._order
