"""Per-partition-table key filters (Bloom filters) for equality lookups.

One immutable file per (table version, scalar-indexed column) in :data:`FILTER_DIR`,
pointed to from the table's bounds JSON, so it has exactly the bounds' validity rule.
A missing, stale, damaged or unreadable filter never skips a table. Hashing, sizing and
file format: docs/pruning.md, "Key filters".
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lance_sql.errors import LanceSqlError
from lance_sql.format.storage import read_file, remove_file, resolve, walk_files
from lance_sql.spec.arrow_json import field_id_of
from lance_sql.spec.arrow_types import supports
from lance_sql.tables.namespace.index_upkeep import read_indexes

FILTER_DIR = "_lance_sql/key_filters"
KEY = "key_filters"  # the member of the bounds JSON holding the pointers
BITS_PER_KEY = 20
MIN_BITS_PER_KEY = 16  # appends OR keys in while at least this many bits per key remain
MIN_BITS = 512
K = 10
_MAGIC = b"LSKF"
_HEADER = struct.Struct("<4sBBHQQI")
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


class KeyFilterError(ValueError):
    """A key filter file is damaged (wrong magic, size or checksum)."""


@dataclass(frozen=True)
class KeyFilterRef:
    """The pointer stored in the bounds JSON: a file under the table's :data:`FILTER_DIR`."""

    file: str  # file name only (no directory): refused otherwise
    type: str  # the column's Arrow type name when built
    bits: int
    k: int
    keys: int  # upper bound of the non-NULL values added
    #: CRC-32 of the bit bytes: another well-formed filter file of the same size put in
    #: this one's place is refused (pointers written before it have none)
    crc: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        if self.crc is None:
            del out["crc"]
        return out

    @staticmethod
    def from_json(obj: Any) -> KeyFilterRef | None:
        """Decode :meth:`to_json` output; None for anything malformed."""
        try:
            file, tname = obj["file"], obj["type"]
            bits, k, keys = obj["bits"], obj["k"], obj["keys"]
        except (KeyError, TypeError):
            return None
        if not isinstance(file, str) or not isinstance(tname, str) or not _safe_name(file):
            return None
        if any(type(x) is not int for x in (bits, k, keys)):
            return None
        if bits < 64 or bits & (bits - 1) or not 1 <= k <= 32 or keys < 0:
            return None
        crc = obj.get("crc")
        if crc is not None and (type(crc) is not int or not 0 <= crc < 1 << 32):
            return None
        return KeyFilterRef(file, tname, bits, k, keys, crc)

    @property
    def capacity(self) -> int:
        return self.bits // MIN_BITS_PER_KEY


def _safe_name(name: str) -> bool:
    return bool(name) and "/" not in name and "\\" not in name and name not in (".", "..")


def refs_to_json(refs: Mapping[int, KeyFilterRef]) -> dict[str, Any]:
    return {str(fid): r.to_json() for fid, r in sorted(refs.items())}


def refs_from_json(obj: Any) -> dict[int, KeyFilterRef]:
    """Pointers by field id; malformed entries are dropped (never raises)."""
    out: dict[int, KeyFilterRef] = {}
    if not isinstance(obj, dict):
        return out
    for key, val in obj.items():
        ref = KeyFilterRef.from_json(val)
        if ref is not None and isinstance(key, str) and key.isdigit():
            out[int(key)] = ref
    return out


# ---------------------------------------------------------------------- hashing


