"""Queries that reuse one ``lance_ns`` DataFrame, answered by Spark over the same rows as Parquet.

Shared by the ``local[2]`` tests and the ``local-cluster`` script
(``cluster_checks.py``). Each check returns ``(name, lance answer, parquet answer)``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lance_sql.tables.namespace.namespace import PartitionedNamespace

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("s", pa.utf8()),
        pa.field("v", pa.float64()),
    ]
)


def build(base: str, n: int = 2000) -> tuple[str, str]:
    """A bucket[8] namespace of ``n`` rows and the same rows as one Parquet file."""
    root, parquet = os.path.join(base, "ns"), os.path.join(base, "same.parquet")
    ns = PartitionedNamespace.create(
        root, SCHEMA, [{"source": "k", "transform": "bucket", "num_buckets": 8}]
    )
    ks = list(range(n))
    table = pa.table(
        {
            "k": ks,
            "s": [None if i % 7 == 0 else f"s{i % 5}" for i in ks],
            "v": [float(i % 10) for i in ks],
        },
        schema=SCHEMA,
    )
    ns.append(table)
    pq.write_table(table, parquet)
    return root, parquet


def _rows(df: Any) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def reuse_checks(spark: Any, root: str, parquet: str) -> list[tuple[str, Any, Any]]:
    """Filtered and unfiltered actions, views, unions, self-joins and caches of one DataFrame."""
    lance = spark.read.format("lance_ns").load(root)
    par = spark.read.parquet(parquet)
    out: list[tuple[str, Any, Any]] = []

    def both(name: str, fn: Callable[[Any], Any]) -> None:
        out.append((name, fn(lance), fn(par)))

    both("k=7 count", lambda d: d.where("k = 7").count())
    both("count after filter", lambda d: d.count())
    both("or filter", lambda d: d.where("k = 1 OR v > 8").count())
    both("in filter rows", lambda d: _rows(d.where("k IN (3, 4, 5)")))
    both("count again", lambda d: d.count())
    both("union of two filters", lambda d: _rows(d.where("k = 7").union(d.where("k = 8"))))
    both(
        "self join filtered x unfiltered",
        lambda d: d.where("k < 20").alias("a").join(d.alias("b"), "k").count(),
    )
    both("string filter", lambda d: d.where("s = 's1'").count())
    lance.createOrReplaceTempView("reuse_lance")
    par.createOrReplaceTempView("reuse_parquet")
    for q in (
        "SELECT count(*) FROM {t} WHERE k < 50",
        "SELECT count(*) FROM {t}",
        "SELECT sum(v) FROM {t} WHERE k = 11",
        "SELECT count(*) FROM {t}",
    ):
        out.append(
            (
                q,
                spark.sql(q.format(t="reuse_lance")).collect()[0][0],
                spark.sql(q.format(t="reuse_parquet")).collect()[0][0],
            )
        )
    cached_l, cached_p = lance.cache(), par.cache()
    try:
        out.append(
            ("cache filtered", cached_l.where("k = 9").count(), cached_p.where("k = 9").count())
        )
        out.append(("cache all", cached_l.count(), cached_p.count()))
        out.append(
            (
                "cache or",
                cached_l.where("k = 2 OR v = 3").count(),
                cached_p.where("k = 2 OR v = 3").count(),
            )
        )
    finally:
        cached_l.unpersist()
        cached_p.unpersist()
    out.append(("after unpersist", lance.count(), par.count()))
    return out


def where_option_checks(spark: Any, root: str, parquet: str) -> list[tuple[str, Any, Any]]:
    """The per-DataFrame ``where`` option: pruned, exact, and never leaking into other reads."""
    par = spark.read.parquet(parquet)
    out: list[tuple[str, Any, Any]] = []
    w = spark.read.format("lance_ns").option("where", "k IN (3, 4, 1000) OR k = 77").load(root)
    pw = par.where("k IN (3, 4, 1000) OR k = 77")
    out.append(("where rows", _rows(w), _rows(pw)))
    out.append(("where partitions", w.rdd.getNumPartitions() < 8, True))
    out.append(("where + filter", w.where("v > 3").count(), pw.where("v > 3").count()))
    out.append(("where count again", w.count(), pw.count()))
    # transform terms and expressions the planner does not model, exactly as DataFusion
    w2 = spark.read.format("lance_ns").option("where", "abs(murmur3(k)) % 8 = 3").load(root)
    out.append(("where bucket term", w2.rdd.getNumPartitions(), 1))
    w3 = spark.read.format("lance_ns").option("where", "k / 2 = 3").load(root)
    out.append(("where unmodelled", _rows(w3), _rows(par.where("k = 6 OR k = 7"))))
    plain = spark.read.format("lance_ns").load(root)
    out.append(("plain unaffected", plain.count(), par.count()))
    return out


__all__ = ["build", "reuse_checks", "where_option_checks"]
