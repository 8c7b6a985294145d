"""Vector, full-text and hybrid search over a partitioned namespace or one Lance dataset.

``where`` prunes partition tables with :func:`~.namespace_scan.plan_scan`, each selected
table is searched on its own (:mod:`.search_table`) and the candidates are merged into
the global top ``k``; ties go by partition table (``object_id``), then row id. Hybrid
search fuses the two ranked lists by reciprocal rank (docs/search.md).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from lance_sql.planning.scan_filter import ScanFilter
from lance_sql.planning.search_table import (
    SearchError,
    SearchQuery,
    SearchTarget,
    TableCall,
    TableReport,
    as_query_vector,
    empty_result,
    plan_table,
    top_k,
)
from lance_sql.tables.dataset_cache import OpenCache


@dataclass(frozen=True)
class SearchReport:
    """What a search reads: ``searched``/``total`` partition tables, each one's route."""

    kind: str
    column: str
    k: int
    total: int
    tables: tuple[TableReport, ...]
    pruning: str = ""

    @property
    def searched(self) -> int:
        return len(self.tables)

    @property
    def indexed(self) -> int:
        return sum(1 for t in self.tables if t.mode == "index")

    def explain(self) -> str:
        lines = [
            f"{self.kind} search on {self.column} k={self.k}: partitions searched "
            f"{self.searched}/{self.total} ({self.indexed} indexed, "
            f"{self.searched - self.indexed} flat)"
        ]
        lines += [f"  {t.line()}" for t in self.tables]
        if self.pruning:
            lines += [f"  {s}" for s in self.pruning.splitlines()]
        return "\n".join(lines)

    __str__ = explain


def _is_namespace(obj: Any) -> bool:
    return hasattr(obj, "snapshot") and hasattr(obj, "specs")


def _open(target: Any) -> Any:
    """A namespace or a pylance dataset for a path, a namespace or a dataset."""
    if _is_namespace(target) or hasattr(target, "to_table"):
        return target
    import lance

    from lance_sql.errors import LanceSqlError
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    try:
        return PartitionedNamespace.open(str(target))
    except LanceSqlError as exc:
        try:
            return lance.dataset(str(target))
        except (OSError, ValueError, RuntimeError):
            raise SearchError(
                f"{target}: neither a partitioned namespace nor a Lance dataset ({exc})"
            ) from exc


def _targets(
    obj: Any, where: Any, partitions: list[str] | None = None
) -> tuple[list[SearchTarget], ScanFilter | None, int, str]:
    """(tables to search, the filter, total tables, pruning report) for a namespace or dataset."""
    from lance_sql.planning.namespace_scan import plan_scan

    if not _is_namespace(obj):
        schema = obj.schema
        names = {n: n for n in schema.names}
        return (
            [SearchTarget(str(obj.uri), obj, schema, names)],
            ScanFilter.parse(where, schema),
            1,
            "",
        )
    from lance_sql.tables.namespace.reader import map_columns

    plan = _plan(obj, where, plan_scan)
    entries = {e.object_id: e for e in obj.tables()}
    out = []
    for oid in plan.object_ids:
        if partitions is not None and oid not in partitions:
            continue
        ds, tschema = obj._open(entries[oid])
        mapping = map_columns(obj.schema, tschema, object_id=oid)
        sources = dict(zip(obj.schema.names, mapping.sources, strict=True))
        out.append(SearchTarget(oid, ds, obj.schema, sources, oid in plan.proven))
    return out, plan.scan_filter, plan.total_partitions, plan.explain()


_CPUS = os.cpu_count() or 1
_PLANS: OpenCache[Any] = OpenCache(256)


def _memo(key: tuple | None, make: Any) -> Any:
    """``make()``, remembered under ``key`` (None: not remembered); at most 256 entries."""
    return make() if key is None else _PLANS.get_or_open(key, make)


def _key(tag: str, obj: Any, where: Any, partitions: Any, *rest: Any) -> tuple | None:
    """(``tag``, root, ``__manifest`` version, filter text, ``*rest``): all a result over a
    snapshot depends on; None (not remembered) for a subset of the tables or unhashable parts."""
    if partitions is not None or not _is_namespace(obj) or not isinstance(where, (str, type(None))):
        return None
    key = (tag, str(obj.root), obj.manifest_version, where, *rest)
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _plan(ns: Any, where: Any, plan_scan: Any) -> Any:
    """``plan_scan(ns, where)``, remembered per snapshot and filter text."""
    return _memo(_key("plan", ns, where, None), lambda: plan_scan(ns, where))


