"""The ``lance_ns`` Python data source: partition-pruned reads of a Lance partitioned namespace.

Spark calls ``pushFilters`` on the driver, then ``partitions()`` (in a Python
worker, after pickling the reader), then ``read(partition)`` in each task.
Pruning happens in ``partitions()``; each input partition carries pickled scan
units, so a task opens only the fragments it reads, never ``__manifest``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from lance_sql.engines.spark.filters import split
from lance_sql.engines.spark.types import spark_arrow_schema, spark_struct, to_spark_batch
from lance_sql.errors import LanceSqlError

NAME = "lance_ns"


def open_namespace(options: dict[str, str]) -> Any:
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    root = options.get("path")
    if not root:
        raise LanceSqlError("lance_ns: give the namespace root, e.g. .load('/data/ns')")
    version = options.get("version")
    so = options.get("storage_options")
    try:
        storage = json.loads(so) if so else None
    except ValueError as e:
        raise LanceSqlError(f"lance_ns {root}: storage_options is not JSON: {e}") from e
    return PartitionedNamespace.open(
        root, version=int(version) if version else None, storage_options=storage
    )


class LanceInputPartition(InputPartition):
    """Scan units of one or more (small) partition tables, run in one Spark task."""

    def __init__(self, units: Sequence[Any], object_ids: Sequence[str]) -> None:
        super().__init__(list(object_ids))
        self.units = list(units)


def pack(units: Sequence[Any], rows_per_partition: int | None) -> list[list[Any]]:
    """One group per unit, or consecutive units packed until ``rows_per_partition`` rows."""
    if not rows_per_partition:
        return [[u] for u in units]
    groups: list[list[Any]] = []
    rows = 0
    for u in units:
        if groups and rows + (u.estimated_rows or 0) <= rows_per_partition:
            groups[-1].append(u)
            rows += u.estimated_rows or 0
        else:
            groups.append([u])
            rows = u.estimated_rows or 0
    return groups


class LanceNamespaceReader(DataSourceReader):
    def __init__(self, options: dict[str, str], arrow_schema: pa.Schema) -> None:
        self.options = dict(options)
        self.arrow_schema = arrow_schema
        self.spark_schema = spark_arrow_schema(arrow_schema)
        self.filter: pc.Expression | None = None
        self.pruning = self.options.get("pruning", "true").lower() != "false"

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:
        """Keep every filter with an exact pyarrow form; return the rest to Spark.

        Kept filters prune partitions and are applied inside every partition scan
        (rows where the filter is false or NULL are dropped, as Spark would), so
        Spark does not evaluate them again.
        """
        self.filter, rest = split(filters, self.arrow_schema)
        yield from rest

    def plan(self) -> Any:
        """The :class:`~lance_sql.planning.scan_plan.ScanPlan` of this read."""
        from lance_sql.errors import PlanningError
        from lance_sql.planning.scan_plan import plan_scan

        ns = open_namespace(self.options)
        if self.filter is None or not self.pruning:
            return ns, plan_scan(ns)
        try:
            return ns, plan_scan(ns, self.filter)
        except PlanningError:
            return ns, plan_scan(ns)  # the filter is still applied in every scan

    def partitions(self) -> list[InputPartition]:
        ns, plan = self.plan()
        rows = int(self.options.get("rows_per_partition", 0) or 0) or None
        units = plan.scan_units(ns, schema=self.arrow_schema) if plan.partitions else []
        groups = pack(units, rows)
        if not groups:
            return [LanceInputPartition([], [])]
        return [LanceInputPartition(g, [u.entry.object_id for u in g]) for g in groups]

    def read(self, partition: LanceInputPartition) -> Iterator[pa.RecordBatch]:
        for unit in partition.units:
            for batch in unit.to_batches(None, self.filter):
                if batch.num_rows:
                    yield to_spark_batch(batch, self.spark_schema)


class LanceNamespaceDataSource(DataSource):
    """``spark.read.format("lance_ns").load(root)`` / ``df.write.format("lance_ns").save(root)``.

    Options: ``version`` (``__manifest`` version to read), ``storage_options``
    (JSON object), ``rows_per_partition`` (pack small partition tables into one
    Spark partition up to this many rows), ``pruning`` (``false`` reads every
    partition table; the filter is still applied).
    """

    @classmethod
    def name(cls) -> str:
        return NAME

    def _arrow_schema(self) -> pa.Schema:
        schema = getattr(self, "_schema_cache", None)
        if schema is None:
            schema = open_namespace(self.options).schema
            self._schema_cache = schema
        return schema

    def schema(self) -> Any:
        return spark_struct(self._arrow_schema())

    def reader(self, schema: Any) -> DataSourceReader:
        return LanceNamespaceReader(self.options, self._arrow_schema())

    def writer(self, schema: Any, overwrite: bool) -> Any:
        from lance_sql.engines.spark.write import LanceNamespaceWriter

        return LanceNamespaceWriter(self.options, overwrite)


__all__ = ["NAME", "LanceNamespaceDataSource", "LanceNamespaceReader", "pack"]
