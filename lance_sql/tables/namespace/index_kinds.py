"""Which pylance call builds a namespace index, with which parameters, in which tables: a
vector index is trained per table and skipped below ``min_rows`` rows (searched flat);
IVF_PQ parameters are chosen per table when not given (docs/search.md)."""

from __future__ import annotations

import math
from typing import Any

#: Rows a partition table needs before a vector index is trained in it.
MIN_VECTOR_ROWS = 256

TEXT_TYPES = frozenset({"INVERTED", "NGRAM", "FTS"})
#: Parameters of the namespace index definition that are not pylance's.
OWN_PARAMS = frozenset({"min_rows"})


def is_vector(index_type: str) -> bool:
    """True for the index types pylance builds with ``create_index`` (IVF_*, HNSW, ...)."""
    t = index_type.upper()
    return t.startswith("IVF") or "HNSW" in t or t in {"PQ", "SQ", "RQ"}


def is_text(index_type: str) -> bool:
    return index_type.upper() in TEXT_TYPES


def kind(index_type: str) -> str:
    """``vector``, ``text`` or ``scalar``."""
    return "vector" if is_vector(index_type) else "text" if is_text(index_type) else "scalar"


def default_type(column_type: Any) -> str:
    """The index ``create_index(column)`` builds when no type is given."""
    import pyarrow as pa

    if pa.types.is_fixed_size_list(column_type) or pa.types.is_list(column_type):
        return "IVF_HNSW_SQ"
    if pa.types.is_string(column_type) or pa.types.is_large_string(column_type):
        return "INVERTED"
    return "BTREE"


def type_problem(index_type: str, column_type: Any) -> str | None:
    """Why ``index_type`` cannot index a column of ``column_type`` (None: it can)."""
    import pyarrow as pa

    if is_vector(index_type) and not pa.types.is_fixed_size_list(column_type):
        return f"a vector index needs a fixed-size list of floats, the column is {column_type}"
    if is_text(index_type) and not (
        pa.types.is_string(column_type) or pa.types.is_large_string(column_type)
    ):
        return f"a text index needs a string column, the column is {column_type}"
    return None


def _sub_vectors(dim: int) -> int:
    target = max(1, dim // 8)
    for d in range(target, 0, -1):
        if dim % d == 0:
            return d
    return 1


def too_small(index_type: str, params: dict[str, Any], rows: int) -> bool:
    """True when a table of ``rows`` rows is left without this (vector) index."""
    return is_vector(index_type) and rows < int(params.get("min_rows", MIN_VECTOR_ROWS))


def build(ds: Any, column: str, index_type: str, name: str, params: dict[str, Any]) -> None:
    """Build the index in one pylance commit on ``ds`` (replacing one of the same name)."""
    kw = {k: v for k, v in params.items() if k not in OWN_PARAMS}
    t = index_type.upper()
    if not is_vector(t):
        ds.create_scalar_index(column, t, name=name, replace=True, **kw)
        return
    if "PQ" in t:
        rows = int(ds.count_rows())
        # pylance trains at most one IVF partition per 256 rows (it warns and trains fewer)
        kw.setdefault("num_partitions", max(1, min(int(math.sqrt(max(rows, 1))), rows // 256)))
        dim = ds.schema.field(column).type.list_size
        kw.setdefault("num_sub_vectors", _sub_vectors(max(int(dim), 1)))
    ds.create_index(column, t, name=name, replace=True, **kw)
