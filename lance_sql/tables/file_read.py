"""Small Lance tables read from their data files, without a pylance scanner.

A scanner's fixed cost dominates tiny partition tables; their files are decoded with
``lance.file.LanceFileReader`` minus deletions, and the decoded rows are kept per (file,
columns) since data files never change. Only fragments the file reader reads exactly as
the dataset would are taken (one local 2.x file holding every column, same field ids
and schema); anything else returns None and the caller scans with pylance.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lance_sql.tables.dataset_cache import PerProcess

#: Largest table (physical rows over the unit's fragments) read from its data files directly.
DIRECT_MAX_ROWS = 8192

#: Largest table (data file bytes) read directly: a file is decoded whole when first read.
DIRECT_MAX_BYTES = 4 * 1024 * 1024

_DELETION_TYPES = {"array": "arrow", "bitmap": "bitmap"}

#: Decoded rows kept for the next read of the same file and columns, at most this many
#: bytes (estimated as the Arrow buffers plus :data:`_COLUMN_OVERHEAD` per column).
KEPT_MAX_BYTES = 128 * 1024 * 1024

#: Memory a kept table costs per column beyond its buffers (allocations, array objects):
#: about 1.3 KB measured for one-row tables.
_COLUMN_OVERHEAD = 1536


def _new_file_session() -> Any:
    from lance.file import LanceFileSession

    return LanceFileSession("/")


#: One ``lance.file.LanceFileSession`` at the filesystem root: one object store for
#: every local data file (a reader opened alone builds its own each time).
_file_session: PerProcess[Any] = PerProcess(_new_file_session)

_Key = tuple[str, tuple[str, ...], int, int]  # path, columns, size, modification time


class _Kept:
    """Decoded files by :data:`_Key` (data files never change once written), at most
    :data:`KEPT_MAX_BYTES`. When full, the table kept last makes room, so a repeated scan
    of more files than fit keeps finding the others."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tables: dict[_Key, tuple[pa.Table, int]] = {}
        self.bytes = 0

    def get(self, key: _Key) -> pa.Table | None:
        with self._lock:
            kept = self._tables.get(key)
        return None if kept is None else kept[0]

    def put(self, key: _Key, table: pa.Table) -> None:
        cost = table.nbytes + _COLUMN_OVERHEAD * max(1, table.num_columns)
        with self._lock:
            if key in self._tables or cost > KEPT_MAX_BYTES:
                return
            while self._tables and self.bytes + cost > KEPT_MAX_BYTES:
                self.bytes -= self._tables.popitem()[1][1]
            self._tables[key] = (table, cost)
            self.bytes += cost


_kept = PerProcess(_Kept)


@dataclass(frozen=True)
class DataFileRead:
    """One fragment's only data file, and which of its rows are live (None: all)."""

    path: str
    live: pa.Array | None


def _leaf_ids(fields: Sequence[Any]) -> Iterator[int]:
    for f in fields:
        children = f.children()
        if children:
            yield from _leaf_ids(children)
        else:
            yield f.id()


def _local_root(uri: str) -> str | None:
    if uri.startswith("file://"):
        uri = uri[len("file://") :]
    elif "://" in uri or uri.startswith("memory:"):
        return None
    return os.path.abspath(uri)


def direct_files(
    dataset: Any, fragment_ids: Sequence[int], schema: pa.Schema
) -> list[DataFileRead] | None:
    """The data files to read ``fragment_ids`` of ``dataset`` from, or None (use a scanner);
    ``schema`` (what the unit presents) must be the dataset's own."""
    root = _local_root(dataset.uri)
    if root is None or not fragment_ids or not _same_columns(schema, dataset.schema):
        return None
    leaves = set(_leaf_ids(dataset.lance_schema.fields()))
    out: list[DataFileRead] = []
    rows = size = 0
    for fid in fragment_ids:
        meta = dataset.get_fragment(fid).metadata
        files = meta.files
        if len(files) != 1 or getattr(meta, "overlays", None):
            return None
        data = files[0]
        rows += meta.physical_rows
        size += data.file_size_bytes or 0
        if (
            data.base_id is not None
            or data.file_major_version < 2
            or not leaves <= set(data.fields)
            or rows > DIRECT_MAX_ROWS
            or size > DIRECT_MAX_BYTES
        ):
            return None
        out.append(DataFileRead(f"{root}/data/{data.path}", _live(root, meta)))
    return out


def _live(root: str, meta: Any) -> pa.Array | None:
    """Which physical rows of the fragment its deletion file keeps (None: all)."""
    from lance_sql.format.deletions import deletion_file_name, read_deletion_file
    from lance_sql.format.storage import resolve

    d = meta.deletion_file
    if d is None:
        return None
    if d.base_id is not None or d.file_type not in _DELETION_TYPES:
        raise ValueError(f"deletion file {d} outside the table")  # the caller scans instead
    kind = _DELETION_TYPES[d.file_type]
    name = deletion_file_name(meta.id, d.read_version, d.id, kind)
    offsets = read_deletion_file(resolve(f"{root}/_deletions/{name}"), kind)
    keep = np.ones(meta.physical_rows, dtype=bool)
    if offsets.size and int(offsets[-1]) >= meta.physical_rows:
        raise ValueError(f"deletion file {name} names rows past the fragment")
    keep[offsets] = False
    return pa.array(keep)


def _same_columns(a: pa.Schema, b: pa.Schema) -> bool:
    return a.names == b.names and all(x.type.equals(y.type) for x, y in zip(a, b, strict=True))


#: Files of at most this many rows are read by a take of every row: cheaper than
#: ``read_all`` for a few rows (0.10 against 0.12 ms of CPU for one row), dearer from
#: about a thousand (0.50 against 0.25 ms for 5,459 rows).
TAKE_MAX_ROWS = 512


def _read_whole(reader: Any) -> pa.Table:
    """Every row of an open reader's (small) file."""
    rows = reader.num_rows()
    if not rows or rows > TAKE_MAX_ROWS:
        return reader.read_all(batch_size=DIRECT_MAX_ROWS, batch_readahead=1).to_table()
    return reader.take_rows(list(range(rows))).to_table()


def read_direct(
    files: Sequence[DataFileRead],
    schema: pa.Schema,
    columns: list[str] | None,
) -> list[pa.Table] | None:
    """The live rows of ``files`` (one table per fragment), projected to ``columns``;
    ``columns=None`` also checks the file's schema against ``schema`` (None: it differs)."""
    out = []
    for f in files:
        if columns is None:  # once per table (the check): not kept
            reader = _file_session().open_reader(f.path.lstrip("/"))
            table = reader.read_all(batch_size=DIRECT_MAX_ROWS, batch_readahead=1).to_table()
        else:
            st = os.stat(f.path)
            key = (f.path, tuple(columns), st.st_size, st.st_mtime_ns)
            table = _kept().get(key)
            if table is None:
                reader = _file_session().open_reader(f.path.lstrip("/"), columns=list(columns))
                table = _read_whole(reader)
                _kept().put(key, table)
        if columns is None and not _same_columns(table.schema, schema):
            return None
        if f.live is not None:
            if len(f.live) != table.num_rows:
                return None
            table = table.filter(f.live)
        out.append(table)
    return out
