"""What a ``lance_ns`` read will read: the reader's own planning run on the driver from
metadata (a Python data source cannot add text or metrics to Spark's plan)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lance_sql.engines.spark.read_packing import Packing, packing_from_spark, unit_bytes


@dataclass(frozen=True)
class ReadReport:
    """The partition tables and Spark input partitions of one ``lance_ns`` read."""

    root: str
    manifest_version: int
    partition_tables: int  #: partition tables the read selects (after pruning)
    total_partition_tables: int
    spark_partitions: int  #: Spark input partitions (tasks) after packing
    bytes: int  #: bytes of the selected tables' data files (live share), from metadata
    object_ids: tuple[str, ...]
    explain: str  #: the planner's own explanation (``ScanPlan.explain()``)

    def __str__(self) -> str:
        return (
            f"lance_ns {self.root} @v{self.manifest_version}: {self.partition_tables}/"
            f"{self.total_partition_tables} partition tables, {self.bytes:,} bytes, "
            f"{self.spark_partitions} Spark partitions"
        )


def describe_read(spark: Any, root: str, **options: str) -> ReadReport:
    """What ``spark.read.format("lance_ns").options(**options).load(root)`` reads.

    ``spark`` gives the packing settings (None: Spark's defaults).
    """
    from lance_sql.engines.spark.source import LanceNamespaceDataSource, for_session

    packing = packing_from_spark(spark) if spark is not None else Packing()
    source = for_session(LanceNamespaceDataSource, packing)({**options, "path": root})
    reader = source.reader(source.schema())
    ns, plan = reader.plan()
    parts = reader.partitions()
    units = [u for p in parts for u in p.units]
    return ReadReport(
        root=source.options["path"],
        manifest_version=ns.manifest_version,
        partition_tables=len(plan.partitions),
        total_partition_tables=plan.total_partitions,
        spark_partitions=len(parts),
        bytes=sum(unit_bytes(u) for u in units),
        object_ids=tuple(plan.object_ids),
        explain=plan.explain(),
    )
