"""``lance_sql.SessionContext``: DataFusion's SessionContext that also knows Lance tables.

A thin subclass that registers lance-sql's SQL functions, Lance datasets and
namespaces, and returns :class:`~.dataframe.LanceDataFrame` s, whose plans get
lance-sql's plan passes each time they run.
"""

from __future__ import annotations

import itertools
import os
import re
import threading
from collections.abc import Mapping
from typing import Any

import datafusion
import pyarrow as pa
from datafusion import DataFrame, RuntimeEnvBuilder, SessionConfig, SQLOptions

from lance_sql.engines.datafusion import dml, dml_create, functions, search_sql
from lance_sql.engines.datafusion.dataframe import LanceDataFrame
from lance_sql.engines.datafusion.lance_provider import (
    LanceDatasetTable,
    catalog_name,
    find_registered,
)
from lance_sql.engines.datafusion.namespace_provider import NamespaceTable
from lance_sql.engines.datafusion.namespace_register import register_namespace
from lance_sql.engines.datafusion.plan_rewrite import rewrite
from lance_sql.engines.datafusion.provider import ExplainAnnotation, capture_scans, explain_rows
from lance_sql.engines.datafusion.session_defaults import default_config
from lance_sql.engines.datafusion.sql_dispatch import dispatch_sql
from lance_sql.engines.datafusion.sql_rewrite import query_scope
from lance_sql.engines.datafusion.typed_calls import TYPED_FUNCTIONS, TypedFunction
from lance_sql.errors import PlanningError
from lance_sql.tables.lance_table import LanceTable
from lance_sql.tables.scan_options import checked_scan_options

_EXPLAIN = re.compile(dml_create.LEADING_COMMENTS + r"explain\b", re.IGNORECASE | re.DOTALL)
#: the options of an EXPLAIN statement (``EXPLAIN ANALYZE VERBOSE FORMAT indent``), verbatim
_EXPLAIN_OPTIONS = re.compile(
    dml_create.LEADING_COMMENTS + r"(explain(?:\s+(?:analyze|verbose|format\s+\w+))*)\s",
    re.IGNORECASE | re.DOTALL,
)
_EXPLAIN_VIEWS = itertools.count(1)
_SET_SPJ = re.compile(
    r"^\s*set\s+lance\.spj\s*(?:=|\bto\b)\s*(\S+?)\s*;?\s*$", re.IGNORECASE | re.DOTALL
)
_SET_PARTITIONS = re.compile(r"^\s*set\b.*target_partitions", re.IGNORECASE | re.DOTALL)
_SET = re.compile(r"^\s*set\b", re.IGNORECASE)


