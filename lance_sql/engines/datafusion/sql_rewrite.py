"""Temporary tables: query-scoped ones for the plan passes (:mod:`.plan_rewrite`), and
Arrow rows registered for one block (:func:`registered`).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    import datafusion

_NAMES = itertools.count()
_SCOPE = threading.local()


@contextmanager
def query_scope(ctx: datafusion.SessionContext) -> Iterator[None]:
    """Drop the tables passes register for one query (:func:`register_query_table`) at exit.

    A logical plan holds its providers, so the names can go once it is planned;
    the scope is per thread.
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


def register_rows(ctx: datafusion.SessionContext, name: str, table: pa.Table) -> None:
    """``table`` registered in ``ctx`` as ``name`` (in place of any table of that name)."""
    ctx.deregister_table(name)
    batches = table.to_batches() or [
        pa.record_batch([pa.array([], f.type) for f in table.schema], schema=table.schema)
    ]
    ctx.register_record_batches(name, [batches])


@contextmanager
def registered(ctx: datafusion.SessionContext, tables: Mapping[str, pa.Table]) -> Iterator[None]:
    """``tables`` registered in ``ctx`` by their names while the block runs (an empty
    table keeps its schema)."""
    try:
        for name, table in tables.items():
            register_rows(ctx, name, table)
        yield
    finally:
        for name in tables:
            ctx.deregister_table(name)


def fresh_table_name(prefix: str) -> str:
    """A table name ``{prefix}_{n}`` no other query of this process uses."""
    return f"{prefix}_{next(_NAMES)}"


def register_query_table(ctx: datafusion.SessionContext, name: str, table: object) -> None:
    """Register ``table`` as ``name`` for the query being rewritten (dropped by
    :func:`query_scope`)."""
    if isinstance(table, pa.Table):
        register_rows(ctx, name, table)
    else:
        ctx.register_table(name, table)
    names = getattr(_SCOPE, "names", None)
    if names is not None:
        names.append(name)
