"""``lance_sql.spark.delete`` / ``merge``: Spark tasks, one driver commit (issue #17 item 6).

Answers equal the Python API's on the same data and DuckDB's for the final
rows; a failed task commits nothing and leaves no file.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from test_replace_where import BASE, SCHEMA, make, ns_rows, rows_of, unowned_files

import lance_sql.spark as lance_spark
from lance_sql.engines.spark.dml import DeleteJob, DeleteTasks
from lance_sql.engines.spark.dml_merge import MergeJob, MergeTasks
from lance_sql.tables.namespace.namespace import PartitionedNamespace

pytestmark = pytest.mark.spark


def duckdb_after_delete(where: str) -> list[tuple[Any, ...]]:
    import duckdb

    con = duckdb.connect()
    con.register("base", BASE)
    out = con.sql(f"SELECT k, d, v FROM base WHERE NOT coalesce(({where}), false)")
    return rows_of(out.to_arrow_table().cast(SCHEMA))


DELETES = [
    "d = 1",  # covered: two partition tables dropped, no task
    "k = 7",  # a point delete in one table
    "d = 2 AND k > 20",  # partial deletes in the day-2 tables
    "v > 40 OR v IS NULL",  # every partition, NULLs
    "v < 5",  # NULL is not TRUE
    "k < 0",  # nothing
    "k >= 0",  # everything (every table dropped)
]


@pytest.mark.parametrize("where", DELETES)
def test_delete_equals_python_api_and_duckdb(spark: Any, tmp_path: Path, where: str) -> None:
    py, sp = str(tmp_path / "py"), str(tmp_path / "spark")
    expected = make(py).delete(where)
    before = make(sp).manifest_version
    got = lance_spark.delete(spark, sp, where)
    assert got == expected
    after = PartitionedNamespace.open(sp)
    assert after.manifest_version == before + (1 if got else 0)  # one __manifest commit
    assert ns_rows(sp) == ns_rows(py) == duckdb_after_delete(where)
    assert unowned_files(sp) == []
    assert not os.path.exists(os.path.join(sp, "_spark_staging"))


def test_covered_delete_touches_no_file(spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "ns")
    make(root)
    files = sorted(
        os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if "__manifest" not in d
    )
    assert lance_spark.delete(spark, root, "d = 0") == 20
    after = sorted(
        os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if "__manifest" not in d
    )
    assert after == files


def test_bad_filter_is_refused_before_any_task(spark: Any, tmp_path: Path) -> None:
    root = str(tmp_path / "ns")
    make(root)
    with pytest.raises(Exception, match="nope"):
        lance_spark.delete(spark, root, "nope = 1")
    assert ns_rows(root) == rows_of(BASE)


def fail(fault: str) -> None:
    """Fail the task: raise, or SIGKILL its Python worker."""
    if fault == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    raise RuntimeError("injected task failure")


class FaultyDeleteTasks(DeleteTasks):
    """The first attempt of the task over the first tables fails after a deletion file."""

    fault = "raise"

    def delete_one(self, reader: Any, oid: str, attempt: str, lease: Any) -> Any:
        from pyspark import TaskContext

        out = super().delete_one(reader, oid, attempt, lease)
        ctx = TaskContext.get()
        if out.files and ctx is not None and ctx.partitionId() == 0 and ctx.attemptNumber() == 0:
            fail(self.fault)
        return out


class KillingDeleteTasks(FaultyDeleteTasks):
    fault = "kill"


class FaultyDeleteJob(DeleteJob):
    tasks_class = FaultyDeleteTasks


class KillingDeleteJob(DeleteJob):
    tasks_class = KillingDeleteTasks


@pytest.mark.parametrize("fault", ["raise", "kill"])
def test_failed_task_commits_nothing_and_leaves_no_file(
    spark: Any, tmp_path: Path, fault: str
) -> None:
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    root = str(tmp_path / "ns")
    make(root)
    before = PartitionedNamespace.open(root).manifest_version
    where = "k % 2 = 0"  # row deletes in every table
    job = (FaultyDeleteJob if fault == "raise" else KillingDeleteJob)(spark, root, where, None)
    if spark.sparkContext.master.startswith("local-cluster"):
        assert job.run() == 30  # the retried attempt succeeds
        assert ns_rows(root) == duckdb_after_delete(where)
    else:
        with pytest.raises(Exception, match="injected task failure" if fault == "raise" else None):
            job.run()
        assert PartitionedNamespace.open(root).manifest_version == before
        assert ns_rows(root) == rows_of(BASE)
    assert unowned_files(root) == []
    assert not os.path.exists(os.path.join(root, "_spark_staging"))


SOURCE = pa.table(
    {
        "k": [3, 4, 5, 31, 59, 100, 101],
        "d": [0, 2, 1, 1, 2, 1, 0],  # k=4 moves from day 1 to day 2
        "v": [-3.0, -4.0, None, -31.0, -59.0, 100.0, 101.0],
    },
    schema=SCHEMA,
)
DDL = "k long, d long, v double"

MERGES = {
    "upsert": {"when_matched_update": True, "when_not_matched_insert": True},
    "update-only": {"when_matched_update": {"v": "source.v * 10", "d": "target.d"}},
    "delete-or-update": {
        "when_matched_delete": "source.v < -30",
        "when_matched_update": "*",
        "when_not_matched_insert": True,
    },
    "delete-only": {"when_matched_delete": True},
    "insert-only": {"when_not_matched_insert": True},
}


def duckdb_upsert() -> list[tuple[Any, ...]]:
    import duckdb

    con = duckdb.connect()
    con.register("base", BASE)
    con.register("src", SOURCE)
    out = con.sql(
        "SELECT k, d, v FROM base WHERE k NOT IN (SELECT k FROM src) "
        "UNION ALL SELECT k, d, v FROM src"
    )
    return rows_of(out.to_arrow_table().cast(SCHEMA))


@pytest.mark.parametrize("name", list(MERGES))
def test_merge_equals_python_api(spark: Any, tmp_path: Path, name: str) -> None:
    clauses = MERGES[name]
    py, sp = str(tmp_path / "py"), str(tmp_path / "spark")
    expected = make(py).merge(SOURCE, on=["k"], **clauses)
    before = make(sp).manifest_version
    df = spark.createDataFrame(SOURCE.to_pylist(), DDL).repartition(2)
    got = lance_spark.merge(spark, sp, df, on=["k"], **clauses)
    assert (got.updated, got.deleted, got.inserted) == (
        expected.updated,
        expected.deleted,
        expected.inserted,
    )
    after = PartitionedNamespace.open(sp)
    assert after.manifest_version == before + (1 if got.rows else 0)  # one __manifest commit
    assert ns_rows(sp) == ns_rows(py)
    if name == "upsert":
        assert ns_rows(sp) == duckdb_upsert()
    assert unowned_files(sp) == []
    assert not os.path.exists(os.path.join(sp, "_spark_staging"))


def test_merge_refuses_a_duplicate_key(spark: Any, tmp_path: Path) -> None:
    from lance_sql.tables.namespace.merge import MergeKeyError

    root = str(tmp_path / "ns")
    make(root)
    df = spark.createDataFrame([(1, 0, 1.0), (1, 1, 2.0)], DDL)
    with pytest.raises(MergeKeyError):
        lance_spark.merge(spark, root, df, on=["k"], when_matched_update=True)
    assert ns_rows(root) == rows_of(BASE)


class FaultyMergeTasks(MergeTasks):
    """The first attempt of one table's task fails after staging its deletes and rows."""

    fault = "raise"

    def merge_one(self, reader: Any, oid: str, src: Any, attempt: str, lease: Any) -> Any:
        from pyspark import TaskContext

        out = super().merge_one(reader, oid, src, attempt, lease)
        ctx = TaskContext.get()
        wrote = out["staged"] and out["delete"]["files"]
        if wrote and ctx is not None and ctx.attemptNumber() == 0:
            fail(self.fault)
        return out


