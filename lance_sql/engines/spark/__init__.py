"""Spark integration (optional extra ``lance-sql[spark]``).

Importing this package imports pyspark; nothing else in lance_sql does.
"""

from __future__ import annotations

from typing import Any

#: Spark settings :func:`register` sets when filter pushdown is safe (see below).
SETTINGS = {"spark.sql.python.filterPushdown.enabled": "true"}

_SCAN_BUILDER = "org.apache.spark.sql.execution.datasources.v2.python.PythonScanBuilder"


def scan_scoped_pushdown(spark: Any) -> bool:
    """Whether this Spark keeps the read plan of a pushed filter with its own scan.

    pyspark 4.3.0 stores it on the data-source object every scan of one
    ``load()`` shares, so a later query of the same DataFrame (or another scan
    in the same query) reads with an earlier query's filter. Later Sparks keep
    it on the scan builder (a ``readInfo`` field there), which is what this
    checks through the driver's JVM; False when that cannot be checked.
    """
    try:
        cls = spark._jvm.java.lang.Class.forName(_SCAN_BUILDER)
        return any(f.getName() == "readInfo" for f in cls.getDeclaredFields())
    except Exception:  # Spark Connect, no JVM access, class moved: assume the unsafe kind
        return False


def register(spark: Any, filter_pushdown: bool | None = None) -> None:
    """Register the ``lance_ns`` data source with ``spark``.

    ``filter_pushdown`` (default: :func:`scan_scoped_pushdown`): prune by the
    filters Spark pushes, and set ``spark.sql.python.filterPushdown.enabled=true``.
    Where Spark would reuse a pushed filter's read plan for other scans
    (pyspark 4.3.0) it is off, Spark filters the rows itself, and pruning
    comes from the per-DataFrame ``where`` read option. After this,
    ``spark.read.format("lance_ns").load(root)`` and
    ``df.write.format("lance_ns").mode("append").save(root)`` work.
    """
    from lance_sql.engines.spark.read_packing import packing_from_spark
    from lance_sql.engines.spark.source import (
        LanceNamespaceDataSource,
        LanceNamespacePushdownDataSource,
        for_session,
    )

    if filter_pushdown is None:
        filter_pushdown = scan_scoped_pushdown(spark)
    packing = packing_from_spark(spark)  # reads are packed with this session's split settings
    if filter_pushdown:
        for key, value in SETTINGS.items():
            spark.conf.set(key, value)
        spark.dataSource.register(for_session(LanceNamespacePushdownDataSource, packing))
    else:
        spark.dataSource.register(for_session(LanceNamespaceDataSource, packing))


def partitioned_join(spark: Any, left_root: str, right_root: str, **kwargs: Any) -> Any:
    """See :func:`lance_sql.engines.spark.join.partitioned_join`."""
    from lance_sql.engines.spark.join import partitioned_join as impl

    return impl(spark, left_root, right_root, **kwargs)


def describe_read(spark: Any, root: str, **options: str) -> Any:
    """See :func:`lance_sql.engines.spark.read_report.describe_read`."""
    from lance_sql.engines.spark.read_report import describe_read as impl

    return impl(spark, root, **options)


def delete(spark: Any, root: str, where: str, **kwargs: Any) -> int:
    """See :func:`lance_sql.engines.spark.dml.delete`."""
    from lance_sql.engines.spark.dml import delete as impl

    return impl(spark, root, where, **kwargs)


def merge(spark: Any, root: str, source: Any, on: Any, **kwargs: Any) -> Any:
    """See :func:`lance_sql.engines.spark.dml_merge.merge`."""
    from lance_sql.engines.spark.dml_merge import merge as impl

    return impl(spark, root, source, on, **kwargs)


def read_blob_bytes(spark: Any, root: str, column: str, **kwargs: Any) -> Any:
    """See :func:`lance_sql.engines.spark.blob_reads.read_blob_bytes`."""
    from lance_sql.engines.spark.blob_reads import read_blob_bytes as impl

    return impl(spark, root, column, **kwargs)


def search(spark: Any, root: str, column: str, query: Any, k: int = 10, **kwargs: Any) -> Any:
    """See :func:`lance_sql.engines.spark.search_tasks.search`."""
    from lance_sql.engines.spark.search_tasks import search as impl

    return impl(spark, root, column, query, k, **kwargs)


def search_batch(spark: Any, root: str, queries: Any, column: str, **kwargs: Any) -> Any:
    """See :func:`lance_sql.engines.spark.search_tasks.search_batch`."""
    from lance_sql.engines.spark.search_tasks import search_batch as impl

    return impl(spark, root, queries, column, **kwargs)


__all__ = [
    "SETTINGS",
    "delete",
    "describe_read",
    "merge",
    "partitioned_join",
    "read_blob_bytes",
    "register",
    "scan_scoped_pushdown",
    "search",
    "search_batch",
]
