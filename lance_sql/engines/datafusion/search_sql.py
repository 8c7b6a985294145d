"""SQL search: the table functions ``lance_search`` and ``lance_hybrid_search``.

Python table functions receive literal arguments while the query is planned
(docs/search.md). Planning only prunes and picks each table's route; the
returned lazy dataset runs the search when executed, so ``EXPLAIN`` describes
it without running it.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pds
from datafusion import Expr, udtf

from lance_sql.engines.datafusion.dml_target import registered_target
from lance_sql.engines.datafusion.errors import recording, typed_error
from lance_sql.engines.datafusion.provider import ScanUnitDataset
from lance_sql.errors import LanceSqlError
from lance_sql.planning.scan_plan import ScanPlan
from lance_sql.planning.search import result_schema, search
from lance_sql.planning.search_table import SearchError
from lance_sql.tables.scan import (
    ScanUnit,
    empty_batches,
    filter_table,
    matches_nothing,
    normalize_filter,
    with_sql_semantics,
)

_LOCAL = threading.local()

#: named options (struct fields) and the Python types their values must have
OPTIONS: dict[str, type | tuple[type, ...]] = {
    "prefilter": bool,
    "use_index": bool,
    "nprobes": int,
    "refine_factor": int,
    "ef": int,
    "metric": str,
}
HYBRID_OPTIONS = {**OPTIONS, "rrf_k": int}


def _value(fn: str, arg: Any, position: int) -> Any:
    try:
        value = Expr(arg).python_value()
    except Exception as exc:  # not a literal: a column, a subquery, ...
        raise SearchError(
            f"{fn} argument {position} must be a literal (a name, a vector [..], a text, "
            f"k, a where string or NULL, an options struct {{'nprobes': 20}})"
        ) from exc
    return value.as_py() if isinstance(value, pa.Scalar) else value


def _options(fn: str, value: Any, allowed: dict[str, Any]) -> dict[str, Any]:
    """The options struct as keyword arguments (typed error on an unknown name or type)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SearchError(
            f"{fn}: options are a struct literal such as {{'nprobes': 20, 'prefilter': false}}, "
            f"got {value!r}"
        )
    out = {}
    for name, v in value.items():
        if name not in allowed:
            raise SearchError(f"{fn}: unknown option {name!r}; options are {sorted(allowed)}")
        want = allowed[name]
        if v is not None and (not isinstance(v, want) or (want is int and isinstance(v, bool))):
            kind = {bool: "true or false", int: "an integer", str: "a string"}[want]
            raise SearchError(f"{fn}: option {name!r} takes {kind}, got {v!r}")
        if v is not None:
            out[name] = v
    return out


