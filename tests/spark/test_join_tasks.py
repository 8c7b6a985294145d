"""partitioned_join's task packing (read_packing.pack_groups) and opt-in task profile."""

from __future__ import annotations

import json
import pstats
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lance_sql.engines.spark.join_profile import ENV, profiled
from lance_sql.engines.spark.read_packing import Packing, pack_groups

MIB = 2**20


def test_groups_packed_as_spark_packs_files() -> None:
    """8 groups of 4 MiB with 4 MiB open cost on 2 cores: 2 tasks of 4 groups each."""
    bins = pack_groups([4 * MIB] * 8, Packing(128 * MIB, 4 * MIB, 2))
    assert sorted(len(b) for b in bins) == [4, 4]
    assert sorted(i for b in bins for i in b) == list(range(8))


def test_large_groups_stay_alone_and_every_group_is_in_one_task() -> None:
    weights = [300 * MIB, 5 * MIB, 200 * MIB, 1, 0, 7 * MIB]
    bins = pack_groups(weights, Packing(128 * MIB, 4 * MIB, 2))
    assert sorted(i for b in bins for i in b) == list(range(len(weights)))
    assert [0] in bins and [2] in bins


def test_explicit_task_count() -> None:
    assert pack_groups([5, 1, 1, 1, 1, 1], Packing(), 2) == [[0], [1, 2, 3, 4, 5]]
    assert len(pack_groups([1] * 10, Packing(), 3)) == 3
    assert pack_groups([1, 2], Packing(), 10) == [[0], [1]]  # at most one task per group
    assert pack_groups([], Packing()) == [[]]  # an empty join still runs one task
    assert pack_groups([1, 2, 3], Packing(), tasks=1) == [[0, 1, 2]]


def test_profile_is_off_without_the_variable(monkeypatch: Any, tmp_path: Path) -> None:
    monkeypatch.delenv(ENV, raising=False)
    batches = [pa.record_batch({"x": [1, 2]})]
    assert list(profiled(iter(batches))) == batches
    assert not list(tmp_path.iterdir())


def test_profile_writes_stats_and_times(monkeypatch: Any, tmp_path: Path) -> None:
    monkeypatch.setenv(ENV, str(tmp_path / "prof"))
    batches = [pa.record_batch({"x": list(range(n))}) for n in (3, 4)]
    assert list(profiled(iter(batches))) == batches
    (js,) = (tmp_path / "prof").glob("*.json")
    report = json.loads(js.read_text())
    assert report["rows"] == 7
    assert report["wall_s"] >= report["ours_s"] >= 0
    assert report["vm_hwm_kib"] > 0
    pstats.Stats(str(js.with_suffix(".prof")))  # readable by pstats


@pytest.mark.parametrize("tasks", [0, -1, 1.5, True])
def test_tasks_must_be_a_positive_integer(tasks: Any) -> None:
    from lance_sql.engines.spark.join import partitioned_join
    from lance_sql.errors import LanceSqlError

    with pytest.raises(LanceSqlError, match="tasks="):
        partitioned_join(None, "/nowhere/l", "/nowhere/r", on="k", tasks=tasks)


@pytest.mark.spark
def test_every_task_count_gives_the_same_rows(spark: Any, tmp_path: Any, make_ns: Any) -> None:
    from lance_sql.engines.spark import partitioned_join

    lroot, rroot = str(tmp_path / "l"), str(tmp_path / "r")
    make_ns(lroot, range(0, 60))
    make_ns(rroot, range(30, 100), tag="r")
    want = None
    for tasks in (None, 1, 3, 100):
        df = partitioned_join(spark, lroot, rroot, on="k", how="full", tasks=tasks)
        n = df.rdd.getNumPartitions()
        assert n == (8 if tasks == 100 else tasks or n), tasks  # 8 groups: bucket[8]
        got = sorted((tuple(r) for r in df.collect()), key=repr)
        want = want or got
        assert got == want, tasks
    assert len(want) == 100