class SessionContext(datafusion.SessionContext):
    """A ``datafusion.SessionContext`` with Lance tables and lance-sql SQL functions."""

    def __init__(
        self,
        config: SessionConfig | None = None,
        runtime: RuntimeEnvBuilder | None = None,
        *,
        spj: bool = True,
    ) -> None:
        self._lance_lock = threading.RLock()
        self._lance_tables: dict[str, LanceDatasetTable] = {}
        self._target_partitions: int | None = None
        #: partitioned namespaces registered here, for the storage-partitioned-join pass
        self._lance_namespaces: dict[str, NamespaceTable] = {}
        #: whether joins of two compatible namespaces run group by group (see :meth:`set_spj`);
        #: on by default, as in Spark 3.4+: equal results, faster and less memory than
        #: DataFusion's own hash join on the appendix F benchmark (docs/benchmarks/spj.md)
        self.spj_enabled = spj
        if config is None:  # batch_size 131072: fewer Python UDF calls (see session_defaults)
            config = default_config()
        super().__init__(config, runtime)
        functions.register_functions(self)
        search_sql.register(self)  # lance_search(...)

    # -- Lance tables --------------------------------------------------------------------
    def register_lance(
        self,
        name: str,
        uri: str | os.PathLike[str],
        *,
        version: int | None = None,
        tag: str | None = None,
        storage_options: Mapping[str, str] | None = None,
        scan_options: Mapping[str, Any] | None = None,
    ) -> None:
        """Register the Lance dataset at ``uri`` as table ``name``.

        Without ``version``/``tag`` every query reads the latest version as of
        when it is planned; with one, that version forever. The table's schema
        is the one of the version seen now. Raises ``NotFoundError`` (no
        dataset, version or tag), ``FormatError`` (not a Lance dataset, damaged
        manifest) or ``UnsupportedFeatureError`` (unknown reader feature flags),
        each naming ``uri``. Registering a name again replaces the table.
        ``scan_options``: pylance scanner settings of its scans (docs/scan_options.md).
        """
        table = LanceTable.open(
            uri,
            version=version,
            tag=tag,
            storage_options=storage_options,
            scan_options=scan_options,
        )
        provider = LanceDatasetTable(table, name=name, partitions=self._partitions())
        with self._lance_lock:
            if self.table_exist(name):
                super().deregister_table(name)
            self.register_table(name, provider)
            self._lance_tables[catalog_name(name)] = provider

    def register_namespace(
        self,
        name: str,
        root: str | os.PathLike[str],
        *,
        version: int | None = None,
        storage_options: Mapping[str, str] | None = None,
        prune: Any = "planner",
        scan_options: Mapping[str, Any] | None = None,
    ) -> NamespaceTable | list[str]:
        """Register the directory namespace at ``root``.

        A partitioned namespace becomes one table ``name`` with the namespace
        schema; queries prune partitions through the planner (``prune=None``
        reads every partition table). A plain directory namespace (no partition
        spec) becomes schema ``name`` with one table per namespace table,
        queried as ``name.table``. Without ``version`` each query reads the
        latest ``__manifest``; with one, that version forever. ``scan_options``:
        pylance scanner settings of every partition table's scans (docs/scan_options.md).
        """
        options = checked_scan_options(scan_options, f"namespace {name!r}")
        registered = register_namespace(
            self,
            name,
            root,
            version=version,
            storage_options=storage_options,
            prune=prune,
            partitions=self._partitions(),
        )
        if isinstance(registered, NamespaceTable):
            registered.scan_options = options  # before any scan builds its units
            with self._lance_lock:
                self._lance_namespaces[catalog_name(name)] = registered
        return registered

    def set_spj(self, enabled: bool) -> None:
        """Turn storage-partitioned joins of registered namespaces on or off.

        SQL: ``SET lance.spj = true`` / ``false`` (intercepted here: DataFusion
        refuses configuration keys outside its own namespaces).
        """
        self.spj_enabled = bool(enabled)

    def registered_namespaces(self) -> dict[str, NamespaceTable]:
        """The partitioned namespaces registered here, by the name DataFusion's catalog
        gives them (``"MyT"`` registered is ``myt``, as ``SELECT ... FROM MyT`` reads it)."""
        with self._lance_lock:
            return dict(self._lance_namespaces)

    def lance_table(self, name: str) -> LanceDatasetTable:
        """The registered Lance table ``name`` (its ``metrics`` count the rows scans read)."""
        with self._lance_lock:
            provider = find_registered(self._lance_tables, name)
        if provider is None:
            raise KeyError(f"no Lance table named {name!r} is registered")
        return provider

    def register_table(self, name: str, table: Any) -> None:
        """DataFusion's ``register_table``; a Lance table of that name is forgotten."""
        with self._lance_lock:
            self._lance_tables.pop(catalog_name(name), None)
            if getattr(self, "_lance_namespaces", None) is not None and not isinstance(
                table, NamespaceTable
            ):
                self._lance_namespaces.pop(catalog_name(name), None)
        super().register_table(name, table)

    def deregister_table(self, name: str) -> None:
        with self._lance_lock:
            self._lance_tables.pop(catalog_name(name), None)
            self._lance_namespaces.pop(catalog_name(name), None)
        super().deregister_table(name)

    def _partitions(self) -> int:
        """DataFusion's ``target_partitions`` (no getter in datafusion-python: measure it)."""
        if self._target_partitions is None:
            self._target_partitions = _detect_target_partitions(self)
        return self._target_partitions

    # -- SQL -----------------------------------------------------------------------------
    def sql(
        self,
        query: str,
        options: SQLOptions | None = None,
        param_values: dict[str, Any] | None = None,
        **named_params: Any,
    ) -> DataFrame:
        """DataFusion's ``sql``, returning a :class:`LanceDataFrame` (see the module doc).

        ``EXPLAIN`` statements are planned at once (``EXPLAIN ANALYZE`` runs
        once) and show the plan lance-sql runs. ``SET lance.spj = true|false``
        turns storage-partitioned joins on or off for this context.
        """
        search_sql.begin_statement()
        setting = _SET_SPJ.match(query)
        if setting:
            self.set_spj(_spj_value(setting.group(1)))
            return self._frame(pa.table({}))
        created = dml_create.create_statement(self, query)  # CREATE TABLE ... PARTITIONED BY
        if created is not None:
            return created
        with query_scope(self):
            try:
                df = super().sql(
                    dispatch_sql(self, query),
                    options=options,
                    param_values=param_values,
                    **named_params,
                )
            except Exception as exc:  # a DML statement's planning error, typed
                typed = dml.typed_planning_error(query, exc)
                typed = typed or search_sql.typed_planning_error(query, exc)
                if typed is None:
                    raise
                raise typed from exc
        statement = dml.dml_frame(self, df, query)  # INSERT/DELETE/UPDATE/MERGE on Lance tables
        if statement is not None:
            return statement
        if _SET_PARTITIONS.match(query):
            self._refresh_partitions()
        if _SET.match(query):  # (the join threshold, or SHOW turned on): read it again
            self._join_threshold_rows = None
        if _EXPLAIN.match(query):
            return self._explain(df, query)
        return LanceDataFrame(df, self)

    def udf(self, name: str) -> Any:
        """DataFusion's ``udf``; ``murmur3`` / ``murmur3_multi`` take any type in DataFrames.

        Their calls are typed against the DataFrame they are used in (see
        :mod:`.typed_calls`).
        """
        if name in TYPED_FUNCTIONS:
            return TypedFunction(self, name)
        return super().udf(name)

    def table(self, name: str) -> DataFrame:
        """DataFusion's ``table``, returning a :class:`LanceDataFrame`."""
        return LanceDataFrame(super().table(name), self)

    def _explain(self, df: DataFrame, query: str) -> DataFrame:
        """An EXPLAIN statement's result for the plan lance-sql runs."""
        plan = df.logical_plan()
        node = plan.to_variant()
        inner = self.create_dataframe_from_logical_plan(plan.inputs()[0])
        statement = dml.explain_dml(self, inner)  # DML on a lance-sql table: what runs
        if statement is not None:
            return self._frame(statement)
        options = _EXPLAIN_OPTIONS.match(query)
        words = options.group(1) if options else None
        # ANALYZE, VERBOSE and FORMAT are DataFusion's own outputs (of the rewritten plan)
        own = (
            type(node).__name__ == "Analyze" or node.verbose() or "format" in (words or "").lower()
        )
        return self._frame(self.explain_table(inner, df if own else None, words if own else None))

    def explain_table(
        self,
        inner: DataFrame,
        statement: DataFrame | None = None,
        options: str | None = None,
    ) -> pa.Table:
        """EXPLAIN of ``inner`` as lance-sql runs it, through a view of the rewritten plan
        (``options``: the words of an ``EXPLAIN ANALYZE`` / ``VERBOSE`` ``statement``)."""
        done = rewrite(self, inner)
        with capture_scans() as records:
            if statement is not None and options is not None and done.dataframe is not inner:
                table = self._explain_view(done.dataframe, options)
            elif statement is not None:
                table = statement.to_arrow_table()
                if done.dataframe is not inner:
                    done.reasons.append("this EXPLAIN form shows the plan without it")
            else:
                table = _explain_table(done.dataframe)
        if records and "plan" in table.column_names:
            annotation = ExplainAnnotation(records)
            table = _map_plans(table, lambda p: annotation.annotate(p) if p else p)
        lines = "\n".join(
            [f"storage-partitioned join: not used ({r})" for r in done.reasons]
            + [f"join statistics: {line}" for line in done.join_stats]
            + [f"outer join made inner by the WHERE: {line}" for line in done.outer_joins]
            + [f"transform-term pruning: not used ({r})" for r in done.prune_reasons]
            + search_sql.explain_lines()
        )
        if lines and "plan" in table.column_names and table.num_rows:
            first = table.column("plan")[0].as_py() or ""
            table = _map_plans(table, lambda p: lines + "\n" + p if p == first else p)
        return table

    def _explain_view(self, planned: DataFrame, options: str) -> pa.Table:
        """``{options} SELECT * FROM <a view of planned>``: DataFusion's EXPLAIN of that plan."""
        name = f"__lance_explain_{next(_EXPLAIN_VIEWS)}"
        self.register_view(name, planned)
        try:
            return datafusion.SessionContext.sql(
                self, f"{options} SELECT * FROM {name}"
            ).to_arrow_table()
        finally:
            self.deregister_table(name)

    def _frame(self, table: pa.Table) -> DataFrame:
        """A DataFrame over ``table`` that registers no table name (``from_arrow`` does)."""
        batches = table.combine_chunks().to_batches() or [
            pa.RecordBatch.from_pylist([], schema=table.schema)
        ]
        return self.read_batches(batches)

    def _refresh_partitions(self) -> None:
        self._target_partitions = None
        k = self._partitions()
        with self._lance_lock:
            for provider in self._lance_tables.values():
                provider.partitions = k


