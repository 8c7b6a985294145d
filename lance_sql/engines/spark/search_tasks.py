"""Search a partitioned namespace from Spark: per-partition searches in tasks, merged by Spark
with the Python search's tie rule."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from lance_sql.engines.spark.options import open_at
from lance_sql.engines.spark.types import map_arrow, map_tasks


def search(
    spark: Any,
    root: str,
    column: str,
    query: Any,
    k: int = 10,
    *,
    where: str | None = None,
    columns: Sequence[str] | None = None,
    version: int | None = None,
    storage_options: Mapping[str, str] | None = None,
    tasks: int | None = None,
    text: tuple[str, str] | None = None,
    rrf_k: int = 60,
    **options: Any,
) -> Any:
    """The top ``k`` rows of the namespace at ``root`` as a Spark DataFrame.

    ``options``: :func:`lance_sql.search`'s (``prefilter``, ``metric``,
    ``nprobes``, ``refine_factor``, ``ef``, ``use_index``). ``text=(column,
    "...")`` makes it a hybrid search: ``column``/``query`` are the vector part,
    fused with the full-text search by reciprocal rank (``_hybrid_score``).
    """
    from lance_sql.planning.search import search as run_search

    ns = open_at(root, version, storage_options)
    pinned = ns.manifest_version
    if text is None:
        report = run_search(ns, column, query, k, where=where, explain=True, **options)
        lists = [("_distance" if report.kind == "vector" else "_score", column, query)]
    else:
        both = {"vector": (column, query), "text": text}
        report = run_search(ns, None, None, k, where=where, explain=True, **both, **options)
        lists = [("_distance", column, query), ("_score", *text)]
    oids = sorted({t.object_id for t in report.tables})
    extra = [pa.field("_part", pa.int32()), pa.field("_rowid", pa.int64())]
    scores = [pa.field(score, pa.float32()) for score, _, _ in lists]
    cols = list(ns.schema.names if columns is None else columns)
    out = pa.schema([ns.schema.field(c) for c in cols] + scores + extra)
    n = max(1, min(len(oids), tasks or spark.sparkContext.defaultParallelism))
    rank = {oid: i for i, oid in enumerate(oids)}

    def task(share: list[str]) -> Iterator[pa.RecordBatch]:
        if not share:
            return
        task_ns = open_at(root, pinned, storage_options)
        mine = sorted(share)  # the search numbered its tables in object_id order
        for score, col, q in lists:
            got = run_search(
                task_ns, col, q, k, where=where, columns=cols,
                with_row_ids=True, partitions=share, **options,
            )  # fmt: skip
            parts = [rank[mine[p]] for p in got["_part"].to_pylist()]
            got = got.set_column(
                got.schema.get_field_index("_part"), "_part", pa.array(parts, pa.int32())
            )
            rowid = got.schema.get_field_index("_rowid")
            got = got.set_column(rowid, "_rowid", got["_rowid"].cast(pa.int64()))
            for other in scores:  # the other list's score is NULL on these rows
                if other.name != score:
                    got = got.append_column(other, pa.nulls(got.num_rows, other.type))
            yield from got.select(out.names).to_batches()

    df = map_tasks(spark, [oids[i::n] for i in range(n)], task, out)
    if text is not None:
        return _fuse(df, cols, int(k), rrf_k)
    score = scores[0].name
    order = df[score].asc() if score == "_distance" else df[score].desc()
    return (
        df.orderBy(order, df["_part"].asc(), df["_rowid"].asc())
        .limit(int(k))
        .drop("_part", "_rowid")
    )


def _fuse(df: Any, cols: list[str], k: int, rrf_k: int) -> Any:
    """Reciprocal rank fusion of the vector and text candidates, as the Python search does
    (``_hybrid_score = sum(1 / (rrf_k + rank))`` over each list's top ``k``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    ranked = []
    for score, order in (
        ("_distance", F.col("_distance").asc()),
        ("_score", F.col("_score").desc()),
    ):
        w = Window.orderBy(order, F.col("_part").asc(), F.col("_rowid").asc())
        part = df.filter(F.col(score).isNotNull()).withColumn("_rank", F.row_number().over(w))
        ranked.append(part.filter(F.col("_rank") <= k))
    both = ranked[0].unionByName(ranked[1])
    fused = both.groupBy("_part", "_rowid").agg(
        *[F.first(c, ignorenulls=True).alias(c) for c in cols],
        F.max("_distance").alias("_distance"),
        F.max("_score").alias("_score"),
        F.sum(F.lit(1.0) / (F.lit(float(rrf_k)) + F.col("_rank"))).alias("_hybrid_score"),
    )
    order = [F.col("_hybrid_score").desc(), F.col("_part").asc(), F.col("_rowid").asc()]
    return fused.orderBy(*order).limit(k).select(*cols, "_distance", "_score", "_hybrid_score")


def search_batch(
    spark: Any,
    root: str,
    queries: Any,
    column: str,
    k: int = 10,
    *,
    query_column: str = "query",
    id_column: str = "qid",
    where: str | None = None,
    columns: Sequence[str] | None = None,
    version: int | None = None,
    storage_options: Mapping[str, str] | None = None,
    **options: Any,
) -> Any:
    """``k`` nearest rows per query of ``queries`` (columns ``id_column``, ``query_column``),
    with ``_rank`` (1 = nearest)."""
    from pyspark.sql.pandas.types import to_arrow_type

    from lance_sql.planning.search import search as run_search

    ns = open_at(root, version, storage_options)
    pinned = ns.manifest_version
    qid_field = pa.field(id_column, to_arrow_type(queries.schema[id_column].dataType))
    fields = [ns.schema.field(c) for c in (ns.schema.names if columns is None else columns)]
    out = pa.schema([qid_field, *fields, ("_distance", pa.float32()), ("_rank", pa.int32())])
    cols = None if columns is None else list(columns)

    def task(b: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        task_ns = open_at(root, pinned, storage_options)
        ids = b.column(id_column).to_pylist()
        for qid, vec in zip(ids, b.column(query_column).to_pylist(), strict=True):
            got = run_search(task_ns, column, vec, k, where=where, columns=cols, **options)
            got = got.append_column(
                "_rank", pa.array(range(1, got.num_rows + 1), pa.int32())
            ).add_column(0, id_column, pa.array([qid] * got.num_rows, qid_field.type))
            yield from got.select(out.names).to_batches()

    return map_arrow(queries.select(id_column, query_column), task, out)
