"""What one namespace write records about the rows it writes: column bounds and key filters
(put into the ``metadata`` column of its ``__manifest`` rows at commit; validity:
:mod:`.bounds`, :mod:`.key_filters`)."""

from __future__ import annotations

import threading
from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from lance_sql.tables.dataset_cache import open_all
from lance_sql.tables.namespace import bounds as col_bounds
from lance_sql.tables.namespace import bounds_rows, key_filters
from lance_sql.tables.namespace.write_target import WriteTarget


class WriteStats:
    """Bounds and key-filter hashes of the rows one write puts in each table (by object id)."""

    def __init__(
        self,
        schema: pa.Schema,
        properties: Mapping[str, str],
        storage_options: Mapping[str, str] | None,
    ) -> None:
        self.schema = schema
        self.storage_options = storage_options
        #: column bounds of the rows written per table (None: some rows unseen, e.g. adopted)
        self.bounds: dict[str, col_bounds.TableBounds | None] = {}
        self._lock = threading.Lock()
        #: key filters (indexed columns): hashes of the rows written per table (None: unknown)
        self.key_fields = key_filters.key_fields(schema, properties)
        self._hashes: dict[str, dict[int, list[np.ndarray]] | None] = {}
        self._refs: dict[tuple[str, int], dict[int, key_filters.KeyFilterRef]] = {}

    def add(self, object_id: str, table: pa.Table) -> None:
        """Rows written to ``object_id`` (any thread)."""
        new = col_bounds.table_bounds(table, self.schema, 0, None, None)
        hashes = {
            fid: key_filters.hash_values(table.column(f.name))
            for fid, f in self.key_fields
            if f.name in table.column_names
        }
        with self._lock:
            if object_id not in self._hashes:
                self._hashes[object_id] = {}
            if (known := self._hashes[object_id]) is not None:
                for fid, h in hashes.items():
                    known.setdefault(fid, []).append(h)
            if object_id not in self.bounds:
                self.bounds[object_id] = new
            elif (old := self.bounds[object_id]) is not None:
                self.bounds[object_id] = col_bounds.merge(old, new, 0)

    def adopt(self, object_id: str, staged: col_bounds.TableBounds | None) -> None:
        """Staged rows' bounds join the table's (None: rows without bounds, so none)."""
        self._hashes[object_id] = None  # key filters: read from the committed table
        if staged is None or object_id not in self.bounds:
            self.bounds[object_id] = staged
        elif (old := self.bounds[object_id]) is not None:
            self.bounds[object_id] = col_bounds.merge(old, staged, 0)

    def manifest_metadata(
        self,
        table: pa.Table,
        versions: Mapping[str, int],
        targets: Mapping[str, WriteTarget],
        pinned_rows: pa.Table,
        append: bool,
    ) -> pa.Table:
        """``table`` (``__manifest`` rows) whose written tables' ``metadata`` hold new bounds:
        those of the rows written, or for an ``append`` their union with the stored bounds
        when those describe the version appended to (``pinned_rows``: the rows written on)."""
        touched = [o for o in versions if o in targets]
        if not touched or "metadata" not in table.column_names:
            return table
        # only the touched rows are converted (a __manifest may hold 100,000s of rows)
        mask, sub = bounds_rows.touched_rows(table, touched)
        _, base = bounds_rows.touched_rows(pinned_rows, touched)  # pins appended to
        pinned = dict(
            zip(base["object_id"].to_pylist(), base["read_version"].to_pylist(), strict=True)
        )
        oids = sub.column("object_id").to_pylist()
        meta = sub.column("metadata").to_pylist()
        merged: list[tuple[col_bounds.TableBounds | None, col_bounds.TableBounds | None]] = []
        for i, oid in enumerate(oids):
            t = targets[oid]
            new = self.bounds.get(oid)
            e, old = t.entry, None
            if new is not None and e is not None and append:
                old = col_bounds.bounds_of_metadata(meta[i])
                ok = pinned.get(oid) == e.read_version and col_bounds.usable(
                    old, e.read_version, e.read_branch, e.read_tag, e.location
                )
                new = col_bounds.merge(old, new, 0) if ok and old is not None else None
            merged.append((new, old))
        # key filter files of the tables (small I/O-bound reads and writes: on the shared
        # I/O pool; without key fields there is nothing to write)
        jobs = [
            (targets[o], versions[o], old)
            for o, (new, old) in zip(oids, merged, strict=True)
            if new is not None
        ]
        refs = iter(open_all(jobs if self.key_fields else [], lambda j: self._key_filters(*j)))
        for i, oid in enumerate(oids):
            t, (new, _) = targets[oid], merged[i]
            if new is not None:
                new = col_bounds.TableBounds(
                    versions[oid], t.branch, t.location, new.columns, next(refs, {})
                )
            meta[i] = col_bounds.with_bounds(meta[i], new)
        return bounds_rows.set_metadata(table, mask, meta)

    def _key_filters(
        self, t: WriteTarget, version: int, old: col_bounds.TableBounds | None
    ) -> dict[int, key_filters.KeyFilterRef]:
        """Key filters of ``t`` at ``version`` (``old``: the valid bounds appended to)."""
        if not self.key_fields or t.branch:
            return {}
        cached = self._refs.get((t.object_id, version))
        if cached is None:
            known = self._hashes.get(t.object_id)
            hashes = None if known is None else {f: np.concatenate(h) for f, h in known.items()}
            fields = [(fid, t.names.get(f.name, f.name), f.type) for fid, f in self.key_fields]
            cached = key_filters.maintain(
                t.uri,
                version,
                fields,
                hashes,
                None if old is None else old.key_filters,  # None: the table holds only these rows
                storage_options=self.storage_options,
            )
            self._refs[(t.object_id, version)] = cached
        return cached
