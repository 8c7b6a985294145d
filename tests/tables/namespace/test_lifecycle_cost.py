"""The fixed-cost shortcuts of row operations keep their answers (issue #17 benchmarks).

Each shortcut skips work whose result is already known: the ``__manifest``
rows when nothing was committed since (``refreshed``), reading back the rows
a commit just wrote, deriving the partition tables of a mutation's base
snapshot again, starting a thread pool per delete. Each test compares the
shortcut with the long way on real pylance-written namespaces.
"""

from __future__ import annotations

import shutil
import threading

import pyarrow as pa
import pytest

from lance_sql.tables.namespace import manifest_fragments
from lance_sql.tables.namespace.delete import delete
from lance_sql.tables.namespace.manifest_table import commit_rows, read_manifest, refreshed
from lance_sql.tables.namespace.mutation import Mutation
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.namespace.overwrite import overwrite_some
from lance_sql.tables.namespace.reader import table_entries

SPEC = [{"field_id": "k", "source": "k", "transform": {"type": "identity"}}]


def _rows(n: int, parts: int = 5, start: int = 0) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "k": pa.array([i % parts for i in range(n)], pa.int32()),
            "s": pa.array([f"v{i}" for i in range(n)], pa.string()),
        }
    )


@pytest.fixture
def ns(tmp_path) -> PartitionedNamespace:
    data = _rows(100)
    ns = PartitionedNamespace.create(tmp_path / "ns", data.schema, SPEC)
    ns.append(data)
    return ns


def test_refreshed_reuses_an_unchanged_snapshot_and_sees_every_change(ns, tmp_path) -> None:
    snap = ns.snapshot
    assert snap.identity
    assert refreshed(snap) is snap
    # another view commits: the next refresh reads the new rows
    other = PartitionedNamespace.open(ns.root)
    other.append(_rows(10, start=1000))
    newer = refreshed(snap)
    assert newer.version == snap.version + 1
    assert newer.rows.equals(read_manifest(ns.root).rows)
    # the namespace deleted and created again up to the same version: other files
    version = newer.version
    shutil.rmtree(tmp_path / "ns")
    again = PartitionedNamespace.create(tmp_path / "ns", _rows(1).schema, SPEC)
    while again.manifest_version < version:
        again.append(_rows(3, start=5000 + again.manifest_version * 10))
    assert again.manifest_version == version
    fresh = refreshed(newer)
    assert fresh is not newer
    assert fresh.rows.equals(read_manifest(ns.root).rows)


def test_a_copy_of_a_snapshot_is_never_taken_for_the_latest(ns) -> None:
    import dataclasses

    copy = dataclasses.replace(ns.snapshot, rows=ns.snapshot.rows.slice(0, 1))
    assert not copy.identity
    assert refreshed(copy).rows.equals(ns.snapshot.rows)


def test_committed_rows_are_the_rows_on_disk(ns) -> None:
    snap = ns.snapshot
    new = commit_rows(snap, snap.rows.slice(1))
    on_disk = read_manifest(ns.root)
    assert new.version == on_disk.version
    assert new.rows.equals(on_disk.rows)
    assert new.lance_schema.equals(on_disk.lance_schema, check_metadata=True)
    assert new.properties == on_disk.properties
    assert new.identity == on_disk.identity


def test_cached_rows_do_not_pile_up_chunks_over_many_commits(ns) -> None:
    # a commit keeps zero-copy slices of the rows it does not change (copied into one
    # chunk past MAX_CHUNKS): the chunk count stays bounded over many commits
    seen = []
    for i in range(12):
        overwrite_some(ns, _rows(1, start=700 + i))
        seen.append(max(c.num_chunks for c in ns.snapshot.rows.columns))
    assert max(seen) <= manifest_fragments.MAX_CHUNKS, seen
    assert seen[-1] <= seen[5], seen  # not growing with the number of commits
    assert ns.snapshot.rows.equals(read_manifest(ns.root).rows)


