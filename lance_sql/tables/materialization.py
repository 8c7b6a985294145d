"""Early or late materialization of a filtered Lance scan, chosen from a sampled selectivity.

Late materialization (a take of the matching rows) loses when the matches touch most
pages, which depends on how they spread, not on selectivity alone. So the filter is run
with pyarrow over :data:`SLICES` slices of :data:`SLICE_ROWS` rows; if at least
:data:`EARLY_AT` of them match, every column is read up front. Cached per filter text and
table directory; only speed changes, and any failure to sample leaves Lance's default.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.tables.dataset_cache import OpenCache

#: Fraction of sampled slices holding a match from which a scan reads every column up front.
EARLY_AT = 0.5
SLICES = 8
SLICE_ROWS = 1024
#: Below this many rows in the scanned fragments, sampling costs more than it can save.
MIN_ROWS = 4 * SLICES * SLICE_ROWS
_MAX_CACHED = 512

#: (filter text, table directory) -> (estimate,): tuples, as an estimate may be None
_cache: OpenCache[tuple[float | None]] = OpenCache(_MAX_CACHED)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PATH = re.compile(r"FieldPath\(([^)]*)\)")


def late_materialization(
    dataset: Any,
    fragments: Sequence[Any] | None,
    columns: Sequence[str] | None,
    filter: pc.Expression | None,
) -> bool | None:
    """``False`` (read every column up front) or ``None`` (Lance's default) for this scan."""
    if filter is None or columns is None:
        return None
    refs = _filter_columns(filter, dataset.schema)
    if refs is None:
        return None
    names, positional = refs
    if not [c for c in columns if c not in names]:
        return None  # nothing to fetch later: the choice changes nothing
    frags = list(fragments) if fragments is not None else dataset.get_fragments()
    key = (str(filter), _directory(str(dataset.uri)))
    # a filter referring to columns by position needs the table's whole layout
    (sel,) = _cache.get_or_open(
        key, lambda: (estimate_spread(frags, None if positional else names, filter),)
    )
    return None if sel is None or sel < EARLY_AT else False


def estimate_spread(
    fragments: Sequence[Any], names: Sequence[str] | None, filter: pc.Expression
) -> float | None:
    """Fraction of sampled slices where ``filter`` keeps a row (None: too few rows, or no
    sample); ``names``: the columns to read (None: all)."""
    sizes = [(f, int(f.metadata.physical_rows or 0)) for f in fragments]
    total = sum(n for _, n in sizes)
    if total < MIN_ROWS:
        return None
    touched = seen = 0
    try:
        for frag, offset in _slices(sizes, total):
            cols = None if names is None else list(names)
            sample = frag.scanner(columns=cols, offset=offset, limit=SLICE_ROWS).to_table()
            if sample.num_rows:
                seen += 1
                touched += sample.filter(filter).num_rows > 0
    except (pa.ArrowException, OSError, ValueError, TypeError, RuntimeError):
        return None
    return touched / seen if seen else None


def clear() -> None:
    """Forget every cached estimate (tests, benchmarks)."""
    _cache.clear()


def _slices(sizes: list[tuple[Any, int]], total: int) -> list[tuple[Any, int]]:
    """``(fragment, offset)`` of :data:`SLICES` slices evenly spaced over all the rows."""
    out = []
    step = total / SLICES
    for i in range(SLICES):
        at = int(i * step + step / 2) - SLICE_ROWS // 2
        for frag, n in sizes:
            if at < n:
                out.append((frag, max(0, min(at, n - SLICE_ROWS))))
                break
            at -= n
    return out


def _filter_columns(filter: pc.Expression, schema: pa.Schema) -> tuple[list[str], bool] | None:
    """Top-level columns ``filter`` refers to and whether any is by position (None: a
    nested field, not sampled)."""
    text = _strip_literals(str(filter))
    if "FieldRef." in text:
        return None
    names = set()
    positional = False
    for path in _PATH.findall(text):
        if not path.isdigit() or int(path) >= len(schema):
            return None  # FieldPath(1 2): a nested field
        names.add(schema.names[int(path)])
        positional = True
    if "FieldPath(" in _PATH.sub(" ", text):
        return None
    fields = set(schema.names)
    names.update(t for t in _NAME.findall(_PATH.sub(" ", text)) if t in fields)
    return (sorted(names), positional) if names else None


def _strip_literals(text: str) -> str:
    """``text`` without quoted string literals (a literal equal to a column name is not one)."""
    return re.sub(r'"(?:[^"\\]|\\.)*"', " ", text)


def _directory(uri: str) -> str:
    """The folder holding the table (a namespace's partition tables share their root)."""
    return uri.rstrip("/").rsplit("/", 1)[0]
