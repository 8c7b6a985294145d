"""One table's part of a search: pylance's ``nearest`` / ``full_text_query`` with the filter.

The ``where`` filter runs inside Lance with ``prefilter`` when all of it can; otherwise
every row passing the part Lance can run is ranked flat, then the rest is applied
before the top ``k``. Without ``prefilter`` the top ``k`` come first and the filter
after (fewer rows may remain). The route is reported per table.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from lance.query import MatchQuery

from lance_sql.errors import LanceSqlError
from lance_sql.planning.scan_filter import ScanFilter
from lance_sql.tables.float_filters import FloatRewriteError, with_sql_float_semantics
from lance_sql.tables.namespace.index_kinds import is_text, is_vector


class SearchError(LanceSqlError):
    """A search cannot run as asked; names the table or column and the fix."""


@dataclass(frozen=True)
class SearchTarget:
    """One dataset to search, with ``sources``: namespace column -> its column (None: absent)."""

    object_id: str
    dataset: Any
    schema: pa.Schema  # the namespace (or dataset) schema results are named by
    sources: dict[str, str | None]
    #: the table's partition values prove the whole ``where``: searched without it
    proven: bool = False

    @property
    def identity(self) -> bool:
        return all(k == v for k, v in self.sources.items())


@dataclass(frozen=True)
class SearchQuery:
    """What to search: ``kind`` is ``vector`` or ``text``; ``query`` a float32 vector or text."""

    kind: str
    column: str
    query: Any
    k: int
    metric: str | None = None
    nprobes: int | None = None
    refine_factor: int | None = None
    ef: int | None = None
    use_index: bool = True


@dataclass(frozen=True)
class TableReport:
    """How one table was searched: ``mode`` is ``index`` or ``flat``; ``filter`` the route."""

    object_id: str
    rows: int
    mode: str
    index: str | None
    index_type: str | None
    filter: str

    def line(self) -> str:
        how = f"index {self.index} ({self.index_type})" if self.mode == "index" else "flat"
        return f"{self.object_id}: {how}, {self.rows} rows, filter {self.filter}"


def table_index(target: SearchTarget, q: SearchQuery) -> tuple[str, str] | None:
    """(name, type) of the table's index on the searched column for this kind of query."""
    col = target.sources.get(q.column)
    if col is None:
        return None
    for ix in target.dataset.describe_indices():
        names = list(getattr(ix, "field_names", None) or [])
        itype = str(ix.index_type).upper()
        if names != [col]:
            continue
        if (q.kind == "vector" and is_vector(itype)) or (q.kind == "text" and is_text(itype)):
            return str(ix.name), itype
    return None


def _route(sf: ScanFilter | None, target: SearchTarget, prefilter: bool):
    """(expression pushed into Lance or None, filter applied afterwards or None, route name)."""
    if sf is None or sf.is_true:
        return None, None, "none"
    if target.proven:
        return None, None, "proven by partition values (not applied)"
    if not prefilter:
        return None, sf, "after top-k (prefilter=False)"
    if not target.identity:
        return None, sf, "exact, outside Lance (columns renamed)"
    try:
        pushed, exact = _pushdown(sf, target.schema)
    except TypeError:  # a filter holding an unhashable literal: not remembered
        pushed, exact = _pushdown.__wrapped__(sf, target.schema)
    if exact and sf.substrait is None:
        return pushed, None, "prefilter in Lance"
    return pushed, sf, "exact, partly outside Lance"


@functools.lru_cache(maxsize=64)
def _pushdown(sf: ScanFilter, schema: pa.Schema) -> tuple[pc.Expression | None, bool]:
    """The part of ``sf`` Lance runs exactly, with DataFusion's float semantics; all of it?"""
    # serialised against the columns it reads (a vector column has no Substrait form)
    used = pa.schema([schema.field(c) for c in sf.columns(schema)])
    pushed, exact = sf.pushdown(used)
    if pushed is not None:
        try:
            pushed = with_sql_float_semantics(pushed, used, columns_only=True)
        except FloatRewriteError:
            pushed, exact = None, False
    return pushed, exact


def plan_table(
    target: SearchTarget, q: SearchQuery, sf: ScanFilter | None, prefilter: bool
) -> TableReport:
    """The report of how :class:`TableCall` will search ``target``."""
    found = table_index(target, q)
    ix = found if q.use_index else None
    _, after, route = _route(sf, target, prefilter)
    if after is not None and prefilter:
        ix = None  # every row passing the filter is ranked: a flat search
    if q.kind == "text":
        if found is None:
            raise SearchError(
                f"full-text search of column {q.column!r}: table {target.object_id!r} has no "
                f"INVERTED index on it; build one with create_index({q.column!r}, 'INVERTED')"
            )
        ix = found  # text search always ranks with the index (BM25)
    rows = int(target.dataset.count_rows())
    mode = "flat" if ix is None else "index"
    return TableReport(target.object_id, rows, mode, ix and ix[0], ix and ix[1], route)


