"""The ``lance_ns`` Python data source: partition-pruned reads of a partitioned namespace.

``load()`` pins the ``__manifest`` version; pruning and packing run once per query and
each input partition carries its scan units, so a task never opens ``__manifest``.
Pushed filters are taken only where Spark scopes read plans to one scan
(:func:`lance_sql.engines.spark.scan_scoped_pushdown`, docs/spark.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from lance_sql.engines.spark.filters import split
from lance_sql.engines.spark.options import (
    _root,
    int_option,
    open_namespace,
    storage_options,
)
from lance_sql.engines.spark.paths import normalize_root
from lance_sql.engines.spark.read_packing import Packing, pack_units
from lance_sql.engines.spark.types import spark_struct, spark_target_schema, to_spark_batch
from lance_sql.errors import LanceSqlError, SchemaMismatchError

NAME = "lance_ns"


def schema_from_metadata(options: Mapping[str, str]) -> tuple[pa.Schema, int]:
    """(namespace schema, ``__manifest`` version) from ``__manifest``'s manifest alone.

    No pylance import (it imports pandas), so the worker running ``schema()`` stays small;
    properties as ``root_properties`` reads them (table metadata over schema metadata).
    """
    from lance_sql.format.metadata import open_metadata
    from lance_sql.tables.blob_columns import read_schema
    from lance_sql.tables.namespace.layout import manifest_uri
    from lance_sql.tables.namespace.properties import DATA_STORAGE_VERSION_KEY, parse_properties

    md = open_metadata(
        manifest_uri(_root(options)),
        int_option(options, "version"),
        storage_options=storage_options(options),
    )
    properties = {
        k.decode("utf-8", "replace") if isinstance(k, bytes) else k: v.decode("utf-8", "replace")
        if isinstance(v, bytes)
        else v
        for k, v in md.schema_metadata.items()
    }
    properties.update(md.table_metadata)
    schema, _ = parse_properties(properties)  # blob columns: as their descriptors
    return read_schema(schema, properties.get(DATA_STORAGE_VERSION_KEY)), md.version


def selected_columns(options: Mapping[str, str], schema: pa.Schema) -> pa.Schema:
    """``schema`` restricted to the ``columns`` option (in the option's order)."""
    raw = options.get("columns")
    if raw is None or not raw.strip():
        return schema
    names = [c.strip() for c in raw.split(",") if c.strip()]
    missing = [c for c in names if c not in schema.names]
    if missing:
        raise LanceSqlError(
            f"lance_ns {options.get('path')}: option columns names {missing}, which are not "
            f"namespace columns (columns: {schema.names})"
        )
    return pa.schema([schema.field(c) for c in dict.fromkeys(names)])


class LanceInputPartition(InputPartition):
    """Scan units of one partition table, or of several small ones packed together."""

    def __init__(
        self, units: Sequence[Any], object_ids: Sequence[str], scan_filter: Any = None
    ) -> None:
        super().__init__(list(object_ids))
        self.units = list(units)
        self.scan_filter = scan_filter  # the planned exact filter (ScanFilter) or None


class LanceNamespaceReader(DataSourceReader):
    """Plans (prunes, packs) once per query in ``partitions()``; ``read()`` runs in tasks."""

    def __init__(
        self,
        options: Mapping[str, str],
        ns_schema: pa.Schema,
        spark_schema: Any,
        version: int | None,
        packing: Packing | None = None,
    ) -> None:
        self.options = dict(options)
        self.ns_schema = ns_schema
        self.version = version
        self.columns = [f.name for f in spark_schema.fields]
        missing = [c for c in self.columns if c not in ns_schema.names]
        if missing:
            raise SchemaMismatchError(
                f"lance_ns {self.options.get('path')}: the read schema names {missing}, which "
                f"are not namespace columns (columns: {ns_schema.names})"
            )
        self.target = spark_target_schema(spark_schema)
        self.filter: pc.Expression | None = None
        pruning = self.options.get("pruning", "true").strip().lower()
        if pruning not in ("true", "false"):
            raise LanceSqlError(
                f"lance_ns {self.options.get('path')}: option pruning={pruning!r} is not "
                "true or false"
            )
        self.pruning = pruning == "true"
        self.rows_per_partition = int_option(self.options, "rows_per_partition")
        self.packing = (packing or Packing()).with_options(self.options)

    def plan(self) -> tuple[Any, Any]:
        """(namespace at the pinned version, :class:`~lance_sql.planning.scan_plan.ScanPlan`)."""
        from lance_sql.errors import PlanningError
        from lance_sql.planning.namespace_scan import plan_scan

        ns = open_namespace(self.options, self.version)
        where = self.options.get("where")
        if where is not None and where.strip():
            try:  # without pruning: every partition, the same exact filter
                return ns, plan_scan(ns, where, pruning=self.pruning)
            except PlanningError as e:
                raise LanceSqlError(
                    f"lance_ns {self.options.get('path')}: option where={where!r}: {e}"
                ) from e
        if self.filter is None or not self.pruning:
            return ns, plan_scan(ns)
        try:
            return ns, plan_scan(ns, self.filter)
        except PlanningError:
            return ns, plan_scan(ns)  # the filter is still applied in every scan

    def partitions(self) -> list[InputPartition]:
        ns, plan = self.plan()
        units = plan.scan_units(ns, schema=self.ns_schema) if plan.partitions else []
        groups = pack_units(units, self.packing, self.rows_per_partition)
        sf = plan.scan_filter if self.options.get("where") else None
        if not groups:
            return [LanceInputPartition([], [], sf)]
        return [
            LanceInputPartition(g, list(dict.fromkeys(u.entry.object_id for u in g)), sf)
            for g in groups
        ]

    def read(self, partition: LanceInputPartition) -> Iterator[pa.RecordBatch]:
        from lance_sql.planning.scan_filter import scan_batches

        sf = getattr(partition, "scan_filter", None)
        batches = scan_batches(partition.units, sf, self.ns_schema, self.columns, self.filter)
        for batch in batches:
            if batch.num_rows:
                yield to_spark_batch(batch, self.target)


class LanceNamespacePushdownReader(LanceNamespaceReader):
    """A reader that also takes Spark's pushed filters (a Spark with per-scan read plans).

    A class of its own: pyspark refuses a reader defining ``pushFilters`` while
    ``spark.sql.python.filterPushdown.enabled`` is false.
    """

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:
        """Keep (prune by, and apply in every scan) each filter with an exact pyarrow form;
        return the rest to Spark."""
        self.filter, rest = split(filters, self.ns_schema)
        yield from rest


class LanceNamespaceDataSource(DataSource):
    """``spark.read.format("lance_ns").load(root)`` / ``df.write.format("lance_ns").save(root)``
    (options: docs/spark.md)."""

    push_filters: ClassVar[bool] = False  # safe only where Spark scopes read plans to a scan
    packing: ClassVar[Packing] = Packing()

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        if self.options.get("path"):  # resolved here, on the driver (relative paths)
            self.options["path"] = normalize_root(self.options["path"])

    @classmethod
    def name(cls) -> str:
        return NAME

    def _state(self) -> tuple[pa.Schema, int]:
        """(namespace schema, pinned ``__manifest`` version), read once per DataFrame."""
        state = getattr(self, "_pinned", None)
        if state is None:
            try:
                state = schema_from_metadata(self.options)
            except Exception:  # any doubt: the full open, which raises the typed errors
                ns = open_namespace(self.options)
                state = (ns.schema, ns.manifest_version)
            self._pinned = state
        return state

    def schema(self) -> Any:
        return spark_struct(selected_columns(self.options, self._state()[0]))

    def reader(self, schema: Any) -> DataSourceReader:
        ns_schema, version = self._state()
        cls = LanceNamespacePushdownReader if self.push_filters else LanceNamespaceReader
        return cls(self.options, ns_schema, schema, version, self.packing)

    def writer(self, schema: Any, overwrite: bool) -> Any:
        from lance_sql.engines.spark.write import LanceNamespaceWriter

        return LanceNamespaceWriter(self.options, overwrite, schema)


class LanceNamespacePushdownDataSource(LanceNamespaceDataSource):
    """``lance_ns`` that also prunes by Spark's pushed filters (Sparks with per-scan read plans)."""

    push_filters: ClassVar[bool] = True


def for_session(source: type[LanceNamespaceDataSource], packing: Packing) -> type:
    """``source`` with a session's packing settings, to register with that session.

    Having no importable name, the class is pickled by value, ``packing`` included.
    """
    return type(
        source.__name__,
        (source,),
        {
            "packing": packing,
            "__module__": source.__module__,
            "__qualname__": f"{source.__qualname__}.for_session",
            "__doc__": source.__doc__,
        },
    )
