"""TPC-H data for lance-sql: generate Parquet with ``tpchgen-cli``, load it into Lance, register it.

Shared by ``tests/tpch`` (scale factor 0.01) and ``benchmarks/bench_tpch.py``
(scale factor 1). Layout under one data directory per scale factor::

    <dir>/parquet/<table>.parquet      tpchgen-cli output (the DuckDB / DataFusion reference)
    <dir>/lance/lineitem               partitioned namespace, bucket[16] on l_orderkey
    <dir>/lance/orders                 partitioned namespace, bucket[8] on o_orderkey
    <dir>/lance/<table>.lance          the other six tables, plain Lance datasets
    <dir>/lance_plain/<table>.lance    lineitem and orders as plain Lance datasets too
                                       (:func:`load_plain_lance`, for the all-datasets variant)

Each step writes a ``.done`` marker last, so an interrupted run is redone and a
finished one is reused (SF1 takes minutes to load). The 22 query texts are the
DataFusion repository's (``tests/tpch/queries/q1.sql`` .. ``q22.sql``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")
QUERY_DIR = Path(__file__).resolve().parents[1] / "tests" / "tpch" / "queries"
QUERY_NUMBERS = tuple(range(1, 23))

# Partitioned namespaces: table -> (key column, number of buckets).
NAMESPACES: dict[str, tuple[str, int]] = {
    "lineitem": ("l_orderkey", 16),
    "orders": ("o_orderkey", 8),
}


def _tpchgen() -> str:
    """The ``tpchgen-cli`` executable: next to this Python first, then on ``PATH``."""
    beside = Path(sys.executable).with_name("tpchgen-cli")
    if beside.exists():
        return str(beside)
    found = shutil.which("tpchgen-cli")
    if found is None:
        raise RuntimeError("tpchgen-cli not found: pip install tpchgen-cli")
    return found


def generate_parquet(data_dir: str | Path, sf: float) -> Path:
    """``<data_dir>/parquet``: the 8 TPC-H tables at scale factor ``sf`` (generated once)."""
    out = Path(data_dir) / "parquet"
    if (out / ".done").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [_tpchgen(), "parquet", "-s", str(sf), "-o", str(out), "--overwrite", "-q"],
        check=True,
    )
    (out / ".done").write_text(f"sf={sf}\n")
    return out


def without_view_types(schema: pa.Schema) -> pa.Schema:
    """``schema`` with ``string_view`` / ``binary_view`` as ``string`` / ``binary``.

    tpchgen-cli writes string columns as ``string_view``. lance-sql namespaces take
    them as they are (issue #16: stored as the namespace's canonical types); this
    cast is only for the plain Lance datasets written with ``lance.write_dataset``.
    Field metadata (Parquet field ids) is dropped: Lance assigns its own.
    """
    plain = {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}
    return pa.schema(
        [pa.field(f.name, plain.get(f.type, f.type), f.nullable) for f in schema],
    )


def _batches(path: Path, *, plain_types: bool) -> pa.RecordBatchReader:
    """The rows of one Parquet file as a stream (view types cast when ``plain_types``)."""
    import pyarrow.parquet as pq

    source = pq.ParquetFile(path)
    if not plain_types:
        return pa.RecordBatchReader.from_batches(
            source.schema_arrow, source.iter_batches(batch_size=262_144)
        )
    schema = without_view_types(source.schema_arrow)

    def gen() -> Iterator[pa.RecordBatch]:
        for batch in source.iter_batches(batch_size=262_144):
            yield pa.RecordBatch.from_arrays(
                [c.cast(f.type) for c, f in zip(batch.columns, schema, strict=True)],
                schema=schema,
            )

    return pa.RecordBatchReader.from_batches(schema, gen())


def load_lance(
    parquet_dir: str | Path, data_dir: str | Path, file_version: str | None = None
) -> Path:
    """``<data_dir>/lance``: lineitem and orders as bucketed namespaces, the rest as datasets.

    ``file_version``: the Lance file format of every table (``<data_dir>/lance_v<version>``;
    default pylance's), set on the namespaces with ``data_storage_version``.
    """
    import lance

    from lance_sql import PartitionedNamespace

    out = Path(data_dir) / ("lance" if file_version is None else f"lance_v{file_version}")
    if (out / ".done").exists():
        return out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for table in TABLES:
        reader = _batches(
            Path(parquet_dir) / f"{table}.parquet", plain_types=table not in NAMESPACES
        )
        if table in NAMESPACES:
            key, buckets = NAMESPACES[table]
            spec = [
                {
                    "field_id": f"{key}_bucket",
                    "source": key,
                    "transform": {"type": "bucket", "num_buckets": buckets},
                }
            ]
            ns = PartitionedNamespace.create(
                str(out / table), reader.schema, spec, data_storage_version=file_version
            )
            ns.append(reader)
        else:
            lance.write_dataset(
                reader, str(out / f"{table}.lance"), data_storage_version=file_version
            )
    (out / ".done").write_text("ok\n")
    return out


def load_plain_lance(
    parquet_dir: str | Path, data_dir: str | Path, file_version: str | None = None
) -> Path:
    """``<data_dir>/lance_plain``: lineitem and orders as plain Lance datasets (written once).

    With the six other tables of ``<data_dir>/lance`` this is TPC-H with no
    namespace at all (:func:`register_lance_plain`).
    """
    import lance

    out = Path(data_dir) / (
        "lance_plain" if file_version is None else f"lance_plain_v{file_version}"
    )
    if (out / ".done").exists():
        return out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for table in NAMESPACES:
        reader = _batches(Path(parquet_dir) / f"{table}.parquet", plain_types=True)
        lance.write_dataset(reader, str(out / f"{table}.lance"), data_storage_version=file_version)
    (out / ".done").write_text("ok\n")
    return out


def register_lance_plain(ctx: Any, lance_dir: str | Path, plain_dir: str | Path) -> None:
    """Register the 8 tables as plain Lance datasets (``register_lance``) in ``ctx``."""
    for table in TABLES:
        root = Path(plain_dir) if table in NAMESPACES else Path(lance_dir)
        ctx.register_lance(table, str(root / f"{table}.lance"))


def data_dir(given: str | None, sf: float) -> Path:
    """Where a benchmark's TPC-H data lives: ``given``, else $LANCE_SQL_TPCH_DIR, else
    ``/tmp/lance-sql-tpch/sf<SF>``."""
    return Path(given or os.environ.get("LANCE_SQL_TPCH_DIR") or f"/tmp/lance-sql-tpch/sf{sf:g}")


def prepare(data_dir: str | Path, sf: float, file_version: str | None = None) -> tuple[Path, Path]:
    """Generate (once) and load (once): the Parquet and the Lance directories."""
    parquet = generate_parquet(data_dir, sf)
    return parquet, load_lance(parquet, data_dir, file_version)


def register_lance_sql(ctx: Any, lance_dir: str | Path) -> None:
    """Register the 8 tables in a ``lance_sql.SessionContext``."""
    root = Path(lance_dir)
    for table in TABLES:
        if table in NAMESPACES:
            ctx.register_namespace(table, str(root / table))
        else:
            ctx.register_lance(table, str(root / f"{table}.lance"))


def register_parquet(ctx: Any, parquet_dir: str | Path) -> None:
    """Register the 8 Parquet files in a plain ``datafusion.SessionContext``."""
    for table in TABLES:
        ctx.register_parquet(table, str(Path(parquet_dir) / f"{table}.parquet"))


def query_text(n: int) -> str:
    """The text of TPC-H query ``n`` (1..22), as in the DataFusion repository."""
    return (QUERY_DIR / f"q{n}.sql").read_text()


def statements(text: str) -> list[str]:
    """The statements of a query file, in order (q15 has three), without comments."""
    body = "\n".join(re.sub(r"--.*$", "", line) for line in text.splitlines())
    return [s.strip() for s in body.split(";") if s.strip()]


def run_query(ctx: Any, text: str) -> pa.Table:
    """Run every statement of ``text`` on a DataFusion-style ``ctx``; the SELECT's result.

    For q15 this is CREATE VIEW, SELECT, DROP VIEW; a view the text creates is
    dropped even when a later statement fails.
    """
    result: pa.Table | None = None
    views: list[str] = []
    try:
        for stmt in statements(text):
            words = stmt.lower().split()
            table = ctx.sql(stmt).to_arrow_table()
            if words[:2] == ["create", "view"]:
                views.append(words[2])
            elif words[:2] == ["drop", "view"]:
                views = [v for v in views if v != words[-1]]
            else:
                result = table
    finally:
        for view in views:
            ctx.sql(f"drop view if exists {view}").collect()
    if result is None:
        raise ValueError("the query text has no SELECT statement")
    return result
