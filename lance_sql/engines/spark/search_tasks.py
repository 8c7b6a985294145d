"""Search a partitioned namespace from Spark: per-partition searches in tasks, merged by Spark.

:func:`search`: the driver prunes with the scan planner (the same
:func:`lance_sql.search` plan, nothing is read), ``spark.range(0, n, 1, n)``
gives one task per group of selected partition tables, each task searches its
tables (indexed or flat, exactly as the Python search does) and returns their
top ``k`` candidates, and Spark's ``orderBy(...).limit(k)`` merges them with the
Python search's tie rule. No row but those candidates leaves the tasks.

:func:`search_batch`: one search per row of a DataFrame of query vectors;
each task opens the namespace and runs the searches of its queries (the
namespace never passes through the driver), returning ``k`` rows per query
with the query's id and ``_rank`` (1 = nearest).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa


def _open(root: str, version: int | None, storage_options: Mapping[str, str] | None) -> Any:
    from lance_sql.engines.spark.paths import normalize_root
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    return PartitionedNamespace.open(
        normalize_root(root), version=version, storage_options=storage_options
    )


def _out_schema(ns: Any, columns: Sequence[str] | None, score: str, extra: list) -> pa.Schema:
    cols = list(ns.schema.names if columns is None else columns)
    return pa.schema([ns.schema.field(c) for c in cols] + [pa.field(score, pa.float32()), *extra])


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
    **options: Any,
) -> Any:
    """The top ``k`` rows of the namespace at ``root`` as a Spark DataFrame (see module doc).

    ``options``: :func:`lance_sql.search`'s (``prefilter``, ``metric``,
    ``nprobes``, ``refine_factor``, ``ef``, ``use_index``).
    """
    from lance_sql.engines.spark.types import spark_struct, spark_target_schema, to_spark_batch
    from lance_sql.planning.search import search as run_search

    ns = _open(root, version, storage_options)
    pinned = ns.manifest_version
    report = run_search(ns, column, query, k, where=where, explain=True, **options)
    oids = sorted(t.object_id for t in report.tables)
    score = "_distance" if report.kind == "vector" else "_score"
    extra = [pa.field("_part", pa.int32()), pa.field("_rowid", pa.int64())]
    out = _out_schema(ns, columns, score, extra)
    struct = spark_struct(out)
    target = spark_target_schema(struct)
    n = max(1, min(len(oids), tasks or spark.sparkContext.defaultParallelism))
    shares = [oids[i::n] for i in range(n)]
    rank = {oid: i for i, oid in enumerate(oids)}
    cols = None if columns is None else list(columns)

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task_ns = _open(root, pinned, storage_options)
        for b in batches:
            for t in b.column(0).to_pylist():
                share = shares[t]
                if not share:
                    continue
                got = run_search(
                    task_ns, column, query, k, where=where, columns=cols,
                    with_row_ids=True, partitions=share, **options,
                )  # fmt: skip
                mine = sorted(share)  # the search numbered its tables in object_id order
                got = got.set_column(
                    got.schema.get_field_index("_part"),
                    "_part",
                    pa.array([rank[mine[p]] for p in got["_part"].to_pylist()], pa.int32()),
                )
                got = got.set_column(
                    got.schema.get_field_index("_rowid"), "_rowid", got["_rowid"].cast(pa.int64())
                )
                for rb in got.select(out.names).to_batches():
                    yield to_spark_batch(rb, target)

    df = spark.range(0, n, 1, n).mapInArrow(task, struct)
    order = df[score].asc() if score == "_distance" else df[score].desc()
    return (
        df.orderBy(order, df["_part"].asc(), df["_rowid"].asc())
        .limit(int(k))
        .drop("_part", "_rowid")
    )


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
    """``k`` nearest rows per query of ``queries`` (columns ``id_column``, ``query_column``)."""
    from lance_sql.engines.spark.types import spark_struct, spark_target_schema, to_spark_batch
    from lance_sql.planning.search import search as run_search

    ns = _open(root, version, storage_options)
    pinned = ns.manifest_version
    qid_field = pa.field(id_column, _arrow_type(queries.schema[id_column].dataType))
    extra = [pa.field("_rank", pa.int32())]
    out = _out_schema(ns, columns, "_distance", extra)
    out = pa.schema([qid_field, *out])
    struct = spark_struct(out)
    target = spark_target_schema(struct)
    cols = None if columns is None else list(columns)

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        task_ns = _open(root, pinned, storage_options)
        for b in batches:
            ids = b.column(id_column).to_pylist()
            for qid, vec in zip(ids, b.column(query_column).to_pylist(), strict=True):
                got = run_search(task_ns, column, vec, k, where=where, columns=cols, **options)
                got = got.append_column(
                    "_rank", pa.array(range(1, got.num_rows + 1), pa.int32())
                ).add_column(0, id_column, pa.array([qid] * got.num_rows, qid_field.type))
                for rb in got.select(out.names).to_batches():
                    yield to_spark_batch(rb, target)

    return queries.select(id_column, query_column).mapInArrow(task, struct)


def _arrow_type(spark_type: Any) -> pa.DataType:
    from pyspark.sql.pandas.types import to_arrow_type

    return to_arrow_type(spark_type)


__all__ = ["search", "search_batch"]
