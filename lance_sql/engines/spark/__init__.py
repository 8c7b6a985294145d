"""Spark integration (optional extra ``lance-sql[spark]``).

Importing this package imports pyspark; nothing else in lance_sql does.
"""

from __future__ import annotations

from typing import Any

#: Spark settings :func:`register` sets (filter pushdown into Python data sources).
SETTINGS = {"spark.sql.python.filterPushdown.enabled": "true"}


def register(spark: Any) -> None:
    """Register the ``lance_ns`` data source with ``spark`` and enable what it needs.

    Sets ``spark.sql.python.filterPushdown.enabled=true`` (without it Spark
    never calls ``pushFilters`` and no partition is pruned). After this,
    ``spark.read.format("lance_ns").load(root)`` and
    ``df.write.format("lance_ns").mode("append").save(root)`` work.
    """
    from lance_sql.engines.spark.source import LanceNamespaceDataSource

    for key, value in SETTINGS.items():
        spark.conf.set(key, value)
    spark.dataSource.register(LanceNamespaceDataSource)


def partitioned_join(spark: Any, left_root: str, right_root: str, **kwargs: Any) -> Any:
    """See :func:`lance_sql.engines.spark.join.partitioned_join`."""
    from lance_sql.engines.spark.join import partitioned_join as impl

    return impl(spark, left_root, right_root, **kwargs)


__all__ = ["SETTINGS", "partitioned_join", "register"]
