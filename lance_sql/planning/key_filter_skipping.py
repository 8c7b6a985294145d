"""Skipping partition tables whose key filters (Bloom filters) rule out ``col = lit`` / ``IN``.

Literals are taken exactly as column bounds take them; a missing, stale (not the
pinned version or the column's current type) or damaged filter never skips. The
filters of the candidate tables for one column are concatenated once (cached per set of
immutable files), and all tables are tested in one numpy operation.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa

from lance_sql.planning.bounds_skipping import (
    Node,
    RowBounds,
    _literal_value,
    row_bounds,
    skip_if_all,
    skip_if_any,
)
from lance_sql.spec.arrow_types import supports
from lance_sql.spec.predicates import Column, Compare, InList, Predicate, any_leaf, fold
from lance_sql.tables.dataset_cache import OpenCache
from lance_sql.tables.namespace import key_filters as kf
from udfs.hashing import murmur3_bytes

#: Filter files that could not be read or were damaged (they never skip anything).
LOAD_ERRORS = [0]
#: Whether planning uses key filters (benchmarks switch it off to compare).
ENABLED = [True]


@dataclass(frozen=True)
class _Leaf:
    field_id: int
    type_name: str
    hashes: np.ndarray  # uint64, one per literal


KeyTest = _Leaf | Node


def compile_key_skip(pred: Predicate, fields: Collection[int] | None = None) -> KeyTest | None:
    """The key-filter test of ``pred`` (None: it can never skip); ``fields``: the field ids
    some table has key filters for (None: any; other leaves are never hashed)."""
    return fold(pred, partial(_compile_leaf, fields=fields), skip_if_any, skip_if_all)


def _compile_leaf(pred: Predicate, fields: Collection[int] | None) -> KeyTest | None:
    if not _is_equality(pred):
        return None
    col: Column = pred.term  # type: ignore[attr-defined]
    if fields is not None and col.field_id not in fields:
        return None
    if isinstance(pred, Compare):
        return _leaf(col, [pred.literal])
    return _leaf(col, [v for v in pred.values if not v.is_null])  # type: ignore[attr-defined]


def _is_equality(pred: Predicate) -> bool:
    """Whether ``pred`` is a leaf key filters could test (no hashing, no row reading)."""
    if isinstance(pred, Compare):
        return isinstance(pred.term, Column) and pred.op == "="
    return isinstance(pred, InList) and isinstance(pred.term, Column) and not pred.negated


def _key_fields(state: RowBounds) -> frozenset[int]:
    """Field ids any of ``state``'s tables has a key filter for (derived once per state)."""
    fields = state.derived.get("key_filter_fields")
    if fields is None:
        fields = frozenset(fid for b in state.bounds if b is not None for fid in b.key_filters)
        state.derived["key_filter_fields"] = fields
    return fields  # type: ignore[no-any-return]


def _leaf(col: Column, literals: Sequence[Any]) -> _Leaf | None:
    if col.field_id is None or col.type is None or not literals:
        return None
    if not supports("key_filter", col.type):
        return None
    hashes = []
    for lit in literals:
        value = _literal_value(lit, col)
        h = None if value is None else literal_hash(value, col.type)
        if h is None:
            return None
        hashes.append(h)
    return _Leaf(col.field_id, str(col.type), np.array(hashes, np.uint64))


_M64 = (1 << 64) - 1


def _splitmix(h: int) -> int:
    z = (h + 0x9E3779B97F4A7C15) & _M64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & _M64
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB & _M64
    return z ^ (z >> 31)


def _key_bytes(value: Any, t: pa.DataType) -> bytes | None:
    """The bytes :func:`~lance_sql.tables.namespace.key_filters.literal_hash` hashes for
    ``value``, where that is plain (None: let it decide, including "cannot hash")."""
    if isinstance(value, int) and not isinstance(value, bool):
        # (timestamps of other units are hashed as microseconds, like Iceberg's)
        if pa.types.is_integer(t) or (pa.types.is_timestamp(t) and t.unit == "us"):
            if -(1 << 63) <= value < (1 << 63):
                return value.to_bytes(8, "little", signed=True)
            if pa.types.is_integer(t) and 0 <= value < (1 << 64):
                return value.to_bytes(8, "little")
        elif pa.types.is_date32(t) and -(1 << 31) <= value < (1 << 31):
            return value.to_bytes(8, "little", signed=True)  # hashed as a long, like the column
        return None
    plain_string = pa.types.is_string(t) or pa.types.is_large_string(t)
    if isinstance(value, str) and len(value) <= 64 and plain_string:
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError:
            return None
    return None


def literal_hash(value: Any, t: pa.DataType) -> np.uint64 | None:
    """:func:`~lance_sql.tables.namespace.key_filters.literal_hash` of one literal, the same
    bits, in plain Python for integers, dates, timestamps and short strings (faster)."""
    data = _key_bytes(value, t)
    if data is None:
        return kf.literal_hash(value, t)
    return np.uint64(_splitmix(murmur3_bytes(data)))


def _leaves(test: KeyTest) -> list[_Leaf]:
    if isinstance(test, _Leaf):
        return [test]
    return [leaf for c in test.children for leaf in _leaves(c)]


# ------------------------------------------------------------------------ files

#: filters read, by (table, file); None where unreadable. Bounded by bytes alone (256 MB).
_FILES: OpenCache[tuple[np.ndarray | None]] = OpenCache(
    sys.maxsize, lambda f: 0 if f[0] is None else f[0].nbytes, 256 << 20
)