class KillingMergeTasks(FaultyMergeTasks):
    fault = "kill"


class FaultyMergeJob(MergeJob):
    merge_tasks = FaultyMergeTasks


class KillingMergeJob(MergeJob):
    merge_tasks = KillingMergeTasks


@pytest.mark.parametrize("fault", ["raise", "kill"])
def test_failed_merge_task_commits_nothing_and_leaves_no_file(
    spark: Any, tmp_path: Path, fault: str
) -> None:
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    root = str(tmp_path / "ns")
    make(root)
    before = PartitionedNamespace.open(root).manifest_version
    df = spark.createDataFrame(SOURCE.to_pylist(), DDL)
    cls = FaultyMergeJob if fault == "raise" else KillingMergeJob
    job = cls(spark, root, df, ["k"], True, False, True, None)
    if spark.sparkContext.master.startswith("local-cluster"):
        job.run()  # the retried attempts succeed
        assert ns_rows(root) == duckdb_upsert()
    else:
        with pytest.raises(Exception, match="injected task failure" if fault == "raise" else None):
            job.run()
        assert PartitionedNamespace.open(root).manifest_version == before
        assert ns_rows(root) == rows_of(BASE)
    assert unowned_files(root) == []
    assert not os.path.exists(os.path.join(root, "_spark_staging"))


