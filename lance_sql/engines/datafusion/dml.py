"""SQL DML on registered tables: INSERT INTO / OVERWRITE, DELETE, UPDATE, MERGE.

DataFusion 55 plans these into a ``Dml`` plan but cannot run one on a Python
table, so :meth:`lance_sql.SessionContext.sql` hands the plan here and gets a
:class:`DmlDataFrame` that runs the row operation each time it is executed,
answering one row ``count`` (UInt64). Routes: docs/engine-notes.md "SQL DML".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from datafusion import DataFrame

from lance_sql.engines.datafusion.dataframe import EXECUTING, LanceDataFrame
from lance_sql.engines.datafusion.dml_plan import row_condition, update_values
from lance_sql.engines.datafusion.dml_struct_check import check_insert_structs
from lance_sql.engines.datafusion.dml_target import (
    registered_target,
    source_rows,
    writable_namespace,
)
from lance_sql.engines.datafusion.errors import typed_errors
from lance_sql.engines.datafusion.provider import explain_rows
from lance_sql.engines.datafusion.sql_tokens import sqlglot_tokens
from lance_sql.errors import (
    LanceSqlError,
    NotFoundError,
    SchemaMismatchError,
    UnsupportedFeatureError,
    datafusion_error_kinds,
    first_line,
)

#: DataFusion's DML result: one row, ``count`` UInt64 not null
COUNT_SCHEMA = pa.schema([pa.field("count", pa.uint64(), nullable=False)])

_DML_KEYWORDS = ("INSERT", "DELETE", "UPDATE", "MERGE")


class DmlDataFrame(DataFrame):
    """A DML statement on a lance-sql table: runs its action each time it is executed.

    ``logical_plan()`` shows DataFusion's ``Dml`` plan; every executing method
    (``collect``, ``show``, ``to_arrow_table``, ``count``, ...) first performs
    the statement, then answers over its one-row ``count`` result.
    """

    def __init__(self, df: DataFrame, ctx: Any, action: Callable[[], int], what: str) -> None:
        super().__init__(df.df)
        self._lance_ctx = ctx
        self._action = action
        self.statement = what

    def run(self) -> int:
        """Perform the statement once; returns the rows affected."""
        with typed_errors():
            return int(self._action())

    def _result(self) -> DataFrame:
        n = self.run()
        table = pa.Table.from_arrays([pa.array([n], pa.uint64())], schema=COUNT_SCHEMA)
        return self._lance_ctx._frame(table)


def _executing(name: str) -> Any:
    base = getattr(DataFrame, name)

    @functools.wraps(base)
    def run(self: DmlDataFrame, *args: Any, **kwargs: Any) -> Any:
        return base(self._result(), *args, **kwargs)

    return run


for _name in EXECUTING:
    if hasattr(DataFrame, _name):
        setattr(DmlDataFrame, _name, _executing(_name))


# -- dispatch ------------------------------------------------------------------------------
def _op_name(variant: Any) -> str:
    try:
        return str(variant.op()).rsplit(".", 1)[-1].lower()
    except NotImplementedError as exc:  # datafusion-python 55 does not expose MergeInto's op
        if "MergeInto" in str(exc):
            return "mergeinto"
        raise


@dataclass(frozen=True)
class _DmlTarget:
    """A DML statement's plan and the lance-sql table it writes."""

    plan: Any
    name: str
    kind: str  # "lance" (a plain dataset) or "namespace"
    table: Any
    op: str


def _dml_target(ctx: Any, df: DataFrame) -> _DmlTarget | None:
    """``df``'s DML statement if its target is a lance-sql table, else None."""
    plan = df.logical_plan()
    variant = plan.to_variant()
    if type(variant).__name__ != "DmlStatement":
        return None
    name = str(variant.table_name())
    short = name.split(".")[-1]
    if name not in (short, f"public.{short}", f"datafusion.public.{short}"):
        return None
    target = registered_target(ctx, short)
    if target is None:
        return None
    return _DmlTarget(plan, name, target[0], target[1], _op_name(variant))