def _prepared(obj: Any, q: SearchQuery, where: Any, prefilter: bool, partitions: Any) -> tuple:
    """(targets, filter, total, pruning text, table reports), remembered per snapshot."""

    def make() -> tuple:
        targets, sf, total, pruning = _targets(obj, where, partitions)
        return targets, sf, total, pruning, [plan_table(t, q, sf, prefilter) for t in targets]

    key = _key("search", obj, where, partitions, q.kind, q.column, q.use_index, prefilter)
    return _memo(key, make)


def _call_key(obj: Any, where: Any, partitions: Any, column: str, query: Any, *opts: Any):
    """The key a prepared one-table search is remembered under (None: not remembered)."""
    if not isinstance(opts[1], (list, tuple, type(None))):
        return None
    cols = None if opts[1] is None else tuple(opts[1])
    rest = (column, isinstance(query, str), int(opts[0]), cols, *opts[2:])
    return _key("call", obj, where, partitions, *rest)


def _query(
    kind: str | None, column: str, query: Any, schema: pa.Schema, **opts: Any
) -> SearchQuery:
    """The query of ``kind`` (None: text for a string query on a string column, else vector)."""
    if column not in schema.names:
        raise SearchError(f"cannot search column {column!r}: no such column ({schema.names})")
    kind = kind or _kind_of(schema.field(column), query)
    if kind == "vector":
        query = as_query_vector(query, column, schema.field(column))
    elif not isinstance(query, str):
        raise SearchError(f"full-text query for column {column!r} must be a string")
    return SearchQuery(kind, column, query, **opts)


def _kind_of(field: pa.Field, query: Any) -> str:
    if isinstance(query, str) and (
        pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
    ):
        return "text"
    return "vector"


def _run(obj, q, columns, where, prefilter, explain, partitions=None, row_ids=True, call_key=None):
    """(report, rows): rows carry ``_part`` and ``_rowid`` only with ``row_ids``;
    ``call_key``: where to remember the prepared call when one table is searched."""
    targets, sf, total, pruning, reports = _prepared(obj, q, where, prefilter, partitions)
    report = SearchReport(q.kind, q.column, q.k, total, tuple(reports), pruning)
    if explain:
        return report, None
    cols = list(obj.schema.names if columns is None else columns)
    missing = [c for c in cols if c not in obj.schema.names]
    if missing:
        raise SearchError(f"no column(s) {missing} to return (columns: {obj.schema.names})")

    if len(targets) == 1 and not row_ids:  # nothing to merge: pylance's rows, named
        call = TableCall(targets[0], q, cols, sf, prefilter, reports[0], False)
        if call_key is not None:
            _memo(call_key, lambda: call)
        return report, call.run(q.query)
    # the tie rule orders partition tables by object_id: number them in that order
    order = sorted(range(len(targets)), key=lambda i: targets[i].object_id)
    rank = {i: r for r, i in enumerate(order)}

    def one(i: int) -> pa.Table:
        part = TableCall(targets[i], q, cols, sf, prefilter, reports[i]).run(q.query)
        return part.append_column("_part", pa.array([rank[i]] * part.num_rows, pa.int32()))

    workers = max(1, min(len(targets), _CPUS, 8))
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            parts = list(pool.map(one, range(len(targets))))
    else:
        parts = [one(i) for i in range(len(targets))]
    if not parts:
        empty = empty_result(obj.schema, cols, q.kind)
        if not row_ids:
            return report, empty.drop_columns(["_rowid"])
        return report, empty.append_column("_part", pa.array([], pa.int32()))
    if len(parts) == 1:  # one table: already in pylance's order (ties: pylance's choice)
        return report, parts[0]
    return report, top_k(pa.concat_tables(parts), q.kind, q.k)  # the global top k


def result_schema(target: Any, kind: str, columns: list[str] | None = None) -> pa.Schema:
    """The schema :func:`search` returns for ``kind`` (``vector``, ``text``, ``hybrid``)."""
    schema = _open(target).schema
    fields = [schema.field(c) for c in (schema.names if columns is None else columns)]
    scores = {"vector": ["_distance"], "text": ["_score"]}.get(kind, ["_distance", "_score"])
    fields += [pa.field(name, pa.float32()) for name in scores]
    if kind == "hybrid":
        fields.append(pa.field("_hybrid_score", pa.float64()))
    return pa.schema(fields)