def test_mutation_commit_carries_entries_equal_to_entries_of_its_rows(ns) -> None:
    from lance_sql.tables.namespace.manifest_table import snapshot_entries

    m = Mutation(ns)
    entries = list(m.entries.values())
    m.drop(entries[0])
    m.delete_rowids(entries[1], m.rows(entries[1], ["id"]).column("_rowid").slice(0, 2))
    assert m.versions  # the delete gave entries[1] a new pin, which the commit carries
    m.insert(_rows(3, start=400))
    snap = m.commit()
    for fids in (
        [f.field_id for f in ns.current_spec.fields],
        [f.field_id for f in ns.all_fields()],
    ):
        assert snapshot_entries(snap, fids) == table_entries(snap.rows, snap.root, fids)
    fresh = read_manifest(ns.root)
    assert snap.rows.sort_by("object_id").equals(fresh.rows.sort_by("object_id"))


def test_row_operations_on_an_unchanged_namespace_agree_with_a_fresh_view(ns) -> None:
    assert delete(ns, "id < 7") == 7
    overwrite_some(ns, _rows(4, parts=2, start=500))
    assert delete(ns, "id = 501") == 1
    got = sorted(ns.to_table().column("id").to_pylist())
    fresh = sorted(PartitionedNamespace.open(ns.root).to_table().column("id").to_pylist())
    want = sorted([i for i in range(7, 100) if i % 5 > 1] + [500, 502, 503])
    assert got == fresh == want


def test_deletes_reuse_one_read_pool(ns) -> None:
    from lance_sql.tables import dataset_cache

    assert delete(ns, "id = 10") == 1  # all 5 partitions are read: starts the pool
    pool = dataset_cache._POOL
    for i in range(11, 16):
        assert delete(ns, f"id = {i}") == 1
    assert dataset_cache._POOL is pool
    readers = [t for t in threading.enumerate() if t.name.startswith("lance-sql-open")]
    assert 0 < len(readers) <= dataset_cache.OPEN_THREADS


def test_overwrite_after_a_spec_change_sees_the_current_partitions(ns) -> None:
    ns.add_spec([{"field_id": "s1", "source": "s", "transform": {"type": "identity"}}])
    ns.append(_rows(6, start=300))
    fids = [f.field_id for f in ns.current_spec.fields]
    assert len(ns.all_fields()) > len(fids)
    # the overwrite a Mutation's writer runs sees the same partitions as a fresh writer
    overwrite_some(ns, _rows(2, start=300))
    ids = sorted(ns.to_table().column("id").to_pylist())
    assert ids == sorted([*range(100), 300, 301, 302, 303, 304, 305])
    fresh = PartitionedNamespace.open(ns.root)
    assert sorted(fresh.to_table().column("id").to_pylist()) == ids


def test_snapshot_entries_equal_table_entries_through_a_namespace_life(tmp_path) -> None:
    import datetime as dt

    from lance_sql.tables.namespace.manifest_table import snapshot_entries

    utc = dt.timezone.utc
    t = pa.table(
        {
            "id": pa.array(range(8), pa.int64()),
            "f": pa.array([0.5, float("nan"), -0.0, 0.0, 0.5, float("nan"), 1.5, 2.5]),
            "ts": pa.array(
                [dt.datetime(2025, 3, 30, h % 4, tzinfo=utc) for h in range(8)],
                pa.timestamp("us", tz="Europe/Paris"),
            ),
        }
    )
    spec = [
        {"field_id": "f", "source": "f", "transform": {"type": "identity"}},
        {"field_id": "h", "source": "ts", "transform": {"type": "hour"}},
    ]
    ns = PartitionedNamespace.create(tmp_path / "ns", t.schema, spec)

    def check() -> None:
        fids = [f.field_id for f in ns.all_fields()]
        for ids in (fids, fids[:1], []):
            # repr: NaN values compare unequal, and -0.0 must stay -0.0
            want = [repr(e) for e in table_entries(ns.snapshot.rows, ns.root, ids)]
            assert [repr(e) for e in snapshot_entries(ns.snapshot, ids)] == want
            assert [repr(e) for e in snapshot_entries(ns.snapshot, ids)] == want  # cached

    check()
    ns.append(t)
    check()
    overwrite_some(ns, t.slice(0, 3))
    check()
    assert delete(ns, "id = 7") == 1  # (its partition was not overwritten; id 4's was)
    check()
    ns.add_spec([{"field_id": "i", "source": "id", "transform": {"type": "identity"}}])
    ns.append(t.slice(5))
    check()
    assert delete(ns, "id >= 6") == 3
    check()
    got = sorted(ns.to_table().column("id").to_pylist())
    assert got == [0, 1, 2, 3, 5]
    assert got == sorted(PartitionedNamespace.open(ns.root).to_table().column("id").to_pylist())
