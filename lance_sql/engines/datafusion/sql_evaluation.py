"""DataFusion as the SQL engine service of the lower layers (:mod:`udfs.sql_engine`).

Partition expressions, row-operation filters and values, scan residuals and
literal coercion are evaluated by DataFusion so they mean what they mean in a
query; those layers never import DataFusion. Inside DataFusion's runtime
(:func:`inside_datafusion`) a call runs on a thread of its own: a nested tokio
runtime would panic.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from fractions import Fraction
from functools import lru_cache
from typing import Any, TypeVar

import datafusion
import pyarrow as pa

from lance_sql.engines.datafusion.functions import FunctionArityError
from lance_sql.engines.datafusion.sql_dispatch import dispatch_sql, scratch_context
from lance_sql.engines.datafusion.sql_rewrite import register_rows, registered
from lance_sql.errors import PlanningError, first_line
from lance_sql.tables.namespace.sql_eval import quote
from udfs.errors import ExpressionError, UnsupportedTypeError
from udfs.expression import ALLOWED_FUNCTIONS
from udfs.sql_engine import register_sql_engine

#: units per second of Arrow's (and DataFusion's display of) time units
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "µs": 1_000_000, "ns": 1_000_000_000}
_local = threading.local()
_LOCK = threading.RLock()  # the shared coercion SessionContext: register + plan under a lock


_R = TypeVar("_R")
_OUTSIDE = concurrent.futures.ThreadPoolExecutor(
    max_workers=max(2, os.cpu_count() or 1), thread_name_prefix="lance-sql-engine"
)


@contextlib.contextmanager
def inside_datafusion() -> Iterator[None]:
    """Mark this thread as running inside a DataFusion callback (see the module doc)."""
    depth = getattr(_local, "inside", 0)
    _local.inside = depth + 1
    try:
        yield
    finally:
        _local.inside = depth


def _outside(fn: Callable[..., _R], *args: Any) -> _R:
    """``fn(*args)``, on another thread when this one is inside a DataFusion callback."""
    if not getattr(_local, "inside", 0):
        return fn(*args)
    return _OUTSIDE.submit(fn, *args).result()


class _Undecidable(Exception):
    pass


_TABLE = "__lance_expression_input"

_LEAVES = {"Column", "Literal"}
_NODES = {
    "Alias", "BinaryExpr", "Not", "IsNull", "IsNotNull", "IsTrue", "IsFalse", "IsUnknown",
    "IsNotTrue", "IsNotFalse", "IsNotUnknown", "Negative", "Between", "Case", "Cast", "TryCast",
    "Like", "SimilarTo", "RLike", "InList", "ScalarFunction",
}  # fmt: skip


def _context() -> Any:
    ctx = getattr(_local, "ctx", None)
    if ctx is None:
        ctx = datafusion.SessionContext()
        _local.ctx = ctx
    return ctx


def _check_tree(expr: Any, expression: str) -> None:
    kind = expr.variant_name()
    if kind in _LEAVES:
        return
    if kind not in _NODES:
        raise ExpressionError(
            expression, f"{kind} is not allowed in a partition expression", part=kind
        )
    if kind == "ScalarFunction":
        name = expr.rex_call_operator()
        if not (name in ALLOWED_FUNCTIONS or name.startswith("__lance_murmur3")):
            raise ExpressionError(
                expression,
                f"function {name}() is not allowed: only deterministic, stateless functions "
                "may compute partition values",
                part=name,
            )
    for child in expr.rex_call_operands():
        _check_tree(child, expression)


class DataFusionSqlEngine:
    """:class:`udfs.sql_engine.SqlEngine` over DataFusion."""

    def query(self, tables: Mapping[str, pa.Table], sql: str) -> pa.Table:
        return _outside(self._query, tables, sql)

    def _query(self, tables: Mapping[str, pa.Table], sql: str) -> pa.Table:
        ctx = _context()
        with registered(ctx, tables):
            return ctx.sql(dispatch_sql(ctx, sql)).to_arrow_table()

    def partition_expression(self, expression: str, table: pa.Table, result: str) -> pa.Table:
        return _outside(self._partition_expression, expression, table, result)

    def _partition_expression(self, expression: str, table: pa.Table, result: str) -> pa.Table:
        ctx = _context()
        register_rows(ctx, _TABLE, table)
        prefix = "SELECT "
        suffix = f"\nAS {result} FROM {_TABLE}"
        try:
            statement = dispatch_sql(ctx, prefix + expression + suffix)
        except (UnsupportedTypeError, FunctionArityError) as exc:
            raise ExpressionError(expression, str(exc), part="murmur3") from exc
        rewritten = statement[len(prefix) : len(statement) - len(suffix)]
        base = ctx.table(_TABLE)
        try:
            expr = ctx.parse_sql_expr(rewritten, base.logical_plan().to_variant().schema())
        except Exception as exc:
            raise ExpressionError(expression, first_line(exc)) from exc
        _check_tree(expr, expression)
        try:
            return base.select(expr.alias(result)).to_arrow_table()
        except Exception as exc:
            raise ExpressionError(expression, first_line(exc)) from exc

    def run_plan(self, plan: Any, rows: pa.Table) -> pa.Table:
        """Run a :class:`.dml_plan.RowsPlan` (DataFusion expressions) over ``rows`` (a table,
        or the tables of a join by their aliases)."""
        return _outside(self._run_plan, plan, rows)

    def _run_plan(self, plan: Any, rows: pa.Table | Mapping[str, pa.Table]) -> pa.Table:
        ctx = _context()
        tables = {plan.table: rows} if isinstance(rows, pa.Table) else dict(rows)
        names = {alias: f"__lance_sql_rows_{i}" for i, alias in enumerate(tables)}
        with registered(ctx, {names[alias]: table for alias, table in tables.items()}):
            frames = {alias: ctx.table(names[alias]).alias(quote(alias)) for alias in tables}
            df = frames[plan.table]
            if plan.right is not None:
                df = df.join_on(frames[plan.right], plan.on, how="inner")
            if plan.where is not None:
                df = df.filter(plan.where)
            return df.select(*plan.select).to_arrow_table()

    @staticmethod
    @lru_cache(maxsize=256)
    def row_condition(schema: pa.Schema, where: str) -> Any:
        """SQL filter text over ``schema`` as a row operation's condition (a
        :class:`~lance_sql.tables.namespace.sql_eval.RowCondition`), as DataFusion plans it;
        cached (a filter is planned once, not per batch)."""
        from lance_sql.engines.datafusion.dml_plan import text_condition

        return _outside(lambda: text_condition(_context(), schema, where))

    def update_values(self, schema: pa.Schema, set: Mapping[str, str]) -> Any:
        """SQL expressions of columns of ``schema`` as an UPDATE's new values (an
        :class:`~lance_sql.tables.namespace.sql_eval.EnginePlan`; None: nothing changes)."""
        from lance_sql.engines.datafusion.dml_plan import text_values

        return _outside(lambda: text_values(_context(), schema, set))

    def merge_plan(self, target: pa.Schema, source: pa.Schema, merge: Any) -> Any:
        """A MERGE's clauses (``tables.namespace.merge.MergeSql``) as DataFusion plans them
        over the target's and the source's rows (a ``MergePlan``)."""
        from lance_sql.engines.datafusion.dml_plan import plan_merge

        return _outside(lambda: plan_merge(_context(), target, source, merge))

    def comparison_value(self, target: pa.DataType, literal_sql: str) -> Fraction | None:
        try:
            return _comparison_value(target, literal_sql)
        except _Undecidable:
            return None


_TABLES: dict[str, str] = {}


@lru_cache(maxsize=8192)
def _comparison_value(target: pa.DataType, literal_sql: str) -> Fraction:
    """:func:`_folded_value`, cached (a hit never leaves the calling thread)."""
    return _outside(_folded_value, target, literal_sql)


def _folded_value(target: pa.DataType, literal_sql: str) -> Fraction:
    """The exact value DataFusion compares a ``target``-typed column with, in its storage units.

    DataFusion's temporal literal coercion has many special cases, so this plans
    ``c = <literal>`` over an empty table and reads the folded literal back.
    """
    ctx = scratch_context()
    key = str(target)
    with _LOCK:
        name = _TABLES.get(key)
        if name is None:
            name = f"__lance_sql_coerce_{len(_TABLES)}"
            batch = pa.record_batch([pa.array([], target)], names=["c"])
            ctx.register_record_batches(name, [[batch]])
            _TABLES[key] = name
        try:
            sql = f"SELECT c FROM {name} WHERE c = {literal_sql}"
            plan = ctx.sql(sql).optimized_logical_plan()
        except Exception as exc:  # DataFusion raises plain Exceptions
            raise PlanningError(
                f"cannot compare {target} column with {literal_sql}: {exc}"
            ) from exc
    node = plan.to_variant()
    while type(node).__name__ != "Filter":
        inputs = node.input()
        if not inputs:
            raise _Undecidable
        node = inputs[0].to_variant()
    pred = node.predicate().to_variant()
    if type(pred).__name__ != "BinaryExpr":
        raise _Undecidable
    left, right = pred.left(), pred.right()
    if right.variant_name() != "Literal":
        raise _Undecidable
    lit = right.to_variant()
    dtype = lit.data_type()
    if dtype.startswith("Timestamp"):
        raw, _tz = lit.value_timestamp()
        unit = dtype.split("(")[1].split(",")[0].split(")")[0].strip()
        per_second = _PER_SECOND[unit]
    elif dtype == "Date32":
        raw, per_second = lit.value_date32(), None
    elif dtype.startswith("Decimal128") and pa.types.is_decimal(target):
        return _decimal_comparison_value(lit, left, target)
    else:
        raise _Undecidable
    if raw is None:
        raise _Undecidable
    if left.variant_name() == "Column":
        if per_second is None:
            return Fraction(int(raw))
        if not pa.types.is_timestamp(target):
            raise _Undecidable
        return Fraction(int(raw) * _PER_SECOND[target.unit], per_second)
    # the column was cast: only date32 -> naive timestamp compares exactly in days
    if pa.types.is_date32(target) and per_second is not None:
        return Fraction(int(raw), per_second * 86_400)
    raise _Undecidable


def _decimal_comparison_value(lit: object, left: object, target: pa.DataType) -> Fraction:
    """The decimal literal of a folded ``c = lit`` in ``target``'s unscaled units, exactly.

    Widening a decimal never rounds, so a literal folded into the column's type or
    compared with the column widened is exact; a narrowing cast is undecidable.
    """
    raw, _precision, lit_scale = lit.value_decimal128()  # type: ignore[attr-defined]
    if raw is None:
        raise _Undecidable
    kind = left.variant_name()  # type: ignore[attr-defined]
    if kind not in ("Column", "Cast", "TryCast"):
        raise _Undecidable
    if kind != "Column" and lit_scale < target.scale:
        raise _Undecidable
    return Fraction(int(raw) * 10**target.scale, 10**lit_scale)


ENGINE = DataFusionSqlEngine()
register_sql_engine(ENGINE)
