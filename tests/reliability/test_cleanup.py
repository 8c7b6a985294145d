"""``cleanup_namespace`` removes exactly what failed writers left, after a dry run."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from workers import batch_for

from lance_sql.tables.namespace.cleanup import CleanupReport, cleanup_namespace
from lance_sql.tables.namespace.namespace import PartitionedNamespace


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([("commit", "ascending"), ("k", "ascending"), ("v", "ascending")])


def _leave_orphans(root: str, ns: PartitionedNamespace) -> dict[str, str]:
    """What killed writers leave: a new table never committed, a version past the pin,
    a staging directory; plus a user's own file that is none of our business."""
    orphan_dir = f"{root}/0badc0de_v1$aaaaaaaaaaaaaaaa$dataset"
    lance.write_dataset(batch_for(3, 0), orphan_dir)
    entry = ns.tables()[0]
    lance.write_dataset(_rows_like(entry.uri), entry.uri, mode="append")
    staging = Path(root) / "_spark_staging" / "job1"
    staging.mkdir(parents=True)
    (staging / "part-0.lance").write_bytes(b"x" * 100)
    (Path(root) / "NOTES.txt").write_text("user file")
    return {"orphan_dir": orphan_dir, "table": entry.uri}


def _rows_like(uri: str) -> pa.Table:
    ds = lance.dataset(uri)
    return ds.to_table(limit=1)


@pytest.fixture
def dirty(make_namespace):
    root = make_namespace()
    ns = PartitionedNamespace.open(root)
    ns.append(batch_for(1, 0))
    ns.append(batch_for(1, 1))
    paths = _leave_orphans(root, ns)
    return root, paths


def test_dry_run_reports_and_keeps_everything(dirty):
    root, _paths = dirty
    ns = PartitionedNamespace.open(root)
    before = _sorted(ns.to_table())
    report = cleanup_namespace(ns, older_than=timedelta(0))
    assert isinstance(report, CleanupReport) and report.dry_run
    text = str(report)
    assert "would delete" in text
    assert any("0badc0de_v1" in f for f in report.files)
    assert any("_spark_staging/job1/part-0.lance" in f for f in report.files)
    assert report.reasons.get("uncommitted table version") == 1
    assert not any(f.endswith("NOTES.txt") for f in report.files)
    assert not any("/__manifest/_versions/" in f for f in report.files)
    assert report.bytes > 0
    for f in report.files:  # dry run: nothing deleted
        assert Path(f).exists(), f
    assert _sorted(PartitionedNamespace.open(root).to_table()).equals(before)


def test_recent_files_are_kept(dirty):
    root, _ = dirty
    report = cleanup_namespace(
        PartitionedNamespace.open(root), older_than=timedelta(hours=1), dry_run=False
    )
    assert report.files == []
    assert report.kept_recent > 0


def test_cleanup_deletes_orphans_and_reads_identically(dirty):
    root, paths = dirty
    ns = PartitionedNamespace.open(root)
    before = _sorted(ns.to_table())
    versions = {e.object_id: e.read_version for e in ns.tables()}
    report = cleanup_namespace(ns, older_than=timedelta(0), dry_run=False)
    assert not report.dry_run and "deleted" in str(report)
    for f in report.files:
        assert not Path(f).exists(), f
    assert (Path(root) / "NOTES.txt").exists()
    after = PartitionedNamespace.open(root)
    assert _sorted(after.to_table()).equals(before)
    assert {e.object_id: e.read_version for e in after.tables()} == versions
    pinned = next(e.read_version for e in after.tables() if e.uri == paths["table"])
    assert lance.dataset(paths["table"]).version == pinned  # the uncommitted tail is gone
    # Time travel to every __manifest version still works, and writing goes on.
    for v in range(1, after.manifest_version + 1):
        PartitionedNamespace.open(root, version=v).to_table()
    after.append(batch_for(1, 2))
    assert after.count_rows() == before.num_rows + batch_for(1, 2).num_rows
    assert cleanup_namespace(after, older_than=timedelta(0)).files == []


def test_negative_age_refused(dirty):
    root, _ = dirty
    with pytest.raises(ValueError, match="older_than"):
        cleanup_namespace(PartitionedNamespace.open(root), older_than=timedelta(seconds=-1))


def test_namespace_method_is_a_dry_run_by_default(dirty):
    root, _ = dirty
    ns = PartitionedNamespace.open(root)
    report = ns.cleanup(older_than=timedelta(0))
    assert report.dry_run and report.files
    assert all(Path(f).exists() for f in report.files)
    assert ns.cleanup(older_than=timedelta(0), dry_run=False).files == report.files
    assert ns.cleanup(older_than=timedelta(0)).files == []
