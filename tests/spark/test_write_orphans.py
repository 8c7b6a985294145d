"""No orphan files: failed, retried and killed task attempts leave nothing (issue #20 item 4).

A ``lance_ns`` subclass injects the fault into the writer's own Python worker
after it has written Lance files (``buffer_bytes=1`` writes every batch at
once): an exception, or SIGKILL of the worker. In ``local[2]`` Spark does not
retry, so the job fails and ``abort`` must remove everything; in
``local-cluster`` the retried attempt succeeds, and ``commit`` must remove the
dead attempt's files. Either way every file under the root afterwards belongs
to a committed table version.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

from lance_sql.engines.spark.source import LanceNamespaceDataSource
from lance_sql.engines.spark.write import LanceNamespaceWriter
from lance_sql.tables.namespace.namespace import PartitionedNamespace

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.float64())])
ROWS = 4000


class FaultyWriter(LanceNamespaceWriter):
    """Partition 0's first attempt fails after writing files for two batches."""

    def __init__(self, options: dict[str, str], overwrite: bool, schema: Any) -> None:
        super().__init__(options, overwrite, schema)
        self.fault = options["fault"]

    def write(self, iterator: Iterator[pa.RecordBatch]) -> Any:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if ctx is not None and ctx.partitionId() == 0 and ctx.attemptNumber() == 0:
            iterator = self._failing(iterator)
        return super().write(iterator)

    def _failing(self, iterator: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for i, batch in enumerate(iterator):
            if i == 2:  # two batches' files are on disk now (buffer_bytes=1)
                if self.fault == "kill":
                    os.kill(os.getpid(), signal.SIGKILL)
                raise RuntimeError("injected task failure")
            yield batch


class FaultySource(LanceNamespaceDataSource):
    @classmethod
    def name(cls) -> str:
        return "lance_ns_faulty"

    def writer(self, schema: Any, overwrite: bool) -> Any:
        return FaultyWriter(self.options, overwrite, schema)


@pytest.fixture()
def faulty(spark: Any) -> Iterator[Any]:
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spark.dataSource.register(FaultySource)
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    before = spark.conf.get(key)
    spark.conf.set(key, "100")
    try:
        yield spark
    finally:
        spark.conf.set(key, before)


def unowned_files(root: str) -> list[str]:
    """Files under ``root`` that no committed partition table version (or __manifest) owns."""
    ns = PartitionedNamespace.open(root)
    owned: set[str] = set()
    live_dirs = set()
    for e in ns.tables():
        live_dirs.add(e.location)
        ds = lance.dataset(e.uri, version=e.read_version)
        for frag in ds.get_fragments():
            owned.update(f"{e.location}/data/{f.path}" for f in frag.metadata.files)
    out = []
    for dirpath, _, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        top = rel.split(os.sep)[0]
        if top == "__manifest":
            continue
        for name in files:
            path = os.path.normpath(os.path.join(rel, name))
            if top in live_dirs and f"{os.sep}data{os.sep}" not in f"{os.sep}{path}":
                continue  # _versions, _transactions of live tables
            if path not in owned:
                out.append(path)
    return sorted(out)


@pytest.mark.parametrize("fault", ["raise", "kill"])
@pytest.mark.parametrize("existing", [False, True], ids=["new-partitions", "existing"])
def test_failed_attempts_leave_no_files(
    faulty: Any, tmp_path: Path, fault: str, existing: bool
) -> None:
    root = str(tmp_path / "ns")
    ns = PartitionedNamespace.create(root, SCHEMA, "bucket(4, k)")
    if existing:
        ns.append(pa.table({"k": [0, 1, 2, 3, 5], "v": [0.0] * 5}, schema=SCHEMA))
    before = ns.count_rows()
    df = faulty.range(0, ROWS, 1, 2).selectExpr("id AS k", "CAST(id AS DOUBLE) AS v")
    write = df.write.format("lance_ns_faulty").option("fault", fault).option("buffer_bytes", "1")
    retried = faulty.sparkContext.master.startswith("local-cluster")
    if retried:
        write.mode("append").save(root)
    else:
        with pytest.raises(Exception):  # noqa: B017 (Spark wraps the worker's failure)
            write.mode("append").save(root)
    _check(root, before, retried, existing)


@pytest.mark.parametrize("fault", ["raise", "kill"])
def test_failed_create_leaves_nothing(faulty: Any, tmp_path: Path, fault: str) -> None:
    root = str(tmp_path / "created")
    df = faulty.range(0, ROWS, 1, 2).selectExpr("id AS k", "CAST(id AS DOUBLE) AS v")
    write = (
        df.write.format("lance_ns_faulty")
        .option("fault", fault)
        .option("buffer_bytes", "1")
        .option("partitionBy", "bucket(4, k)")
    )
    if faulty.sparkContext.master.startswith("local-cluster"):
        write.mode("append").save(root)  # the retry succeeds: created, every row once
        _check(root, 0, True, False)
        return
    with pytest.raises(Exception):  # noqa: B017 (Spark wraps the worker's failure)
        write.mode("append").save(root)
    left = [os.path.join(d, f) for d, _, files in os.walk(root) for f in files]
    assert left == []  # no namespace, no data file, no journal


def _check(root: str, before: int, retried: bool, existing: bool) -> None:
    after = PartitionedNamespace.open(root)
    expected = before + (ROWS if retried else 0)
    assert after.count_rows() == expected
    if retried:  # every row exactly once
        ks = after.to_table(["k"]).column("k").to_pylist()
        assert sorted(k for k in ks if k >= 0) == sorted(
            ([0, 1, 2, 3, 5] if existing else []) + list(range(ROWS))
        )
    assert unowned_files(root) == []
    assert not os.path.exists(os.path.join(root, "_spark_staging"))


def test_dead_attempt_files_removed_on_s3(s3_server: Any) -> None:
    """The journal works on object stores: a dead attempt's objects go at commit (moto S3)."""
    import json

    import s3fs
    from pyspark.sql.types import DoubleType, LongType, StructField, StructType

    options, bucket = s3_server
    root = f"s3://{bucket()}/ns"
    opts = {"path": root, "partitionby": "bucket(4, k)", "storage_options": json.dumps(options)}
    struct = StructType([StructField("k", LongType()), StructField("v", DoubleType())])
    job = LanceNamespaceWriter(dict(opts), False, struct)

    def batch(start: int) -> Any:
        ks = list(range(start, start + 50))
        return iter([pa.record_batch({"k": ks, "v": [float(k) for k in ks]})])

    dead = job.write(batch(1000))  # an attempt Spark never commits (e.g. its worker died)
    live = job.write(batch(0))
    assert dead.attempt != live.attempt
    job.commit([live])
    fs = s3fs.S3FileSystem(
        key="testing",
        secret="testing",
        client_kwargs={"endpoint_url": options["aws_endpoint"], "region_name": "us-east-1"},
    )
    ns = PartitionedNamespace.open(root, storage_options=options)
    assert sorted(ns.to_table(["k"]).column("k").to_pylist()) == list(range(50))
    owned = set()
    for e in ns.tables():
        ds = lance.dataset(e.uri, version=e.read_version, storage_options=options)
        owned.update(f.path for frag in ds.get_fragments() for f in frag.metadata.files)
    files = fs.find(root.removeprefix("s3://"))
    data = [p.rsplit("/", 1)[-1] for p in files if "/data/" in p and "/__manifest/" not in p]
    assert data and set(data) == owned  # the dead attempt's data objects are gone
    assert not [p for p in fs.find(root.removeprefix("s3://")) if "_spark_staging" in p]