def rrf(vec: pa.Table, txt: pa.Table, k: int, rrf_k: int = 60) -> pa.Table:
    """Reciprocal rank fusion of two ranked candidate lists (each in rank order)."""
    scores: dict[tuple[int, int], float] = {}
    rows: dict[tuple[int, int], tuple[pa.Table, int]] = {}
    for t in (vec, txt):
        for r, key in enumerate(_keys(t)):
            scores[key] = scores.get(key, 0.0) + 1.0 / (rrf_k + r + 1)
            rows.setdefault(key, (t, r))
    best = sorted(scores, key=lambda key: (-scores[key], key[0], key[1]))[:k]
    dist = dict(zip(_keys(vec), vec.column("_distance").to_pylist(), strict=True))
    score = dict(zip(_keys(txt), txt.column("_score").to_pylist(), strict=True))
    base = [c for c in vec.column_names if c not in ("_distance",)]
    pieces = [rows[key][0].select(base).slice(rows[key][1], 1) for key in best]
    out = pa.concat_tables(pieces) if pieces else vec.select(base).slice(0, 0)
    out = out.append_column("_distance", pa.array([dist.get(x) for x in best], pa.float32()))
    out = out.append_column("_score", pa.array([score.get(x) for x in best], pa.float32()))
    return out.append_column("_hybrid_score", pa.array([scores[x] for x in best], pa.float64()))


def _keys(t: pa.Table):
    """(``_part``, ``_rowid``) of every row of ``t``: a candidate's identity."""
    return zip(t.column("_part").to_pylist(), t.column("_rowid").to_pylist(), strict=True)


def search(
    target: Any,
    column: str | None = None,
    query: Any = None,
    k: int = 10,
    *,
    where: Any = None,
    columns: list[str] | None = None,
    prefilter: bool = True,
    metric: str | None = None,
    nprobes: int | None = None,
    refine_factor: int | None = None,
    ef: int | None = None,
    use_index: bool = True,
    vector: tuple[str, Any] | None = None,
    text: tuple[str, str] | None = None,
    fusion: str = "rrf",
    rrf_k: int = 60,
    explain: bool = False,
    with_row_ids: bool = False,
    return_report: bool = False,
    partitions: list[str] | None = None,
) -> Any:
    """Top ``k`` rows of ``target`` (a namespace, a Lance dataset, or a path to either).

    Returns a ``pyarrow.Table``: ``columns`` (default: all) plus ``_distance``
    (vector) or ``_score`` (full text) or ``_distance``, ``_score`` and
    ``_hybrid_score`` (hybrid). ``with_row_ids`` adds ``_part`` (rank of the
    partition table by object id) and ``_rowid``. See docs/search.md.
    """
    obj = _open(target)
    call_key = None
    plain = not (explain or with_row_ids or return_report)
    if plain and column is not None and vector is None and text is None:
        call_key = _call_key(obj, where, partitions, column, query, k, columns, prefilter,
                             metric, nprobes, refine_factor, ef, use_index)  # fmt: skip
        call = None if call_key is None else _PLANS.get(call_key)
        if call is not None:  # the same search of one table on this snapshot: only the query
            if call.q.kind == "vector":
                query = as_query_vector(query, column, obj.schema.field(column))
            return call.run(query)
    if int(k) < 0:
        raise SearchError(f"k must be >= 0, got {k}")
    opts = dict(
        k=int(k),
        metric=metric,
        nprobes=nprobes,
        refine_factor=refine_factor,
        ef=ef,
        use_index=use_index,
    )
    schema = obj.schema
    if vector is not None or text is not None:
        if vector is None or text is None or column is not None:
            raise SearchError("hybrid search takes vector=(column, q) and text=(column, '...')")
        if fusion != "rrf":
            raise SearchError(f"unknown fusion {fusion!r}: use 'rrf'")
        qv = _query("vector", vector[0], vector[1], schema, **opts)
        qt = _query("text", text[0], text[1], schema, **opts)
        rv, tv = _run(obj, qv, columns, where, prefilter, explain, partitions)
        rt, tt = _run(obj, qt, columns, where, prefilter, explain, partitions)
        report = replace(rv, kind="hybrid", tables=rv.tables + rt.tables)
        if explain:
            return report
        out = rrf(tv, tt, int(k), rrf_k)
    else:
        if column is None:
            raise SearchError("search needs a column and a query (or vector=/text= for hybrid)")
        report, out = _run(
            obj,
            _query(None, column, query, schema, **opts),
            columns,
            where,
            prefilter,
            explain,
            partitions,
            with_row_ids,
            call_key,
        )
        if explain:
            return report
    if not with_row_ids and "_rowid" in out.column_names:
        out = out.drop_columns(["_part", "_rowid"])
    return (out, report) if return_report else out


__all__ = ["SearchError", "SearchReport", "result_schema", "rrf", "search"]