class TableCall:
    """One table's pylance search call with everything but the query prepared (it is fixed
    for a snapshot: a repeated search only runs :meth:`run`)."""

    def __init__(
        self,
        target: SearchTarget,
        q: SearchQuery,
        columns: list[str],
        sf: ScanFilter | None,
        prefilter: bool,
        report: TableReport,
        row_ids: bool = True,
    ) -> None:
        self.target, self.q = target, q
        self.src = target.sources.get(q.column)
        pushed, self.after, _ = _route(sf, target, prefilter)
        need = list(columns)
        if self.after is not None:
            need += [c for c in self.after.columns(target.schema) if c not in need]
        self.need = need
        read = list(dict.fromkeys(target.sources[c] for c in need if target.sources.get(c)))
        k = q.k
        if self.after is not None and prefilter:
            k = max(int(report.rows), 1)  # rank every row passing the pushed part
        self.k = k
        # the score asked for by name (pylance warns that it will stop adding it by itself)
        self.ids = row_ids or self.after is not None  # the exact filter's top-k: ties by row id
        kw: dict[str, Any] = {"columns": [*read, score_column(q.kind)], "with_row_id": self.ids}
        if pushed is not None:
            kw.update(filter=pushed, prefilter=True)
        self.keep = [*columns, score_column(q.kind), *(["_rowid"] if row_ids else [])]
        if q.kind == "vector":
            nearest: dict[str, Any] = {"column": self.src, "k": k}
            nearest["use_index"] = report.mode == "index"
            for name in ("metric", "nprobes", "ef"):
                if getattr(q, name) is not None:
                    nearest[name] = getattr(q, name)
            refine = q.refine_factor
            if refine is None and report.mode == "index" and report.index_type != "IVF_FLAT":
                refine = DEFAULT_REFINE
            if refine is not None and report.mode == "index":
                nearest["refine_factor"] = refine
            self.nearest = nearest
        else:
            kw["limit"] = k
        self.kw = kw

    def run(self, query: Any) -> pa.Table:
        """The candidates for ``query`` (a float32 vector or a text, as :class:`SearchQuery`)."""
        target, q = self.target, self.q
        if self.src is None or self.k <= 0:
            return empty_result(target.schema, self.need, q.kind).select(self.keep)
        if q.kind == "vector":
            out = target.dataset.to_table(nearest={**self.nearest, "q": query}, **self.kw)
        else:
            out = target.dataset.to_table(full_text_query=MatchQuery(query, self.src), **self.kw)
        result = _named(target, out, self.need, q, self.ids)
        if self.after is not None:
            result = self.after.apply(result, target.schema, self.after.predicate)
            result = top_k(result, q.kind, q.k)
        return result if result.column_names == self.keep else result.select(self.keep)


#: refine_factor used with quantized vector indexes when none is given (recall; docs/search.md).
DEFAULT_REFINE = 5


def score_column(kind: str) -> str:
    return "_distance" if kind == "vector" else "_score"


def top_k(t: pa.Table, kind: str, k: int) -> pa.Table:
    """The best ``k`` rows of ``t`` by score; ties by ``_part``, then ``_rowid`` (where present):
    one table's candidates, or every table's when merged."""
    order = "ascending" if kind == "vector" else "descending"
    ties = [(c, "ascending") for c in ("_part", "_rowid") if c in t.column_names]
    return t.take(pc.sort_indices(t, [(score_column(kind), order), *ties])[:k])


_FLOAT32 = pa.float32()
_UINT64 = pa.uint64()


def _named(
    target: SearchTarget, out: pa.Table, need: list[str], q: SearchQuery, row_ids: bool = True
) -> pa.Table:
    """Lance's output named and typed as the namespace (casts only where types differ)."""
    arrays, fields = [], []
    for name in need:
        f = target.schema.field(name)
        src = target.sources.get(name)
        if src is None:
            arrays.append(pa.nulls(out.num_rows, f.type))
        else:
            col = out.column(src)
            arrays.append(col if col.type == f.type else col.cast(f.type))
        fields.append(f)
    sc = score_column(q.kind)
    extra = [(sc, _FLOAT32), *([("_rowid", _UINT64)] if row_ids else [])]
    for name, typ in extra:
        col = out.column(name)
        arrays.append(col if col.type == typ else col.cast(typ))
        fields.append(pa.field(name, typ))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def empty_result(schema: pa.Schema, need: list[str], kind: str) -> pa.Table:
    """No candidates: columns ``need`` of ``schema``, the score and ``_rowid``."""
    fields = [schema.field(n) for n in need]
    fields += [pa.field(score_column(kind), pa.float32()), pa.field("_rowid", pa.uint64())]
    return pa.schema(fields).empty_table()


def as_query_vector(query: Any, column: str, field: pa.Field) -> np.ndarray:
    """``query`` as a float32 vector of the column's dimension (typed error otherwise)."""
    t = field.type
    if not (pa.types.is_fixed_size_list(t) or pa.types.is_list(t)):
        raise SearchError(
            f"vector search needs a vector column (fixed-size list of floats); column "
            f"{column!r} is {t}"
        )
    try:
        vec = np.asarray(query, dtype=np.float32).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise SearchError(f"query for column {column!r} is not a vector of numbers") from exc
    if pa.types.is_fixed_size_list(t) and vec.size != t.list_size:
        raise SearchError(
            f"query vector has {vec.size} values; column {column!r} holds {t.list_size}"
        )
    return vec