def _tail(fn: str, rest: list[Any], allowed: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """(where, options) from the arguments after ``k``: ``[where] [, options]``."""
    if len(rest) == 1 and isinstance(rest[0], dict):
        return None, _options(fn, rest[0], allowed)
    where = rest[0] if rest else None
    if where is not None and not isinstance(where, str):
        raise SearchError(f"{fn}: where is a string ('region = ''us''') or NULL, got {where!r}")
    return where, _options(fn, rest[1] if len(rest) > 1 else None, allowed)


def _target(ctx: Any, fn: str, name: Any) -> Any:
    if not isinstance(name, str):
        raise SearchError(f"{fn}: the table is given as a string ('name')")
    found = registered_target(ctx, name, as_written=True)
    if found is None:
        known = sorted([*ctx.registered_namespaces(), *ctx._lance_tables])
        raise SearchError(
            f"{fn}: no Lance dataset or namespace named {name!r} is registered "
            f"(registered: {known}); use register_lance or register_namespace"
        )
    kind, table = found
    return table._current() if kind == "namespace" else table.table.snapshot().dataset


def _check_k(fn: str, k: Any) -> int:
    if not isinstance(k, int) or isinstance(k, bool):
        raise SearchError(f"{fn}: k must be an integer, got {k!r}")
    return k


#: each function's positional arguments (with k, before [, where] [, options]) and options
_SIGNATURES = {
    "lance_search": ("table, column, query, k", OPTIONS),
    "lance_hybrid_search": ("table, vector_column, vector, text_column, text, k", HYBRID_OPTIONS),
}


def _arguments(ctx: Any, fn: str, args: list[Any]) -> tuple[str, Any, dict[str, Any]]:
    """(table name, what to search, ``search`` keyword arguments) of a call of ``fn``."""
    names, allowed = _SIGNATURES[fn]
    n = names.count(",") + 1
    if not n <= len(args) <= n + 2:
        raise SearchError(f"{fn} takes ({names} [, where] [, options]); got {len(args)} arguments")
    table, *given, k = args[:n]
    if fn == "lance_search":
        column, query = given
        if not isinstance(column, str):
            raise SearchError(f"{fn}: the column is given as a string ('name')")
        kwargs = dict(column=column, query=query)
    else:
        vcol, vec, tcol, text = given
        if not isinstance(vcol, str) or not isinstance(tcol, str) or not isinstance(text, str):
            raise SearchError(f"{fn}: column names and the text are given as strings")
        kwargs = dict(vector=(vcol, vec), text=(tcol, text))
    where, opts = _tail(fn, args[n:], allowed)
    target = _target(ctx, fn, table)
    return table, target, dict(**kwargs, k=_check_k(fn, k), where=where, **opts)


class SearchUnit(ScanUnit):
    """The one partition of a search table: runs the search when its batches are read."""

    def __init__(self, schema: pa.Schema, run: Callable[[], pa.Table], text: str) -> None:
        self._schema = schema
        self._run = run
        self._text = text

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def describe(self) -> str:
        return self._text

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        batch_size: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        filter = normalize_filter(filter)
        if matches_nothing(filter):
            return iter(())
        table = self._run()
        if not table.schema.equals(self._schema):
            table = table.cast(self._schema)
        if filter is not None:  # DataFusion will not re-check it: SQL semantics (NULL IN ...)
            table = filter_table(table, with_sql_semantics(filter, table.schema))
        if columns is not None and not columns:  # count(*): row counts only
            return empty_batches(table.num_rows, batch_size)
        if columns is not None:
            table = table.select(list(columns))
        return iter(table.to_batches(max_chunksize=batch_size or None))


def _call(ctx_ref: weakref.ref, hybrid: bool, *raw: Any) -> pds.Dataset:
    ctx = ctx_ref()
    fn = "lance_hybrid_search" if hybrid else "lance_search"
    args = [_value(fn, a, i + 1) for i, a in enumerate(raw)]
    table, target, kwargs = _arguments(ctx, fn, args)
    report = search(target, explain=True, **kwargs)  # prunes and routes; runs no search
    schema = result_schema(target, report.kind)
    reports = getattr(_LOCAL, "reports", None)
    if reports is not None:
        reports.append(f"{fn}({table}): {report.explain()}")

    def run() -> pa.Table:
        return _typed(fn, lambda: search(target, **kwargs))

    text = (
        f"{fn}: top {kwargs['k']} of {report.searched}/{report.total} partition table(s), "
        "searched when executed"
    )
    plan = ScanPlan.of_units([SearchUnit(schema, run, text)], text)
    return ScanUnitDataset(schema, lambda _filter: plan, name=f"{fn}({table})")


def _typed(fn: str, call: Callable[[], Any]) -> Any:
    """``call()``, its ValueError / TypeError / OSError as a :class:`SearchError` naming ``fn``."""
    try:
        return call()
    except LanceSqlError:
        raise
    except (ValueError, TypeError, OSError) as exc:
        raise SearchError(f"{fn} failed: {exc}") from exc


def register(ctx: Any) -> None:
    """Register ``lance_search`` and ``lance_hybrid_search`` in the lance-sql context ``ctx``."""
    ref = weakref.ref(ctx)
    for hybrid, name in ((False, "lance_search"), (True, "lance_hybrid_search")):

        def table_function(*args: Any, _hybrid: bool = hybrid, _name: str = name) -> Any:
            return _typed(_name, lambda: _call(ref, _hybrid, *args))

        ctx.register_udtf(udtf(recording()(table_function), name))


def typed_planning_error(query: str, exc: BaseException) -> LanceSqlError | None:
    """The lance-sql error a failed search table function raised while ``query`` was planned."""
    text = query.lower()
    return typed_error(exc) if "lance_search" in text or "lance_hybrid_search" in text else None


def begin_statement() -> None:
    """Start collecting the search reports of the statement about to be planned."""
    _LOCAL.reports = []


def explain_lines() -> list[str]:
    """The search reports of the statement planned last in this thread (for EXPLAIN)."""
    reports = getattr(_LOCAL, "reports", None) or []
    return [line for r in reports for line in r.splitlines()]
