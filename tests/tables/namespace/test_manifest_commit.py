"""``__manifest`` commits that write only what changes, concurrent writers, cached reads.

Everything runs against real pylance datasets; the reference for every result
is either a serial run of the same writes or pylance's own read of
``__manifest``.
"""

from __future__ import annotations

import multiprocessing
import shutil
import threading
from datetime import timedelta
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lance_sql.errors import CommitConflictError
from lance_sql.tables.namespace import manifest_commit as mc
from lance_sql.tables.namespace import manifest_fragments as mf
from lance_sql.tables.namespace.manifest_table import read_manifest
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SCHEMA = pa.schema(
    [pa.field("pid", pa.int32()), pa.field("id", pa.int64()), pa.field("s", pa.utf8())]
)
SPEC = {
    "id": 1,
    "fields": [
        {
            "field_id": "pid",
            "source_ids": [0],
            "transform": {"type": "identity"},
            "result_type": {"type": "int32"},
        }
    ],
}
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "legacy_namespace"


def rows(pid: int, start: int, n: int = 5) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table(
        {"pid": pa.array([pid] * n, pa.int32()), "id": ids, "s": [f"r{i}" for i in ids]},
        schema=SCHEMA,
    )


def seeded(root: Path, partitions: int) -> PartitionedNamespace:
    ns = PartitionedNamespace.create(str(root), SCHEMA, SPEC)
    ns.append(pa.concat_tables([rows(p, 10_000_000 + p, 1) for p in range(partitions)]))
    return ns


def by_id(table: pa.Table) -> list[dict]:
    return table.sort_by("id").to_pylist()


def manifest_rows(root: Path) -> list[dict]:
    """``__manifest`` as pylance reads it (no lance-sql cache), sorted by object id."""
    t = lance.dataset(str(root / "__manifest")).to_table()
    return sorted(t.to_pylist(), key=lambda r: r["object_id"])


def snapshot_rows(ns: PartitionedNamespace) -> list[dict]:
    t = ns.snapshot.rows.select(lance.dataset(ns.snapshot.uri).schema.names)
    return sorted(t.to_pylist(), key=lambda r: r["object_id"])


def files_under(path: Path) -> dict[str, int]:
    return {str(f): f.stat().st_size for f in path.rglob("*") if f.is_file()}


def test_append_writes_only_the_changed_rows(tmp_path: Path) -> None:
    ns = seeded(tmp_path / "ns", 300)
    manifest = tmp_path / "ns" / "__manifest"
    before = files_under(manifest)
    ns.append(rows(7, 0, 10))
    added = {f: s for f, s in files_under(manifest).items() if f not in before}
    data = sum(s for f, s in added.items() if "/data/" in f)
    whole = sum(s for f, s in before.items() if "/data/" in f)
    assert data < 64 * 1024 and data * 20 < whole, (data, whole)
    assert snapshot_rows(ns) == manifest_rows(tmp_path / "ns")
    got = ns.to_table(filter=pc.field("pid") == 7)
    assert sorted(got.column("id").to_pylist()) == [*range(10), 10_000_007]


def test_fragment_count_stays_bounded_and_cached_reads_match_pylance(tmp_path: Path) -> None:
    ns = seeded(tmp_path / "ns", 40)
    reader = PartitionedNamespace.open(str(tmp_path / "ns"))
    for i in range(80):
        ns.append(rows(i % 50, 1000 * i))  # existing partitions and, from 40 on, new ones
        if i % 5 == 0:
            ns.delete(f"id = {1000 * i + 1}")
        if i % 7 == 0:
            reader.refresh()  # reads only the fragments it has not seen
            assert snapshot_rows(reader) == manifest_rows(tmp_path / "ns")
    frags = lance.dataset(str(tmp_path / "ns" / "__manifest")).get_fragments()
    assert len(frags) <= mc.FOLD_AT, len(frags)
    assert snapshot_rows(ns) == manifest_rows(tmp_path / "ns")
    mf._STATE.clear()
    mf._SNAPSHOTS.clear()
    fresh = PartitionedNamespace.open(str(tmp_path / "ns"))
    assert by_id(fresh.to_table()) == by_id(ns.to_table())
    assert snapshot_rows(fresh) == manifest_rows(tmp_path / "ns")

    def entries(n: PartitionedNamespace) -> list[tuple]:
        return sorted((e.object_id, e.location, e.read_version, e.values) for e in n.tables())

    assert entries(ns) == entries(fresh)  # handed on commit by commit == derived once
    for version in (2, 9, 30):  # older versions: rows later commits replaced are read again
        old = PartitionedNamespace.open(str(tmp_path / "ns"), version=version)
        want = lance.dataset(str(tmp_path / "ns" / "__manifest"), version=version).to_table()
        assert snapshot_rows(old) == sorted(want.to_pylist(), key=lambda r: r["object_id"])


