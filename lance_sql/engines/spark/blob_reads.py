"""Blob bytes in Spark tasks (a ``lance_ns`` read returns a blob column's descriptor only):
the driver lists the selected rows, tasks read their bytes at the same version."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.engines.spark.options import open_at
from lance_sql.engines.spark.types import map_arrow, spark_struct

#: Rows per Spark task reading blobs (a task holds its rows' bytes in memory at once).
ROWS_PER_TASK = 64


def read_blob_bytes(
    spark: Any,
    root: str,
    column: str,
    *,
    filter: pc.Expression | None = None,
    columns: Sequence[str] = (),
    storage_options: Mapping[str, str] | None = None,
    rows_per_task: int = ROWS_PER_TASK,
) -> Any:
    """A Spark DataFrame: ``columns``, ``partition_table``, ``row_id`` and the bytes of ``column``.

    ``filter``: a pyarrow expression over non-blob namespace columns. The bytes
    are read in tasks of ``rows_per_task`` rows (one Spark partition each).
    """
    ns = open_at(root, None, storage_options)
    ids = ns.blob_rows(filter, columns=columns)
    ids = ids.set_column(
        ids.column_names.index("row_id"), "row_id", ids.column("row_id").cast(pa.int64())
    )
    out = pa.schema([*ids.schema, pa.field(column, pa.binary())])
    n = max(1, -(-ids.num_rows // max(1, rows_per_task)))
    rows = spark.sparkContext.parallelize([tuple(r.values()) for r in ids.to_pylist()], n)
    df = spark.createDataFrame(rows, schema=spark_struct(ids.schema))  # n tasks, no shuffle
    version, opts = ns.manifest_version, dict(storage_options or {})

    def task(batch: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        """Each task opens the namespace at the same version and reads its rows' blobs."""
        if not batch.num_rows:
            return
        task_ns = open_at(root, version, opts)
        tables = batch.column("partition_table").to_pylist()
        pairs = list(zip(tables, batch.column("row_id").to_pylist(), strict=True))
        data = pa.array(task_ns.read_blobs(column, pairs), pa.binary())
        yield pa.RecordBatch.from_arrays([*batch.columns, data], [*batch.schema.names, column])

    return map_arrow(df, task, out)