def test_merge_source_with_fewer_and_extra_columns(spark: Any, tmp_path: Path) -> None:
    """Target columns the source lacks are kept (update) or NULL (insert); extra source
    columns serve the conditions; keys of another integer type are cast, as ns.merge does."""
    narrow = pa.table({"k": pa.array([2, 5, 77], pa.int32()), "v": [-2.0, -5.0, -77.0]})
    extra = pa.table(
        {"k": [1, 2, 4], "v": [10.0, 20.0, 40.0], "op": ["D", "U", "U"]},
    )
    cases = [
        (narrow, "k int, v double", {"when_matched_update": "*", "when_not_matched_insert": True}),
        (
            extra,
            "k long, v double, op string",
            {"when_matched_delete": "source.op = 'D'", "when_matched_update": {"v": "source.v"}},
        ),
    ]
    for i, (source, ddl, clauses) in enumerate(cases):
        py, sp = str(tmp_path / f"py{i}"), str(tmp_path / f"spark{i}")
        expected = make(py).merge(source, on=["k"], **clauses)
        make(sp)
        df = spark.createDataFrame(source.to_pylist(), ddl)
        got = lance_spark.merge(spark, sp, df, on=["k"], **clauses)
        assert (got.updated, got.deleted, got.inserted) == (
            expected.updated,
            expected.deleted,
            expected.inserted,
        )
        assert ns_rows(sp) == ns_rows(py)
        assert unowned_files(sp) == []


class RacedDeleteJob(DeleteJob):
    """Another writer appends after the first attempt's tasks ran: the commit conflicts."""

    raced = False

    def run_tasks(self, m: Any, object_ids: list[str], write_id: str) -> Any:
        out = super().run_tasks(m, object_ids, write_id)
        if not self.raced:
            self.raced = True
            extra = pa.table({"k": [900, 901], "d": [1, 2], "v": [900.0, None]}, schema=SCHEMA)
            PartitionedNamespace.open(self.root).append(extra)
        return out


class RacedMergeJob(MergeJob):
    raced = False

    def matched_step(self, m: Any, version: int, write_id: str) -> Any:
        out = super().matched_step(m, version, write_id)
        if not self.raced:
            self.raced = True
            extra = pa.table({"k": [900, 901], "d": [1, 2], "v": [900.0, None]}, schema=SCHEMA)
            PartitionedNamespace.open(self.root).append(extra)
        return out


