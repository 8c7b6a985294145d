"""Staged writes for distributed writers: tasks stage files, one driver commits them."""

from __future__ import annotations

import os
import pickle
import re
from pathlib import Path

import lance
import pyarrow as pa
import pytest

from lance_sql.errors import (
    CommitConflictError,
    LanceSqlError,
    UnsafeLocationError,
    UnsupportedFeatureError,
)
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.namespace.staging import StagedWrite

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("s", pa.utf8())])
SPEC = [{"source": "k", "transform": "bucket", "num_buckets": 4}]


def rows(keys: range | list[int], tag: str = "") -> pa.Table:
    ks = list(keys)
    return pa.table({"k": ks, "s": [f"{tag}{k}" for k in ks]}, schema=SCHEMA)


def data_files(root: str) -> set[str]:
    out = set()
    for dirpath, _, files in os.walk(root):
        if "__manifest" in dirpath:
            continue
        out.update(os.path.join(dirpath, f) for f in files if f.endswith(".lance"))
    return out


def keys(ns: PartitionedNamespace) -> list[int]:
    return sorted(ns.to_table(["k"]).column("k").to_pylist())


@pytest.fixture
def ns(tmp_path: Path) -> PartitionedNamespace:
    ns = PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    ns.append(rows([0, 1]))  # buckets 0..3 partly exist before staging
    return ns


def test_tasks_stage_and_the_driver_commits_once(ns: PartitionedNamespace) -> None:
    before = ns.manifest_version
    tables_before = {e.object_id for e in ns.tables()}
    task_a = PartitionedNamespace.open(ns.root).stage(rows(range(10, 30)), write_id="job1")
    task_b = PartitionedNamespace.open(ns.root).stage(rows(range(30, 50)), write_id="job1")
    # Staged, not committed: readers see nothing new.
    latest = PartitionedNamespace.open(ns.root)
    assert latest.manifest_version == before and keys(latest) == [0, 1]
    assert task_a.rows == 20 and task_b.rows == 20
    # The same new partition was named alike by both tasks.
    new_a = {p.values: p.location for p in task_a.partitions if p.new}
    new_b = {p.values: p.location for p in task_b.partitions if p.new}
    assert new_a and all(new_b[v] == loc for v, loc in new_a.items() if v in new_b)
    # Stages travel as JSON (or pickles) to the driver.
    shipped = [StagedWrite.from_json(task_a.to_json()), pickle.loads(pickle.dumps(task_b))]
    assert shipped[0] == task_a
    version = ns.commit_staged(shipped)
    assert version == before + 1  # ONE __manifest commit for everything
    assert keys(ns) == [0, 1, *range(10, 50)]
    parts = ns.partitions()
    assert parts.num_rows == 4  # one table per bucket, never two
    assert tables_before <= set(parts.column("object_id").to_pylist())
    for e in ns.tables():  # every table readable by pylance at its pinned version
        assert lance.dataset(e.uri, version=e.read_version).count_rows() > 0
    total = sum(lance.dataset(e.uri).count_rows() for e in ns.tables())
    assert total == 42


def test_stages_with_different_ids_merge_into_one_table(ns: PartitionedNamespace) -> None:
    a = ns.stage(rows([100, 101, 102]), write_id="a")
    b = ns.stage(rows([100, 101, 102], tag="b"), write_id="b")
    assert {p.location for p in a.partitions if p.new}.isdisjoint(
        {p.location for p in b.partitions if p.new}
    )
    ns.commit_staged([a, b])
    assert keys(ns) == [0, 1, 100, 100, 101, 101, 102, 102]
    values = ns.partitions().column("partition_field_k_bucket_4").to_pylist()
    assert len(values) == len(set(values))
    # the second stage's new-table directories were emptied into the first's
    for p in b.partitions:
        if p.new and p.location not in set(ns.partitions().column("location").to_pylist()):
            assert not data_files(os.path.join(ns.root, p.location))


def test_staged_overwrite(ns: PartitionedNamespace) -> None:
    staged = [ns.stage(rows([7]), mode="overwrite"), ns.stage(rows([8]), mode="overwrite")]
    with pytest.raises(ValueError, match="staged for 'overwrite'"):
        ns.commit_staged(staged, mode="append")
    ns.commit_staged(staged, mode="overwrite")
    assert keys(ns) == [7, 8]
    assert keys(PartitionedNamespace.open(ns.root)) == [7, 8]


