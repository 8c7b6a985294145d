"""The SQL preprocessing pipeline: a list of small, named rewrites applied before DataFusion.

DataFusion 55 cannot express some things lance-sql needs from Python (any-type
and variadic functions, predicates on transform terms, co-partitioned joins), so
``lance_sql.SessionContext.sql`` passes the query text through these passes
first, in order. Each pass is a plain function ``(ctx, sql) -> sql`` that must be
idempotent and must return the text unchanged when it does not apply (cheaply:
check for its trigger words before parsing). Passes are registered with
:func:`register_pass`; later features add theirs here (sqlglot-style: one pass,
one job, each tested on its own).
"""

from __future__ import annotations

from collections.abc import Callable
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


def register_pass(name: str, run: SqlPass) -> None:
    """Append a rewrite to the pipeline (replacing one of the same name, in place)."""
    for i, existing in enumerate(_PASSES):
        if existing.name == name:
            _PASSES[i] = NamedPass(name, run)
            return
    _PASSES.append(NamedPass(name, run))


def registered_passes() -> tuple[NamedPass, ...]:
    return tuple(_PASSES)


def rewrite_sql(ctx: datafusion.SessionContext, sql: str) -> str:
    """Run every registered pass over ``sql`` in order."""
    for rewrite in _PASSES:
        sql = rewrite.run(ctx, sql)
    return sql