def dml_frame(ctx: Any, df: DataFrame, query: str) -> DataFrame | None:
    """The DataFrame running ``df``'s DML statement on a lance-sql table, else None."""
    found = _dml_target(ctx, df)
    if found is None:
        return None
    what, action, _ = _statement(ctx, found, query)
    return DmlDataFrame(df, ctx, action, what)


def explain_dml(ctx: Any, df: DataFrame) -> pa.Table | None:
    """EXPLAIN of a DML statement on a lance-sql table (``LanceDml: ...`` line), else None."""
    found = _dml_target(ctx, df)
    if found is None:
        return None
    return explain_rows(found.plan.display_indent(), _statement(ctx, found, None)[2])


def _statement(ctx: Any, found: _DmlTarget, query: str | None) -> tuple[str, Any, str]:
    """The one table of DML ops: (statement, action, EXPLAIN line); ``query`` None: EXPLAIN."""
    table, name, op = found.table, found.name, found.op
    source = found.plan.inputs()[0]
    if found.kind == "lance":
        return _plain_lance(ctx, name, op, table.table, source)
    line = f"LanceDml: op={op} table={name} namespace={table.root} route="
    if op == "mergeinto":
        from lance_sql.engines.datafusion.dml_merge import merge_action

        action = None if query is None else merge_action(ctx, table, name, found.plan, query)
        route = "MERGE clauses evaluated by DataFusion per candidate partition table"
        return "MERGE", action, line + route
    if op in ("insertinto", "append"):
        route = "ns.append(<input rows>)"
        return "INSERT", lambda: _insert(ctx, table, name, source, False), line + route
    if op == "overwrite":
        route = "ns.overwrite(<input rows>, partitions='dynamic')"
        return "OVERWRITE", lambda: _insert(ctx, table, name, source, True), line + route
    if op == "delete":
        where = row_condition(ctx, source, table, name)
        route = f"ns.delete(filter={_shown(where)})"
        return "DELETE", lambda: writable_namespace(table, name).delete(where), line + route
    if op == "update":
        values, changed = update_values(ctx, source, table.schema, name)
        where = row_condition(ctx, source, table, name)
        route = f"ns.update(set={changed!r}, where={_shown(where)})"
        action = lambda: _update(ctx, table, name, values, changed, where, source)  # noqa: E731
        return "UPDATE", action, line + route
    raise UnsupportedFeatureError(f"{op} statements on namespace {name!r} are not supported")


def _shown(where: Any) -> str:
    return "TRUE" if where is None else str(where)  # DataFusion's display of it


def _plain_lance(ctx: Any, name: str, op: str, table: Any, source: Any) -> tuple[str, Any, str]:
    """INSERT INTO / INSERT OVERWRITE on a Lance dataset: one pylance write (one commit)."""
    if op not in ("insertinto", "append", "overwrite"):
        raise UnsupportedFeatureError(
            f"{op.upper()} on Lance dataset {name!r}: only INSERT INTO and INSERT OVERWRITE run "
            "on a plain Lance dataset (register_lance); DELETE, UPDATE and MERGE need a "
            "partitioned namespace (register_namespace)"
        )
    if not table.follow_latest:
        raise UnsupportedFeatureError(
            f"Lance dataset {name!r} is registered at a fixed version or tag; register it "
            "without one to write"
        )
    mode = "overwrite" if op == "overwrite" else "append"

    def action() -> int:
        import lance

        rows = _insert_rows(ctx, source, table.schema, name)
        lance.write_dataset(rows, table.uri, mode=mode, storage_options=table.storage_options)
        return rows.num_rows

    return "INSERT", action, f"LanceDml: op={op} table={name} uri={table.uri} route=write {mode}"


