"""Evaluate a row operation's filters and new values over Arrow rows with the query engine
(:mod:`udfs.sql_engine`).

SQL text is planned by the engine as a SQL ``DELETE`` / ``UPDATE`` would be, so a filter
means exactly what it means in a ``SELECT`` (NULL is not TRUE, the engine's float, cast
and time-zone rules).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import (
    LanceSqlError,
    SchemaMismatchError,
    datafusion_error_kinds,
    first_line,
)
from udfs.sql_engine import sql_engine

if TYPE_CHECKING:
    from lance_sql.spec.predicates import Predicate

#: the number of each row given to an :class:`EnginePlan`, which it keeps in its result
ROW = "__lance_sql_row"


class SqlExpressionError(LanceSqlError):
    """A filter or expression given to a row operation does not plan or run."""


@contextmanager
def values_fit(what: str, columns: list[str]) -> Iterator[None]:
    """Run new values of ``columns``: the engine's cast error (a value that does not fit
    its column) becomes a :class:`SchemaMismatchError` naming ``what`` and the columns."""
    try:
        yield
    except SqlExpressionError as exc:
        if "cast" not in datafusion_error_kinds(exc):
            raise
        message = f"{what}: a value does not fit its column {columns}: {exc}"
        raise SchemaMismatchError(message) from exc


@dataclass(frozen=True)
class EnginePlan:
    """A plan the query engine made, over one table of rows: ``columns`` it reads (given
    with :data:`ROW`), ``outputs`` (the last is :data:`ROW`), ``text`` for messages."""

    plan: Any
    columns: tuple[str, ...]
    outputs: tuple[str, ...]
    text: str

    def run(self, rows: pa.Table | Mapping[str, pa.Table], *, what: str) -> pa.Table:
        """The plan's result over ``rows`` (a :class:`SqlExpressionError` if it fails); the
        rows of a plan over a join: each table by its name, already numbered."""
        if isinstance(rows, pa.Table):
            rows = _numbered(rows.select(list(self.columns)))
        out = _evaluated(lambda engine: engine.run_plan(self.plan, rows), what)
        return out.rename_columns(list(self.outputs))

    def replace(self, rows: pa.Table, *, what: str) -> pa.Table:
        """``rows`` with the columns the plan computes (one value a row) replaced."""
        out = self.run(rows, what=what)
        out = out.take(pc.sort_indices(out.column(ROW)))
        for name in self.outputs[:-1]:
            rows = rows.set_column(rows.column_names.index(name), name, out.column(name))
        return rows


@dataclass(frozen=True)
class RowCondition:
    """A row operation's condition as the engine planned it: ``predicate`` (the IR, for
    pruning) and ``rows`` (keeps the rows where it is TRUE, exactly)."""

    predicate: Predicate
    rows: EnginePlan

    def __str__(self) -> str:
        return self.rows.text


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _evaluated(call: Callable[[Any], pa.Table], what: str) -> pa.Table:
    """``call(engine)``; the engine's error as a :class:`SqlExpressionError` naming ``what``."""
    try:
        return call(sql_engine())
    except LanceSqlError:
        raise
    except Exception as exc:  # DataFusion raises plain exceptions; the cause is last
        first, cause = first_line(exc), str(exc).strip().splitlines()[-1].strip()
        reason = first if cause in first else f"{first}: {cause}"
        raise SqlExpressionError(f"{what} cannot be evaluated: {reason}") from exc


def _numbered(rows: pa.Table) -> pa.Table:
    return rows.append_column(ROW, pa.array(range(rows.num_rows), pa.int64()))


def _mask(n: int, kept: pa.ChunkedArray) -> pa.Array:
    mask = np.zeros(n, dtype=bool)
    mask[kept.to_numpy()] = True
    return pa.array(mask)


def row_condition(schema: pa.Schema, filter: str | RowCondition) -> RowCondition:
    """``filter`` (SQL text over ``schema``, the public form) as the engine plans it: the
    same :class:`RowCondition` SQL ``DELETE ... WHERE`` gets."""
    if isinstance(filter, RowCondition):
        return filter
    what = f"filter {filter!r}"
    return _evaluated(lambda engine: engine.row_condition(schema, filter), what)


def matching_mask(rows: pa.Table, filter: str | RowCondition | pc.Expression | None) -> pa.Array:
    """Boolean mask: True where ``filter`` (SQL over ``rows``' columns, a
    :class:`RowCondition` or a pyarrow expression; None: every row) is TRUE."""
    if filter is None:
        return pa.array(np.ones(rows.num_rows, dtype=bool))
    if rows.num_rows == 0:
        return pa.array([], pa.bool_())
    if isinstance(filter, pc.Expression):
        import pyarrow.dataset as pads

        dataset = pads.dataset(_numbered(rows))
        kept = dataset.to_table(columns=[ROW], filter=filter, use_threads=False)
        return _mask(rows.num_rows, kept.column(0))
    filter = row_condition(rows.schema, filter)
    out = filter.rows.run(rows, what=f"filter {filter.rows.text!r}")
    return _mask(rows.num_rows, out.column(ROW))


def update_plan(schema: pa.Schema, set: Mapping[str, str], *, what: str) -> EnginePlan | None:
    """New values as SQL expressions of columns of ``schema`` (the public form of ``update``)
    as the engine plans an ``UPDATE`` with that ``SET`` (None: nothing changes)."""
    return _evaluated(lambda engine: engine.update_values(schema, set), what)


def merge_plan(target: pa.Schema, source: pa.Schema, merge: Any, *, what: str) -> Any:
    """A MERGE's clauses (``merge.MergeSql``) as the engine plans them over the target's
    and the source's columns (a ``merge.MergePlan``)."""
    return _evaluated(lambda engine: engine.merge_plan(target, source, merge), what)
