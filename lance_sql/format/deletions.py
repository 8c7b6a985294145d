"""Read deletion files (``.arrow`` offsets or ``.bin`` roaring bitmaps, see docs/format.md).

Both give a sorted, duplicate-free ``numpy.uint32`` array of the row offsets a fragment
no longer shows; corrupted files give FormatError naming the file.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from lance_sql.errors import FormatError
from lance_sql.format.storage import Location, read_file

ARROW = "arrow"
BITMAP = "bitmap"
EXTENSIONS = {ARROW: "arrow", BITMAP: "bin"}
_MAX_OFFSET = (1 << 32) - 1


def deletion_file_name(fragment_id: int, read_version: int, file_id: int, file_type: str) -> str:
    """``{fragment_id}-{read_version}-{id}.{arrow|bin}`` as pylance names deletion files."""
    return f"{fragment_id}-{read_version}-{file_id}.{EXTENSIONS[file_type]}"


def read_deletion_file(loc: Location, file_type: str) -> np.ndarray:
    """Sorted uint32 row offsets stored in the deletion file at ``loc``."""
    data = read_file(loc)
    if file_type == ARROW:
        return _from_arrow_ipc(data, loc.url)
    if file_type == BITMAP:
        return _from_roaring(data, loc.url)
    raise FormatError(f"unknown deletion file type {file_type!r}", path=loc.url)


def _from_arrow_ipc(data: bytes, path: str) -> np.ndarray:
    try:
        reader = pa.ipc.open_file(pa.py_buffer(data))
        table = reader.read_all()
        table.validate(full=True)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise FormatError(f"not a readable Arrow IPC deletion file: {exc}", path=path) from exc
    if table.num_columns != 1 or not pa.types.is_integer(table.schema.field(0).type):
        raise FormatError(
            f"deletion file must hold one integer column, found schema {table.schema}", path=path
        )
    column = table.column(0)
    if column.null_count:
        raise FormatError("deletion file holds null offsets", path=path)
    values = column.to_numpy() if column.num_chunks else np.empty(0, np.uint32)
    if values.size and (values.min() < 0 or int(values.max()) > _MAX_OFFSET):
        raise FormatError("deletion file holds offsets outside 0..2^32-1", path=path)
    return np.unique(values.astype(np.uint32, copy=False))


def _from_roaring(data: bytes, path: str) -> np.ndarray:
    from pyroaring import BitMap

    if not data:
        raise FormatError("empty roaring bitmap deletion file", path=path)
    try:
        bitmap = BitMap.deserialize(data)
    except (ValueError, IndexError, OverflowError, MemoryError, RuntimeError) as exc:
        raise FormatError(f"not a readable roaring bitmap deletion file: {exc}", path=path) from exc
    return np.frombuffer(bitmap.to_array(), dtype=np.uint32).copy()
