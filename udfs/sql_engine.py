"""The SQL engine service: how code below the engine adapter evaluates SQL over Arrow data.

Partition expressions, row-operation filters and literal coercion must mean what they mean
in a query, so the query engine evaluates them; layers below it call :func:`sql_engine`.
``import lance_sql`` registers a loader for the DataFusion implementation. Imports nothing heavy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from fractions import Fraction


class SqlEngine(Protocol):
    def query(self, tables: Mapping[str, Any], sql: str) -> Any:
        """Run ``sql`` over the Arrow ``tables`` registered under their names; one
        ``pyarrow.Table``. The engine's own errors propagate as raised."""
        ...

    def run_plan(self, plan: Any, rows: Any) -> Any:
        """Run a plan the engine made over the Arrow table ``rows`` (over a join: a mapping
        of the joined tables by name); one ``pyarrow.Table``."""
        ...

    def row_condition(self, schema: Any, where: str) -> Any:
        """SQL filter text over the Arrow ``schema`` as a row operation's condition
        (``lance_sql.tables.namespace.sql_eval.RowCondition``), planned by the engine."""
        ...

    def update_values(self, schema: Any, set: Mapping[str, str]) -> Any:
        """SQL expressions of columns of the Arrow ``schema`` as the new values an UPDATE
        with that SET computes (``sql_eval.EnginePlan``; None: every column set to itself)."""
        ...

    def merge_plan(self, target: Any, source: Any, merge: Any) -> Any:
        """A MERGE's clauses (``lance_sql.tables.namespace.merge.MergeSql``: SQL texts) as
        the engine plans them over the Arrow schemas of the target's and the source's rows
        (a ``merge.MergePlan``, whose plans :meth:`run_plan` runs)."""
        ...

    def partition_expression(self, expression: str, table: Any, result: str) -> Any:
        """Evaluate a spec partition expression over ``table``'s columns, checked to be
        deterministic and stateless; a one-column table named ``result``. Raises
        :class:`udfs.ExpressionError` naming the expression and the part at fault."""
        ...

    def comparison_value(self, target: Any, literal_sql: str) -> Fraction | None:
        """The exact value the engine compares a ``target``-typed column with for
        ``c = <literal_sql>``, in the column's storage units; ``None`` when that cannot
        be read exactly. Raises ``lance_sql.PlanningError`` when the engine refuses."""
        ...


class NoSqlEngineError(RuntimeError):
    """No SQL engine is registered (``udfs`` used without ``lance_sql``)."""


_ENGINE: SqlEngine | None = None
_LOADER: Callable[[], SqlEngine] | None = None


def register_sql_engine(engine: SqlEngine) -> None:
    global _ENGINE
    _ENGINE = engine


def register_sql_engine_loader(loader: Callable[[], SqlEngine]) -> None:
    """``loader`` is called once, on the first :func:`sql_engine` call, if no engine is set."""
    global _LOADER
    _LOADER = loader


def sql_engine() -> SqlEngine:
    global _ENGINE
    if _ENGINE is None and _LOADER is not None:
        _ENGINE = _LOADER()
    if _ENGINE is None:
        raise NoSqlEngineError(
            "evaluating SQL needs an engine: `import lance_sql` registers DataFusion "
            "(or call udfs.sql_engine.register_sql_engine)"
        )
    return _ENGINE
