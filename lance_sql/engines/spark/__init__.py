"""Spark integration (optional extra ``lance-sql[spark]``).

Importing this package imports pyspark; nothing else in lance_sql does.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Spark settings :func:`register` sets when filter pushdown is safe (see below).
SETTINGS = {"spark.sql.python.filterPushdown.enabled": "true"}

_SCAN_BUILDER = "org.apache.spark.sql.execution.datasources.v2.python.PythonScanBuilder"


def scan_scoped_pushdown(spark: Any) -> bool:
    """Whether this Spark keeps the read plan of a pushed filter with its own scan.

    pyspark 4.3.0 shares it among every scan of one ``load()`` (a later query would read
    with an earlier filter); later Sparks keep it on the scan builder (``readInfo``),
    which this checks through the driver's JVM; False when that cannot be checked.
    """
    try:
        cls = spark._jvm.java.lang.Class.forName(_SCAN_BUILDER)
        return any(f.getName() == "readInfo" for f in cls.getDeclaredFields())
    except Exception:  # Spark Connect, no JVM access, class moved: assume the unsafe kind
        return False


def register(spark: Any, filter_pushdown: bool | None = None) -> None:
    """Register the ``lance_ns`` data source with ``spark``.

    ``filter_pushdown`` (default: :func:`scan_scoped_pushdown`): prune by the filters Spark
    pushes (setting :data:`SETTINGS`); off, pruning comes from the ``where`` read option.
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


#: The public functions, each imported from its module on first use.
_LAZY = {
    "partitioned_join": "lance_sql.engines.spark.join",
    "describe_read": "lance_sql.engines.spark.read_report",
    "delete": "lance_sql.engines.spark.dml",
    "merge": "lance_sql.engines.spark.dml_merge",
    "read_blob_bytes": "lance_sql.engines.spark.blob_reads",
    "search": "lance_sql.engines.spark.search_tasks",
    "search_batch": "lance_sql.engines.spark.search_tasks",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)


__all__ = ["SETTINGS", "register", "scan_scoped_pushdown", *_LAZY]