def test_a_refused_attempt_leaves_no_orphans(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    seeded(root, 3)
    a = PartitionedNamespace.open(str(root))
    b = PartitionedNamespace.open(str(root))
    a.append(rows(100, 0))  # a new partition: conflicts with b's below, b rebases
    b.append(rows(101, 100))
    b.append(rows(1, 200))
    got = PartitionedNamespace.open(str(root)).to_table()
    ids = sorted(got.filter(pc.field("id") < 1000).column("id").to_pylist())
    assert ids == [*range(5), *range(100, 105), *range(200, 205)]
    ns = PartitionedNamespace.open(str(root))
    ns.expire_versions(older_than=timedelta(0))
    report = ns.cleanup(older_than=timedelta(0), dry_run=True)
    assert report.bytes == 0, report.files


def _writes_disjoint(root: str, worker: int, appends: int) -> None:
    ns = PartitionedNamespace.open(root)
    for j in range(appends):
        ns.append(rows(worker, 100_000 * worker + 10 * j))  # an existing partition
    ns.append(rows(1000 + worker, 100_000 * worker + 9_999))  # a new one


def _writes_same(root: str, worker: int, appends: int) -> None:
    ns = PartitionedNamespace.open(root)
    for j in range(appends):
        for _ in range(200):
            try:
                ns.append(rows(0, 100_000 * worker + 10 * j))
                break
            except CommitConflictError:  # the same partition: a real conflict, retried
                continue
        else:
            raise AssertionError("append never committed")


def _serial(root: Path, work, workers: int, appends: int) -> list[dict]:
    seeded(root, 12)
    for w in range(workers):
        work(str(root), w, appends)
    return by_id(PartitionedNamespace.open(str(root)).to_table())


@pytest.mark.parametrize("same_partition", [False, True], ids=["disjoint", "same"])
def test_threads_and_processes_equal_a_serial_run(tmp_path: Path, same_partition: bool) -> None:
    work = _writes_same if same_partition else _writes_disjoint
    threads, procs, appends = 8, 2, 2
    root = tmp_path / "ns"
    seeded(root, 12)
    errors: list[BaseException] = []

    def run(w: int) -> None:
        try:
            work(str(root), w, appends)
        except BaseException as exc:  # (reported below)
            errors.append(exc)

    ctx = multiprocessing.get_context("spawn")
    ps = [ctx.Process(target=work, args=(str(root), threads + i, appends)) for i in range(procs)]
    for p in ps:
        p.start()
    pool = [threading.Thread(target=run, args=(w,)) for w in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    for p in ps:
        p.join(timeout=600)
    assert not errors, errors
    assert all(p.exitcode == 0 for p in ps), [p.exitcode for p in ps]
    got = by_id(PartitionedNamespace.open(str(root)).to_table())
    assert got == _serial(tmp_path / "serial", work, threads + procs, appends)
    oids = [r["object_id"] for r in manifest_rows(root)]
    assert len(oids) == len(set(oids))


def test_a_namespace_written_by_the_previous_commit_code(tmp_path: Path) -> None:
    """The fixture was written when every commit rewrote all of ``__manifest``
    (tests/fixtures/make_legacy_namespace.py); it reads and writes unchanged."""
    root = tmp_path / "legacy"
    shutil.copytree(FIXTURE, root)
    ns = PartitionedNamespace.open(str(root))

    def expected(ids: list[int]) -> list[dict]:
        return [{"id": i, "k": i % 3, "s": f"row{i}"} for i in sorted(ids)]

    ids = [i for i in range(18) if i != 5]
    assert by_id(ns.to_table()) == expected(ids)
    more = [100, 101, 102, 103]
    ns.append(
        pa.table(
            {
                "id": pa.array(more, pa.int64()),
                "k": pa.array([i % 3 for i in more], pa.int32()),
                "s": [f"row{i}" for i in more],
            }
        )
    )
    assert ns.delete("id = 3 OR id = 101") == 2
    ids = [i for i in [*ids, *more] if i not in (3, 101)]
    assert by_id(ns.to_table()) == expected(ids)
    mf._STATE.clear()
    again = PartitionedNamespace.open(str(root))
    assert by_id(again.to_table()) == expected(ids)
    assert snapshot_rows(again) == manifest_rows(root)
    assert read_manifest(str(root)).version == again.snapshot.version


@pytest.mark.slow
def test_many_partitions_commit_only_what_changes(tmp_path: Path) -> None:
    """P = 100,000 tiny partitions (``-m slow``; several minutes on 2 cores): an append into
    one partition writes a few KB of ``__manifest``, and the namespace stays exact."""
    p = 100_000
    root = tmp_path / "ns"
    ns = PartitionedNamespace.create(str(root), SCHEMA, SPEC)
    for lo in range(0, p, 25_000):
        ids = list(range(lo, lo + 25_000))
        ns.append(
            pa.table(
                {"pid": pa.array(ids, pa.int32()), "id": ids, "s": [f"r{i}" for i in ids]},
                schema=SCHEMA,
            )
        )
    manifest = root / "__manifest"
    for k in (0, 54_321, p - 1):
        before = files_under(manifest)
        ns.append(rows(k, 10_000_000 + k, 10))
        added = sum(s for f, s in files_under(manifest).items() if f not in before)
        assert added < 64 * 1024, added
        got = ns.to_table(filter=pc.field("pid") == k).column("id").to_pylist()
        assert sorted(got) == [k, *range(10_000_000 + k, 10_000_010 + k)]
    assert ns.to_table(columns=["id"]).num_rows == p + 30
    assert snapshot_rows(ns) == manifest_rows(root)


def _versions_left(root: Path) -> dict[str, list[int]]:
    """Every table directory's versions, and ``__manifest``'s."""
    dirs = [d for d in sorted(root.iterdir()) if (d / "_versions").is_dir()]
    return {d.name: sorted(v["version"] for v in lance.dataset(str(d)).versions()) for d in dirs}


def _expire_by_every_version(root: Path) -> None:
    """The reference: ``expire_versions`` as it was, reading every ``__manifest`` version
    whole and visiting every pinned table (timedelta(0): nothing is recent)."""
    from lance_sql.tables.namespace.cleanup import _manifest_pins

    lance.dataset(str(root / "__manifest")).cleanup_old_versions(
        older_than=timedelta(0), error_if_tagged_old_versions=False
    )
    for location, pin in _manifest_pins(str(root), None).items():
        if pin.all_versions or not (root / location).exists():
            continue
        ds = lance.dataset(str(root / location))
        old = [
            v["version"]
            for v in ds.versions()
            if v["version"] not in pin.versions and v["version"] != ds.version
        ]
        if old:
            ds.cleanup_old_versions(
                versions=old, older_than=timedelta(0), error_if_tagged_old_versions=False
            )


def test_expire_versions_reads_only_what_changed_and_equals_reading_every_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Expiry visits only the tables whose pins changed since the last one, and leaves
    exactly the versions the reference (every version read whole) leaves."""
    from lance_sql.tables.namespace import cleanup

    root = tmp_path / "ns"
    ns = seeded(root, 30)
    opened: list[str] = []
    real_open = lance.dataset

    def spy(uri, *args, **kwargs):
        opened.append(str(uri))
        return real_open(uri, *args, **kwargs)

    def history(i: int) -> None:
        ns.append(rows(3, 1000 * i))
        ns.append(pa.concat_tables([rows(4, 1000 * i + 100), rows(40 + i, 1000 * i + 200)]))
        ns.delete(f"id = {1000 * i}")
        ns.delete(f"pid = {10 + i}")  # a whole partition
        ns.overwrite(rows(5, 1000 * i + 300, 2), partitions="dynamic")
        entry = next(e for e in ns.tables() if e.values["pid"] == 6)
        lance.write_dataset(rows(6, 1000 * i + 400), entry.uri, mode="append")  # unpinned
        ns.append(rows(6, 1000 * i + 500))  # (re-pins table 6 over its unpinned version)

    for i in range(1, 4):
        history(i)
        copy = tmp_path / f"copy{i}"
        shutil.copytree(root, copy)
        _expire_by_every_version(copy)
        monkeypatch.setattr(cleanup, "_manifest_pins", None)  # (never read whole)
        opened.clear()
        monkeypatch.setattr(lance, "dataset", spy)
        ns.expire_versions(older_than=timedelta(0))
        monkeypatch.setattr(lance, "dataset", real_open)
        assert _versions_left(root) == _versions_left(copy)
        tables = {u for u in opened if "__manifest" not in u}
        assert 0 < len(tables) <= 8, tables  # the tables written since the last expiry, not 30
        assert by_id(ns.to_table()) == by_id(PartitionedNamespace.open(str(copy)).to_table())
        monkeypatch.undo()