def _explain_table(df: DataFrame) -> pa.Table:
    """DataFusion's EXPLAIN output (``plan_type``, ``plan``) for ``df``'s plan."""
    return explain_rows(
        df.optimized_logical_plan().display_indent(), df.execution_plan().display_indent()
    )


def _map_plans(table: pa.Table, fn: Any) -> pa.Table:
    idx = table.column_names.index("plan")
    plans = [fn(p) for p in table.column("plan").to_pylist()]
    return table.set_column(idx, table.schema.field(idx), pa.array(plans, pa.string()))


def _spj_value(text: str) -> bool:
    """The value of ``SET lance.spj = <text>`` (true/false, on/off, 1/0, optionally quoted)."""
    value = text.strip("'\"").lower()
    if value in ("true", "on", "1"):
        return True
    if value in ("false", "off", "0"):
        return False
    raise PlanningError(f"SET lance.spj: expected true or false, got {text!r}")


def _detect_target_partitions(ctx: datafusion.SessionContext) -> int:
    """The partition count DataFusion plans a grouped aggregation with (= target_partitions)."""
    try:
        plan = datafusion.SessionContext.sql(
            ctx, "SELECT x FROM (VALUES (1), (2)) AS t(x) GROUP BY x"
        ).execution_plan()
        return max(1, int(plan.partition_count))
    except Exception:  # a context configured to refuse this still gets a sane default
        return max(1, os.cpu_count() or 1)
