"""`replaceWhere` overwrites equal ``ns.overwrite(where=...)`` (issue #17 item 6).

Final rows are also checked against DuckDB over the same rows (rows where the
filter is TRUE replaced, NULL/FALSE kept), refused rows change nothing, and a
failed task commits nothing and leaves no file.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lance_sql.engines.spark.source import LanceNamespaceDataSource
from lance_sql.engines.spark.write import LanceNamespaceWriter
from lance_sql.tables.namespace.namespace import PartitionedNamespace

pytestmark = pytest.mark.spark

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("d", pa.int64()),
        pa.field("v", pa.float64()),
    ]
)
SPEC = "d, bucket(2, k)"
BASE = pa.table(
    {
        "k": list(range(60)),
        "d": [i % 3 for i in range(60)],
        "v": [None if i % 7 == 0 else float(i) for i in range(60)],
    },
    schema=SCHEMA,
)
DDL = "k long, d long, v double"


def rows_of(table: pa.Table) -> list[tuple[Any, ...]]:
    cols = [table.column(n).to_pylist() for n in SCHEMA.names]
    return sorted(zip(*cols, strict=True), key=repr)


def ns_rows(root: str) -> list[tuple[Any, ...]]:
    return rows_of(PartitionedNamespace.open(root).to_table())


def duckdb_expected(base: pa.Table, new: pa.Table, where: str) -> list[tuple[Any, ...]]:
    import duckdb

    con = duckdb.connect()
    con.register("base", base)
    con.register("new", new)
    out = con.sql(
        f"SELECT k, d, v FROM base WHERE NOT coalesce(({where}), false) "
        "UNION ALL SELECT k, d, v FROM new"
    ).to_arrow_table()
    return rows_of(out.cast(SCHEMA))


def make(root: str) -> PartitionedNamespace:
    ns = PartitionedNamespace.create(root, SCHEMA, SPEC)
    ns.append(BASE)
    return ns


def spark_replace(spark: Any, root: str, new: pa.Table, where: str, fmt: str = "lance_ns") -> None:
    df = spark.createDataFrame(new.to_pylist(), DDL).repartition(2)
    df.write.format(fmt).mode("overwrite").option("replaceWhere", where).save(root)


CASES = [
    # whole partitions: d=1 drops both bucket tables of day 1 without reading them
    ("d = 1", {"k": [1000, 1001, 1002], "d": [1, 1, 1], "v": [1.5, None, -0.0]}),
    # partial: row deletes in the day-1 tables, new rows appended
    ("d = 1 AND k > 30", {"k": [31, 500], "d": [1, 1], "v": [-31.0, 5.0]}),
    # NULL is not TRUE: rows with v NULL stay; data spreads over every partition
    ("v > 40", {"k": [41, 42, 2000], "d": [2, 0, 5], "v": [41.5, 42.5, 99.0]}),
    # nothing to replace: a pure append under a filter no row matches
    ("k < 0", {"k": [-1], "d": [0], "v": [None]}),
    # an empty DataFrame deletes the matching rows
    ("d = 2 OR v < 3", {"k": [], "d": [], "v": []}),
]


@pytest.mark.parametrize(("where", "data"), CASES, ids=[c[0] for c in CASES])
def test_replace_where_equals_python_api_and_duckdb(
    spark: Any, tmp_path: Path, where: str, data: dict[str, list[Any]]
) -> None:
    new = pa.table(data, schema=SCHEMA)
    py, sp = str(tmp_path / "py"), str(tmp_path / "spark")
    make(py).overwrite(new, where=where)
    before = make(sp).manifest_version
    spark_replace(spark, sp, new, where)
    got = PartitionedNamespace.open(sp)
    assert got.manifest_version == before + 1  # one __manifest commit
    assert ns_rows(sp) == ns_rows(py) == duckdb_expected(BASE, new, where)
    assert unowned_files(sp) == []


def test_rows_outside_the_filter_are_refused(spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "ns")
    make(root)
    before = PartitionedNamespace.open(root).manifest_version
    new = pa.table({"k": [1, 2], "d": [1, 2], "v": [0.0, 0.0]}, schema=SCHEMA)
    with pytest.raises(Exception, match="RowsOutsideFilterError") as err:
        spark_replace(spark, root, new, "d = 1")
    assert "replaceWhere" in str(err.value) and root in str(err.value)
    after = PartitionedNamespace.open(root)
    assert after.manifest_version == before
    assert ns_rows(root) == rows_of(BASE)
    assert unowned_files(root) == []
    assert not os.path.exists(os.path.join(root, "_spark_staging"))


def test_bad_filter_and_wrong_mode_are_refused_on_the_driver(spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "ns")
    make(root)
    df = spark.createDataFrame([(1, 1, 0.5)], DDL)
    with pytest.raises(Exception, match="replaceWhere"):
        df.write.format("lance_ns").mode("overwrite").option("replaceWhere", "nope = 1").save(root)
    with pytest.raises(Exception, match="needs mode"):
        df.write.format("lance_ns").mode("append").option("replaceWhere", "d = 1").save(root)
    with pytest.raises(Exception, match="needs mode"):
        df.write.format("lance_ns").mode("overwrite").option("replaceWhere", "d = 1").option(
            "partitionOverwriteMode", "dynamic"
        ).save(root)
    assert ns_rows(root) == rows_of(BASE)


class FaultyWriter(LanceNamespaceWriter):
    """Partition 0's first attempt fails after its first batch's files are written."""

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Any:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if ctx is not None and ctx.partitionId() == 0 and ctx.attemptNumber() == 0:
            iterator = self._failing(iterator)
        return super().write(iterator)

    def _failing(self, iterator: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for i, batch in enumerate(iterator):
            if i == 2:
                raise RuntimeError("injected task failure")
            yield batch


class FaultySource(LanceNamespaceDataSource):
    @classmethod
    def name(cls) -> str:
        return "lance_ns_faulty_rw"

    def writer(self, schema: Any, overwrite: bool) -> Any:
        return FaultyWriter(self.options, overwrite, schema)


def test_failed_task_commits_nothing_and_leaves_no_file(spark: Any, tmp_path: Path) -> None:
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spark.dataSource.register(FaultySource)
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    old = spark.conf.get(key)
    spark.conf.set(key, "20")
    try:
        root = str(tmp_path / "ns")
        make(root)
        before = PartitionedNamespace.open(root).manifest_version
        ks = list(range(3000, 3400))
        new = pa.table({"k": ks, "d": [1] * len(ks), "v": [1.0] * len(ks)}, schema=SCHEMA)
        df = spark.createDataFrame(new.to_pylist(), DDL).repartition(2)
        write = (
            df.write.format("lance_ns_faulty_rw")
            .mode("overwrite")
            .option("replaceWhere", "d = 1")
            .option("buffer_bytes", "1")
        )
        if spark.sparkContext.master.startswith("local-cluster"):
            write.save(root)  # the retried attempt succeeds: the Python API's answer
            assert ns_rows(root) == duckdb_expected(BASE, new, "d = 1")
        else:
            with pytest.raises(Exception, match="injected task failure"):
                write.save(root)
            assert PartitionedNamespace.open(root).manifest_version == before
            assert ns_rows(root) == rows_of(BASE)
        assert unowned_files(root) == []
        assert not os.path.exists(os.path.join(root, "_spark_staging"))
    finally:
        spark.conf.set(key, old)


def unowned_files(root: str) -> list[str]:
    """Data and deletion files under ``root`` no committed partition table version owns."""
    import lance

    ns = PartitionedNamespace.open(root)
    owned: set[str] = set()
    live = set()
    for e in ns.tables():
        live.add(e.location)
        for v in lance.dataset(e.uri).versions():  # every committed version keeps its files
            ds = lance.dataset(e.uri, version=v["version"])
            for frag in ds.get_fragments():
                meta = frag.metadata
                owned.update(f"{e.location}/data/{f.path}" for f in meta.files)
                if meta.deletion_file is not None:
                    owned.add(f"{e.location}/{meta.deletion_file.path(meta.id)}")
    out = []
    for dirpath, _, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        top = rel.split(os.sep)[0]
        if top == "__manifest":
            continue
        for name in files:
            path = os.path.normpath(os.path.join(rel, name))
            if top not in live:
                if not os.path.isdir(os.path.join(root, top, "_versions")):
                    out.append(path)  # a table directory never committed
                continue  # a dropped table keeps its files until cleanup (as in the Python API)
            if not ("/data/" in f"/{path}" or "/_deletions/" in f"/{path}"):
                continue  # _versions, _transactions of live tables
            if path not in owned:
                out.append(path)
    return sorted(out)


def test_replace_where_creating_the_namespace(spark: Any, tmp_path: Path) -> None:
    """On a root without a namespace (with a spec option) the rows are checked and written."""
    root = str(tmp_path / "new")
    new = pa.table({"k": [1, 2], "d": [1, 1], "v": [0.5, None]}, schema=SCHEMA)
    df = spark.createDataFrame(new.to_pylist(), DDL)
    write = df.write.format("lance_ns").mode("overwrite").option("partitionBy", SPEC)
    with pytest.raises(Exception, match="RowsOutsideFilterError"):
        write.option("replaceWhere", "d = 2").save(root)
    assert not os.path.exists(os.path.join(root, "__manifest"))
    write.option("replaceWhere", "d = 1").save(root)
    assert ns_rows(root) == rows_of(new)