def _update(
    ctx: Any,
    table: Any,
    name: str,
    values: Any,
    changed: list[str],
    where: Any,
    source: Any,
) -> int:
    from lance_sql.tables.namespace.sql_eval import values_fit

    if values is None:  # every column set to itself: nothing changes, the matched rows count
        writable_namespace(table, name)  # refuse pinned registrations as for any UPDATE
        return int(LanceDataFrame(ctx.create_dataframe_from_logical_plan(source), ctx).count())
    with values_fit(f"UPDATE of {name!r}", sorted(changed)):
        return int(writable_namespace(table, name).update(values, where))


# -- INSERT -----------------------------------------------------------------------------------
def _insert(ctx: Any, table: Any, name: str, source: Any, overwrite: bool) -> int:
    ns = writable_namespace(table, name)
    rows = _insert_rows(ctx, source, ns.schema, name)
    if overwrite:
        ns.overwrite(rows, partitions="dynamic")
    elif rows.num_rows:
        ns.append(rows)
    return rows.num_rows


def _insert_rows(ctx: Any, source: Any, schema: pa.Schema, name: str) -> pa.Table:
    """An INSERT's input rows (positional, cast by DataFusion) checked by the schema rule."""
    from lance_sql.tables.namespace.schema_rule import conform

    what = f"INSERT into {name!r}"
    check_insert_structs(ctx, source, schema, name)
    rows = source_rows(ctx, source, what)
    if rows.num_columns != len(schema):
        raise SchemaMismatchError(
            f"{what}: {rows.num_columns} columns given, the table has {len(schema)}"
        )
    rows = rows.rename_columns(schema.names)  # the Dml input is positional
    batches = [conform(b, schema, source=what) for b in rows.to_batches()]
    return pa.Table.from_batches(batches, schema=schema)


# -- errors DataFusion raises while planning a DML statement ----------------------------------
def statement_keyword(query: str) -> str | None:
    """The first keyword of ``query`` (upper case), comments skipped; None if unparseable."""
    tokens = sqlglot_tokens(query)
    return tokens[0].text.upper() if tokens else None


def _target_name(query: str) -> str | None:
    """The table a DML statement writes: its first name token (keywords have their own)."""
    from sqlglot.tokens import TokenType

    tokens = sqlglot_tokens(query)
    names = [t.text for t in tokens if t.token_type in (TokenType.VAR, TokenType.IDENTIFIER)]
    return names[0] if names else None


def typed_planning_error(query: str, exc: Exception) -> LanceSqlError | None:
    """DataFusion's planning error of a DML statement as a typed error naming the table."""
    keyword = statement_keyword(query)
    if keyword not in _DML_KEYWORDS:
        return None
    kinds = datafusion_error_kinds(exc)
    first = first_line(exc)
    if "not_found" in kinds:
        return NotFoundError(f"{first} (the target or a source of the statement)")
    if "partitioned_insert" in kinds:
        return UnsupportedFeatureError(
            f"INSERT ... PARTITION (...) into {_target_name(query)!r}: static partition values "
            "are not supported (DataFusion 55's planner refuses them); give the partition "
            "columns in the rows (INSERT OVERWRITE replaces the partitions they fall in)"
        )
    if kinds & {"schema", "cast"}:
        hint = ""
        if keyword == "UPDATE" and "No field named" in str(exc) and _SET_FIELD.search(query):
            hint = (
                "; a field inside a struct cannot be SET on its own: SET the whole struct "
                "(e.g. s = named_struct('a', 1, 'b', s['b']))"
            )
        if hint:
            first = first.rstrip(".")
        return SchemaMismatchError(f"{keyword} of {_target_name(query)!r}: {first}{hint}")
    return None


#: ``SET s.a =`` (DataFusion 55 reads ``s.a`` as a column ``a`` of table ``s``)
_SET_FIELD = re.compile(r"\bSET\s+[\w\"]+\s*\.\s*[\w\"]+\s*=|,\s*[\w\"]+\.[\w\"]+\s*=", re.I)