def test_abort_removes_staged_files_and_leaves_manifest(ns: PartitionedNamespace) -> None:
    before_files = data_files(ns.root)
    before = ns.manifest_version
    staged = [ns.stage(rows(range(2, 40)), write_id="j"), ns.stage(rows([50]), write_id="j")]
    assert data_files(ns.root) > before_files
    ns.abort_staged(staged)
    assert data_files(ns.root) == before_files
    again = PartitionedNamespace.open(ns.root)
    assert again.manifest_version == before and keys(again) == [0, 1]
    assert sorted(os.listdir(ns.root)) == sorted(
        ["__manifest", *(e.location for e in again.tables())]
    )


def test_abort_after_commit_keeps_committed_files(ns: PartitionedNamespace) -> None:
    staged = ns.stage(rows(range(2, 20)))
    ns.commit_staged([staged])
    ns.abort_staged([staged])  # misuse: must not corrupt what was committed
    assert keys(PartitionedNamespace.open(ns.root)) == [0, 1, *range(2, 20)]


def test_commit_refuses_stages_of_another_spec_or_namespace(
    ns: PartitionedNamespace, tmp_path: Path
) -> None:
    staged = ns.stage(rows([5]), write_id="old-spec")
    ns.add_spec([{"source": "k", "transform": "bucket", "num_buckets": 8}])
    with pytest.raises(CommitConflictError, match=r"'old-spec'.*spec v1"):
        ns.commit_staged([staged])
    other = PartitionedNamespace.create(str(tmp_path / "other"), SCHEMA, SPEC)
    with pytest.raises(LanceSqlError, match="belongs to namespace"):
        other.commit_staged([staged])
    with pytest.raises(ValueError, match="not a staged write"):
        StagedWrite.from_json('{"format": "x"}')


def test_staged_locations_outside_the_root_are_refused(ns: PartitionedNamespace) -> None:
    import dataclasses

    staged = ns.stage(rows([3]))
    part = staged.partitions[0]
    evil = dataclasses.replace(
        staged, partitions=(dataclasses.replace(part, location="../elsewhere"),)
    )
    with pytest.raises(UnsafeLocationError, match=re.escape(part.object_id)):
        ns.abort_staged([evil])
    with pytest.raises(UnsafeLocationError, match=re.escape("'../elsewhere'")):
        ns.commit_staged([StagedWrite.from_json(evil.to_json())])
    assert keys(PartitionedNamespace.open(ns.root)) == [0, 1]


def test_failed_stage_removes_its_own_files(ns: PartitionedNamespace) -> None:
    before = data_files(ns.root)

    def batches():  # type: ignore[no-untyped-def]
        yield from rows(range(2, 30)).to_batches()
        yield pa.record_batch({"k": pa.array([1]), "bad": pa.array([1])})

    with pytest.raises(LanceSqlError, match="'bad'"):
        ns.stage(batches(), buffer_bytes=1)
    assert data_files(ns.root) == before


def test_staging_into_a_branch_pinned_partition(ns: PartitionedNamespace) -> None:
    from lance_sql.tables.namespace.manifest_table import commit_rows

    entry = ns.tables()[0]
    on_main = lance.dataset(entry.uri).count_rows()
    lance.dataset(entry.uri).create_branch("dev")
    table = ns.snapshot.rows
    pins = ["dev" if o == entry.object_id else None for o in table.column("object_id").to_pylist()]
    idx = table.column_names.index("read_branch")
    commit_rows(ns.snapshot, table.set_column(idx, table.schema.field(idx), pa.array(pins)))
    ns.refresh()
    bucket = entry.values["k_bucket_4"]
    same = [k for k in range(2, 200) if _bucket_of(ns, k) == bucket][:3]
    staged = ns.stage(rows(same))
    (part,) = [p for p in staged.partitions if p.object_id == entry.object_id]
    assert part.branch == "dev"
    ns.commit_staged([staged])
    pinned = next(e for e in ns.tables() if e.object_id == entry.object_id)
    assert pinned.read_branch == "dev"
    assert set(same) <= set(keys(ns))
    assert lance.dataset(entry.uri).count_rows() == on_main  # main untouched


def test_staging_refuses_tables_lacking_columns(ns: PartitionedNamespace) -> None:
    ns.add_columns([pa.field("extra", pa.int32())])
    with pytest.raises(UnsupportedFeatureError, match=r"v1\$.*lacks namespace column.*extra"):
        ns.stage(rows([0]))
    ns.append(rows([0]))  # a normal append evolves the table, then staging works
    ns.commit_staged([ns.stage(rows([0]))])
    assert keys(ns).count(0) == 3


def _bucket_of(ns: PartitionedNamespace, k: int) -> int:
    import udfs

    return udfs.apply_partition_field(
        columns=[pa.array([k], pa.int64())],
        transform={"type": "bucket", "num_buckets": 4},
        expression=None,
        result_type=pa.int32(),
    )[0].as_py()