def test_a_concurrent_commit_replays_the_operation(spark: Any, tmp_path: Path) -> None:
    extra = pa.table({"k": [900, 901], "d": [1, 2], "v": [900.0, None]}, schema=SCHEMA)
    where = "k % 3 = 0 OR k = 900"
    py, sp = str(tmp_path / "py"), str(tmp_path / "spark")
    ns = make(py)
    ns.append(extra)
    expected = ns.delete(where)
    make(sp)
    assert RacedDeleteJob(spark, sp, where, None).run() == expected
    assert ns_rows(sp) == ns_rows(py)
    assert unowned_files(sp) == []

    py, sp = str(tmp_path / "py2"), str(tmp_path / "spark2")
    ns = make(py)
    ns.append(extra)
    src = pa.table({"k": [3, 900, 1000], "d": [1, 1, 1], "v": [1.0, 2.0, 3.0]}, schema=SCHEMA)
    exp = ns.merge(src, on=["k"], when_matched_update=True, when_not_matched_insert=True)
    make(sp)
    df = spark.createDataFrame(src.to_pylist(), DDL)
    got = RacedMergeJob(spark, sp, df, ["k"], True, False, True, None).run()
    assert (got.updated, got.inserted) == (exp.updated, exp.inserted) == (2, 1)
    assert ns_rows(sp) == ns_rows(py)
    assert unowned_files(sp) == []


class CountingMergeJob(MergeJob):
    def candidate_tables(self, m: Any) -> list[str]:
        out = super().candidate_tables(m)
        self.seen = (len(out), len(m.entries))
        return out


def test_merge_reads_only_the_tables_a_key_may_be_in(spark: Any, tmp_path: Path) -> None:
    py, sp = str(tmp_path / "py"), str(tmp_path / "spark")
    src = pa.table({"k": [3, 3000], "d": [2, 0], "v": [-3.0, 1.0]}, schema=SCHEMA)
    exp = make(py).merge(src, on=["k"], when_matched_update=True, when_not_matched_insert=True)
    make(sp)
    job = CountingMergeJob(
        spark, sp, spark.createDataFrame(src.to_pylist(), DDL), ["k"], True, False, True, None
    )
    got = job.run()
    assert (got.updated, got.inserted) == (exp.updated, exp.inserted) == (1, 1)
    assert ns_rows(sp) == ns_rows(py)
    read, tables = job.seen
    assert tables == 6 and read <= 4  # bucket(2, k): at most one bucket per key and day


def test_merge_rewriting_whole_tables_moves_rows_to_new_tables(spark: Any, tmp_path: Path) -> None:
    """Every row of the day-0 tables is updated (one moves to day 2): the old tables are
    dropped and the staged rows end in new ones, as with ns.merge."""
    ks = [k for k in range(60) if k % 3 == 0]
    src = pa.table(
        {"k": ks, "d": [2 if k == 0 else 0 for k in ks], "v": [-float(k) for k in ks]},
        schema=SCHEMA,
    )
    py, sp = str(tmp_path / "py"), str(tmp_path / "spark")
    exp = make(py).merge(src, on=["k"], when_matched_update=True)
    make(sp)
    got = lance_spark.merge(
        spark, sp, spark.createDataFrame(src.to_pylist(), DDL), on=["k"], when_matched_update=True
    )
    assert got.updated == exp.updated == 20
    assert ns_rows(sp) == ns_rows(py)
    assert unowned_files(sp) == []


def test_delete_keeps_column_bounds_usable(spark: Any, tmp_path: Path) -> None:
    """A row delete keeps a subset of the rows, so the tables stay skippable by bounds."""
    from lance_sql.planning.namespace_scan import plan_scan

    root = str(tmp_path / "ns")
    make(root)
    before = plan_scan(PartitionedNamespace.open(root), "k = 1000").skipped_by_bounds
    assert before > 0
    assert lance_spark.delete(spark, root, "v < 10") > 0  # row deletes in every table
    after = plan_scan(PartitionedNamespace.open(root), "k = 1000")
    assert after.skipped_by_bounds == before
