"""The SQL text passes that run before DataFusion, and query-scoped temporary tables.

One pass is left: the typed dispatch of ``murmur3`` / ``murmur3_multi``
(DataFusion 55's Python UDFs have one exact signature each, so a call must be
renamed to a UDF for its argument types before DataFusion plans it; see
:mod:`.sql_dispatch`). Everything else lance-sql does to a query works on
DataFusion's plan (:mod:`.plan_rewrite`). A pass is a plain function
``(ctx, sql) -> sql`` that returns the text unchanged when it does not apply.

:func:`query_scope` / :func:`register_query_table` give the plan passes
temporary tables that are dropped once the plan holding them is built.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import datafusion

SqlPass = Callable[["datafusion.SessionContext", str], str]


@dataclass(frozen=True)
class NamedPass:
    """One rewrite with the name reported in errors and by ``EXPLAIN``."""

    name: str
    run: SqlPass


_PASSES: list[NamedPass] = []


def register_pass(name: str, run: SqlPass, *, before: str | None = None) -> None:
    """Add a rewrite to the pipeline: replace one of the same name in place, else append.

    ``before`` names a pass this one must run ahead of (e.g. a pass that reads
    ``murmur3`` calls before ``murmur3_dispatch`` renames them): a new pass is
    inserted just ahead of it when it is registered already, and appended
    otherwise (the named pass, registered later, then lands after it). The
    order of the other passes never changes.
    """
    for i, existing in enumerate(_PASSES):
        if existing.name == name:
            _PASSES[i] = NamedPass(name, run)
            return
    at = next((i for i, p in enumerate(_PASSES) if p.name == before), len(_PASSES))
    _PASSES.insert(at, NamedPass(name, run))


def registered_passes() -> tuple[NamedPass, ...]:
    return tuple(_PASSES)


_NAMES = itertools.count()
_SCOPE = threading.local()


@contextmanager
def query_scope(ctx: datafusion.SessionContext) -> Iterator[None]:
    """Drop the tables passes register for one query (:func:`register_query_table`) at exit.

    ``SessionContext.sql`` plans the rewritten query inside this scope. A
    DataFusion logical plan holds its table providers, so the names can go as
    soon as the query is planned; the scope is per thread, so queries planned
    concurrently on one context never drop each other's tables.
    """
    outer = getattr(_SCOPE, "names", None)
    _SCOPE.names = []
    try:
        yield
    finally:
        names, _SCOPE.names = _SCOPE.names, outer
        for name in names:
            if ctx.table_exist(name):
                ctx.deregister_table(name)


def fresh_table_name(prefix: str) -> str:
    """A table name ``{prefix}_{n}`` no other query of this process uses."""
    return f"{prefix}_{next(_NAMES)}"


def register_query_table(ctx: datafusion.SessionContext, name: str, table: object) -> None:
    """Register ``table`` as ``name`` (from :func:`fresh_table_name`) for the query being rewritten.

    Inside :func:`query_scope` the name is dropped once the query is planned;
    outside one (a pass called directly, e.g. in a test) it stays registered.
    """
    ctx.register_table(name, table)
    names = getattr(_SCOPE, "names", None)
    if names is not None:
        names.append(name)


def rewrite_sql(ctx: datafusion.SessionContext, sql: str) -> str:
    """Run every registered pass over ``sql`` in order."""
    for rewrite in _PASSES:
        sql = rewrite.run(ctx, sql)
    return sql