def _splitmix(h: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = h.astype(np.uint64) + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def hash_values(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """uint64 hashes of the non-NULL values of ``arr`` (vectorised)."""
    import udfs

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if arr.null_count:
        arr = arr.drop_null()
    if len(arr) == 0:
        return np.zeros(0, np.uint64)
    h = udfs.murmur3(arr)
    h32 = np.asarray(h.to_numpy(zero_copy_only=False), dtype=np.int32).view(np.uint32)
    return _splitmix(h32)


def literal_hash(value: Any, t: pa.DataType) -> np.uint64 | None:
    """The hash of a literal (the planner's comparable value) compared with a column of type
    ``t`` (None: cannot hash)."""
    if isinstance(value, bool):
        return None
    if pa.types.is_integer(t):
        if not isinstance(value, int):
            return None
        if -(1 << 63) <= value < (1 << 63):
            arr = pa.array([value], pa.int64())
        elif 0 <= value < (1 << 64):
            arr = pa.array([value], pa.uint64())  # hashes as its 8 bytes, like the column
        else:
            return None
    elif pa.types.is_date32(t) or pa.types.is_timestamp(t):
        if not isinstance(value, int):
            return None
        try:
            arr = pa.array([value], t)
        except (pa.ArrowException, OverflowError):
            return None
    elif supports("key_filter", t):
        if not isinstance(value, str):
            return None
        arr = pa.array([value], pa.large_string())
    else:
        return None
    return hash_values(arr)[0]


def positions(hashes: np.ndarray, bits: int | np.ndarray, k: int) -> np.ndarray:
    """Bit positions ``(len(hashes), k)`` of double hashing, modulo ``bits`` (a power of 2)."""
    a = hashes & np.uint64(0xFFFFFFFF)
    b = (hashes >> np.uint64(32)) | np.uint64(1)
    i = np.arange(k, dtype=np.uint64)
    mask = np.asarray(bits, dtype=np.uint64) - np.uint64(1)
    with np.errstate(over="ignore"):
        return (a[:, None] + b[:, None] * i[None, :]) & (mask[:, None] if mask.ndim else mask)


def size_for(keys: int) -> int:
    """Filter bits for ``keys`` values: a power of two, at least :data:`BITS_PER_KEY` each."""
    want = max(MIN_BITS, keys * BITS_PER_KEY)
    return 1 << (want - 1).bit_length()


def build(hashes: np.ndarray, bits: int, k: int = K, into: np.ndarray | None = None) -> np.ndarray:
    """The filter (uint8 array of ``bits / 8`` bytes) of ``hashes``, ORed into ``into``."""
    out = np.zeros(bits // 8, np.uint8) if into is None else into.copy()
    if len(hashes):
        pos = positions(hashes, bits, k).ravel()
        np.bitwise_or.at(out, (pos >> np.uint64(3)).astype(np.int64),
                         (np.uint8(1) << (pos & np.uint64(7)).astype(np.uint8)))  # fmt: skip
    return out


# ------------------------------------------------------------------------- files


def encode(data: np.ndarray, bits: int, k: int, keys: int) -> bytes:
    raw = data.tobytes()
    return _HEADER.pack(_MAGIC, 1, k, 0, bits, keys, zlib.crc32(raw)) + raw


def decode(blob: bytes, ref: KeyFilterRef | None = None) -> np.ndarray:
    """The bit bytes of a filter file; :class:`KeyFilterError` if damaged or not ``ref``'s."""
    if len(blob) < _HEADER.size:
        raise KeyFilterError("key filter file is truncated")
    magic, fmt, k, _, bits, keys, crc = _HEADER.unpack_from(blob)
    raw = blob[_HEADER.size :]
    if magic != _MAGIC or fmt != 1:
        raise KeyFilterError("not a key filter file (bad magic or format version)")
    if bits < 64 or bits & (bits - 1) or len(raw) != bits // 8:
        raise KeyFilterError(f"key filter file has {len(raw)} bytes for {bits} bits")
    if zlib.crc32(raw) != crc:
        raise KeyFilterError("key filter file fails its checksum")
    if ref is not None and (
        (ref.bits, ref.k, ref.keys) != (bits, k, keys) or ref.crc not in (None, crc)
    ):
        raise KeyFilterError("key filter file does not match its pointer")
    return np.frombuffer(raw, np.uint8)


def file_name(version: int, field_id: int) -> str:
    return f"v{version}-f{field_id}-{uuid.uuid4().hex[:12]}.bloom"  # (unique, also across forks)


def write_filter(
    table_uri: str,
    version: int,
    field_id: int,
    t: pa.DataType,
    hashes: np.ndarray,
    *,
    base: tuple[KeyFilterRef, np.ndarray] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> KeyFilterRef:
    """Write the filter of ``hashes`` (ORed into ``base`` when given) for one table version."""
    if base is not None:
        ref0, bits0 = base
        bits, k, keys = ref0.bits, ref0.k, ref0.keys + len(hashes)
        data = build(hashes, bits, k, into=bits0)
    else:
        keys = len(hashes)
        bits, k = size_for(keys), K
        data = build(hashes, bits, k)
    name = file_name(version, field_id)
    loc = resolve(f"{table_uri.rstrip('/')}/{FILTER_DIR}/{name}", storage_options)
    loc.fs.makedirs(loc.path.rsplit("/", 1)[0], exist_ok=True)
    blob = encode(data, bits, k, keys)
    with loc.fs.open(loc.path, "wb") as f:
        f.write(blob)
    return KeyFilterRef(name, str(t), bits, k, keys, _HEADER.unpack_from(blob)[6])


def read_filter(
    table_uri: str, ref: KeyFilterRef, storage_options: Mapping[str, Any] | None = None
) -> np.ndarray:
    """The bit bytes ``ref`` points to (:class:`KeyFilterError` / ``OSError`` on failure)."""
    loc = resolve(f"{table_uri.rstrip('/')}/{FILTER_DIR}/{ref.file}", storage_options)
    return decode(read_file(loc), ref)


def column_hashes(ds: Any, column: str) -> np.ndarray:
    """Hashes of every non-NULL value of ``column`` in the pylance dataset ``ds``."""
    parts = [hash_values(b.column(0)) for b in ds.to_batches(columns=[column])]
    return np.concatenate(parts) if parts else np.zeros(0, np.uint64)


# ------------------------------------------------------------------ maintenance


def remove_unreferenced(
    table_uri: str,
    keep: set[str],
    cutoff: Any,
    storage_options: Mapping[str, Any] | None = None,
) -> int:
    """Delete the table's key filter files not in ``keep`` written before ``cutoff``."""
    removed = 0
    try:
        files = walk_files(resolve(f"{table_uri.rstrip('/')}/{FILTER_DIR}", storage_options))
    except (OSError, ValueError):
        return 0
    for f in files:
        name = f.relative.rsplit("/", 1)[-1]
        if name in keep or f.mtime is None or f.mtime >= cutoff:
            continue
        remove_file(f.location)
        removed += 1
    return removed


def key_fields(schema: pa.Schema, properties: Mapping[str, str]) -> list[tuple[int, pa.Field]]:
    """(field id, namespace field) of every column with a key filter: the namespace's
    scalar-indexed columns of a :func:`supported` type."""
    try:
        wanted = {i.field_id for i in read_indexes(properties)}
    except (LanceSqlError, ValueError):
        return []
    out = []
    for f in schema:
        fid = field_id_of(f)
        if fid is not None and fid in wanted and supports("key_filter", f.type):
            out.append((fid, f))
    return out


def maintain(
    table_uri: str,
    version: int,
    fields: list[tuple[int, str, pa.DataType]],
    new_hashes: Mapping[int, np.ndarray] | None,
    old: Mapping[int, KeyFilterRef] | None,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> dict[int, KeyFilterRef]:
    """Key filters of one table at ``version`` after a write; (field id, table column, type).

    ``new_hashes``: of the rows written (None: read the table). ``old``: the filters of
    the version appended to (None: a new or overwritten table). Old filters with room
    get the new keys ORed in; otherwise the filter is rebuilt from the table.
    """
    out: dict[int, KeyFilterRef] = {}
    ds = None
    for fid, column, t in fields:
        hashes = None if new_hashes is None else new_hashes.get(fid)
        base = None
        ref = None if old is None else old.get(fid)
        if (
            ref is not None
            and hashes is not None
            and ref.type == str(t)
            and ref.keys + len(hashes) <= ref.capacity
        ):
            try:
                base = (ref, read_filter(table_uri, ref, storage_options))
            except (KeyFilterError, OSError, ValueError):
                base = None
        if hashes is None or (old is not None and base is None):
            if ds is None:
                import lance

                opts = dict(storage_options) if storage_options else None
                ds = lance.dataset(table_uri, version=version, storage_options=opts)
            if column not in ds.schema.names:
                continue
            hashes, base = column_hashes(ds, column), None
        out[fid] = write_filter(
            table_uri, version, fid, t, hashes, base=base, storage_options=storage_options
        )
    return out