def _load(table_uri: str, ref: kf.KeyFilterRef, opts: Mapping[str, Any] | None) -> Any:
    key = (table_uri, ref.file)
    hit = _FILES.get(key)
    if hit is not None:
        return hit[0]
    try:
        bits: np.ndarray | None = kf.read_filter(table_uri, ref, opts)
    except Exception:  # any failure to read means "maybe", never a skip
        LOAD_ERRORS[0] += 1
        bits = None
    return _FILES.put(key, (bits,))[0]


@dataclass(frozen=True)
class _Bank:
    """The filters of some tables for one column, concatenated; cached by the (immutable)
    files alone, so it holds no row positions (another selection may hold the files)."""

    loaded: np.ndarray  # int64: which of the refs it was built from have a filter here
    data: np.ndarray  # uint8: every filter's bytes
    offsets: np.ndarray  # int64: byte offset of each filter in ``data``
    masks: np.ndarray  # uint64: bits - 1 of each filter


_BANKS: OpenCache[_Bank] = OpenCache(16)


def _bank(
    refs: list[tuple[int, str, kf.KeyFilterRef]],
    opts: Mapping[str, Any] | None,
    key: tuple[Any, ...],
) -> _Bank | None:
    hit = _BANKS.get(key)
    if hit is not None:
        return hit
    loaded, parts, sizes, masks = [], [], [], []
    for j, (_, uri, ref) in enumerate(refs):
        bits = _load(uri, ref, opts)
        if bits is None:
            continue
        loaded.append(j)
        parts.append(bits)
        sizes.append(len(bits))
        masks.append(ref.bits - 1)
    if not loaded:
        return None
    offsets = np.zeros(len(sizes), np.int64)
    np.cumsum(sizes[:-1], out=offsets[1:])
    bank = _Bank(
        np.array(loaded, np.int64),
        np.concatenate(parts),
        offsets,
        np.array(masks, np.uint64),
    )
    return _BANKS.put(key, bank)


def _absent(bank: _Bank, hashes: np.ndarray) -> np.ndarray:
    """Per table of ``bank``: True where no hash of ``hashes`` may be present."""
    pos = kf.positions(hashes, np.uint64(1) << np.uint64(63), kf.K)  # (nvals, K), unmasked
    pos = pos[None, :, :] & bank.masks[:, None, None]  # (tables, nvals, K)
    byte = bank.offsets[:, None, None] + (pos >> np.uint64(3)).astype(np.int64)
    bit = (pos & np.uint64(7)).astype(np.uint8)
    present = ((bank.data[byte] >> bit) & 1).astype(bool).all(axis=2)
    return ~present.any(axis=1)


# ---------------------------------------------------------------- manifest rows


def _evaluate(
    test: KeyTest, banks: Mapping[tuple[int, str], tuple[_Bank, np.ndarray] | None], n: int
) -> np.ndarray:
    if isinstance(test, Node):
        masks = [_evaluate(c, banks, n) for c in test.children]
        if test.op == "and":
            return np.logical_or.reduce(masks)
        return np.logical_and.reduce(masks)
    out = np.zeros(n, bool)
    found = banks.get((test.field_id, test.type_name))
    if found is not None:
        bank, rows = found
        out[rows] = _absent(bank, test.hashes)
    return out


def _bank_of(
    state: RowBounds,
    fid: int,
    tname: str,
    root: str,
    storage_options: Mapping[str, Any] | None,
) -> tuple[_Bank, np.ndarray] | None:
    """The filters of column ``fid`` of ``state``'s rows and those rows' positions (one per
    filter); the loaded filters live in the bounded bank cache only."""
    key = ("key_filters", fid, tname, root)
    derived = state.derived.get(key)
    if derived is None:
        from lance_sql.tables.namespace.layout import resolve_location

        refs = []
        for i, b in enumerate(state.bounds):
            ref = None if b is None else b.key_filters.get(fid)
            if ref is None or ref.type != tname or ref.k != kf.K:
                continue
            try:
                uri = resolve_location(root, state.locations[i], f"row {i}")
            except Exception:  # an unsafe location has no usable filter
                continue
            refs.append((i, uri, ref))
        rows = np.array([i for i, _, _ in refs], np.int64)
        derived = (refs, tuple((uri, r.file) for _, uri, r in refs), rows)
        state.derived[key] = derived
    refs, bank_key, rows = derived
    bank = _bank(refs, storage_options, bank_key) if refs else None
    # the bank may come from another selection holding the same files at other positions
    return None if bank is None else (bank, rows[bank.loaded])


def key_skip_mask(
    pred: Predicate,
    rows: pa.Table,
    root: str | None,
    storage_options: Mapping[str, Any] | None = None,
) -> np.ndarray | None:
    """Per ``__manifest`` table row, True where its key filters prove ``pred`` never TRUE."""
    if root is None or rows.num_rows == 0 or not ENABLED[0]:
        return None
    if not any_leaf(pred, _is_equality):
        return None
    state = row_bounds(rows)
    if state is None or not state.any:
        return None
    fields = _key_fields(state)
    if not fields:
        return None
    test = compile_key_skip(pred, fields)
    if test is None:
        return None
    banks: dict[tuple[int, str], tuple[_Bank, np.ndarray] | None] = {}
    for leaf in _leaves(test):
        key = (leaf.field_id, leaf.type_name)
        if key not in banks:
            banks[key] = _bank_of(state, leaf.field_id, leaf.type_name, root, storage_options)
    return _evaluate(test, banks, rows.num_rows)
