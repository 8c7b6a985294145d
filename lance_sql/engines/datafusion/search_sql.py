"""SQL search: the table function ``lance_search(table, column, query, k [, where])``.

datafusion-python 55 hosts Python table functions (``SessionContext.register_udtf``):
the function receives its arguments as literal expressions while the query is
planned and returns a table provider. ``lance_search`` looks ``table`` up
among the Lance datasets and namespaces registered in the lance-sql context,
runs :func:`lance_sql.search` (pruning, per-partition indexed or flat search,
global top-k merge) and hands DataFusion the result as an in-memory dataset:
a search result joins, filters and aggregates like any table.

``query`` is a vector literal (``[0.1, 0.2, ...]``: vector search,
``_distance``) or a string (full text over a string column, ``_score``);
``where`` a filter in the scan planner's SQL dialect, applied before the top
``k`` (prefilter). ``EXPLAIN`` lists each search's report (partitions searched
/ total, indexed or flat per table, the index used).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pds
from datafusion import Expr, udtf

from lance_sql.engines.datafusion.errors import recorded, typed_error
from lance_sql.errors import LanceSqlError
from lance_sql.planning.search import search
from lance_sql.planning.search_table import SearchError

_LOCAL = threading.local()


def _value(arg: Any, position: int) -> Any:
    try:
        value = Expr(arg).python_value()
    except Exception as exc:  # not a literal: a column, a subquery, ...
        raise SearchError(
            f"lance_search argument {position} must be a literal (a table name, column name, "
            f"vector [..] or text, k, and an optional where string)"
        ) from exc
    return value.as_py() if isinstance(value, pa.Scalar) else value


def _target(ctx: Any, name: str) -> Any:
    namespaces = ctx.registered_namespaces()
    if name in namespaces:
        return namespaces[name]._current()
    try:
        return ctx.lance_table(name).table.snapshot().dataset
    except KeyError:
        known = sorted([*namespaces, *ctx._lance_tables])
        raise SearchError(
            f"lance_search: no Lance dataset or namespace named {name!r} is registered "
            f"(registered: {known}); use register_lance or register_namespace"
        ) from None


def _call(ctx_ref: weakref.ref, *args: Any) -> pds.Dataset:
    ctx = ctx_ref()
    if len(args) not in (4, 5):
        raise SearchError(
            f"lance_search takes (table, column, query, k [, where]); got {len(args)} arguments"
        )
    table, column, query, k, *rest = (_value(a, i + 1) for i, a in enumerate(args))
    where = rest[0] if rest else None
    if not isinstance(table, str) or not isinstance(column, str):
        raise SearchError("lance_search: table and column are given as strings ('name')")
    if not isinstance(k, int):
        raise SearchError(f"lance_search: k must be an integer, got {k!r}")
    target = _target(ctx, table)
    result, report = search(target, column, query, k, where=where, return_report=True)
    reports = getattr(_LOCAL, "reports", None)
    if reports is not None:
        reports.append(f"lance_search({table}): {report.explain()}")
    return pds.dataset(result)


def register(ctx: Any) -> None:
    """Register ``lance_search`` in the lance-sql context ``ctx``."""
    ref = weakref.ref(ctx)

    @recorded
    def lance_search(*args: Any) -> pds.Dataset:
        try:
            return _call(ref, *args)
        except LanceSqlError:
            raise
        except (ValueError, TypeError, OSError) as exc:
            raise SearchError(f"lance_search failed: {exc}") from exc

    ctx.register_udtf(udtf(lance_search, "lance_search"))


def typed_planning_error(query: str, exc: BaseException) -> LanceSqlError | None:
    """The lance-sql error a failed ``lance_search`` call raised while ``query`` was planned."""
    return typed_error(exc) if "lance_search" in query.lower() else None


def begin_statement() -> None:
    """Start collecting the search reports of the statement about to be planned."""
    _LOCAL.reports = []


def explain_lines() -> list[str]:
    """The search reports of the statement planned last in this thread (for EXPLAIN)."""
    reports = getattr(_LOCAL, "reports", None) or []
    return [line for r in reports for line in r.splitlines()]


__all__ = ["begin_statement", "explain_lines", "register", "typed_planning_error"]
