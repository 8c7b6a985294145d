"""Appends that commit only their ``__manifest`` rows, and the caches that make a write and
a point query cost the same at any number of partitions: every cached view must equal a
fresh read by pylance, and a commit by another object or process must never be missed."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_sql
from lance_sql.tables.namespace import manifest_delta, write_layout
from lance_sql.tables.namespace import manifest_fragments as mf
from lance_sql.tables.namespace.manifest_table import snapshot_entries
from lance_sql.tables.namespace.namespace import PartitionedNamespace

from .test_manifest_commit import SCHEMA, by_id, manifest_rows, rows, seeded, snapshot_rows


def _fresh(root: Path) -> PartitionedNamespace:
    mf._STATE.clear()
    mf._SNAPSHOTS.clear()
    return PartitionedNamespace.open(str(root))


def _check(ns: PartitionedNamespace, root: Path) -> None:
    """Cached rows, entries and the writer's table ids equal what a fresh read derives."""
    assert snapshot_rows(ns) == manifest_rows(root)
    snap = ns.snapshot
    spec = ns.current_spec
    fids = [f.field_id for f in spec.fields]
    memo = snap.derived.get((write_layout.TABLES, spec.namespace_name, tuple(fids)))
    entries = snapshot_entries(snap, fids)
    if memo is not None:
        assert memo == write_layout._table_ids(entries, spec.namespace_name, fids)
    lookup = write_layout.table_layout(snap, spec.namespace_name, fids)
    for e in entries:
        assert lookup.get((e.values["pid"],)) == e
        assert ns.table_entry(e.object_id) == e
    assert ns.table_entry("v1$nope$dataset") is None


def test_appends_commit_only_their_rows_and_match_a_fresh_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ns"
    ns = seeded(root, 60)
    made: list[bool] = []
    real = manifest_delta.commit_changed

    def spy(*args, **kwargs):  # which path each append's __manifest commit took
        out = real(*args, **kwargs)
        made.append(out is not None)
        return out

    monkeypatch.setattr(manifest_delta, "commit_changed", spy)
    monkeypatch.setattr(mf, "MAX_CHUNKS", 6)  # cached rows are recombined along the way
    steps = [
        lambda i: ns.append(rows(7, 1000 * i)),  # one existing partition
        lambda i: ns.append(pa.concat_tables([rows(3, 1000 * i), rows(100 + i, 1000 * i + 9)])),
        lambda i: ns.delete(f"id = {1000 * (i - 1)}"),  # a mutation in between
        lambda i: ns.overwrite(rows(5, 1000 * i, 2), partitions="dynamic"),
    ]
    expected = by_id(ns.to_table())
    for i in range(1, 25):
        before = by_id(ns.to_table())
        step = i % len(steps)
        made.clear()
        steps[step](i)
        if step in (0, 1):  # a plain append writes only its rows (others may need all rows)
            assert made == [True], (i, made)
        _check(ns, root)
        if step == 0:
            assert len(by_id(ns.to_table())) == len(before) + 5
    expected = by_id(ns.to_table())
    fresh = _fresh(root)
    assert by_id(fresh.to_table()) == expected
    assert sorted(e.object_id for e in fresh.tables()) == sorted(e.object_id for e in ns.tables())
    assert [(e.object_id, e.read_version) for e in fresh.tables()] == [
        (e.object_id, e.read_version) for e in ns.tables()
    ]


def test_a_stale_writer_object_rebases_onto_another_objects_append(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    a = seeded(root, 30)
    b = PartitionedNamespace.open(str(root))
    a.append(rows(4, 500))  # b's snapshot is now one version behind
    b.append(rows(4, 600))  # b refreshes (or rebases) and must keep a's rows
    a.append(rows(31, 700))  # a new partition after b's commit
    for ns in (a, b, _fresh(root)):
        ns.refresh()
        got = ns.to_table(filter=pc.field("pid").isin([4, 31])).column("id").to_pylist()
        assert sorted(got) == sorted(
            [*range(500, 505), *range(600, 605), *range(700, 705), 10_000_004]
        )
    _check(b, root)


def _append_in_process(root: str, pid: int, start: int) -> None:
    PartitionedNamespace.open(root).append(rows(pid, start))


def test_sql_point_queries_see_every_commit_of_other_objects_and_processes(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ns"
    seeded(root, 50)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", str(root))
    writer = PartitionedNamespace.open(str(root))

    def count(pid: int) -> int:
        sql = f"SELECT count(*) AS n FROM t WHERE pid = {pid}"
        return ctx.sql(sql).to_arrow_table().column("n")[0].as_py()

    assert count(9) == 1
    writer.append(rows(9, 100))  # a re-pinned table
    assert count(9) == 6
    writer.append(rows(77, 200))  # a new one
    assert count(77) == 5
    assert count(9) == 6
    spawn = multiprocessing.get_context("spawn")
    proc = spawn.Process(target=_append_in_process, args=(str(root), 9, 300))
    proc.start()
    proc.join(120)
    assert proc.exitcode == 0
    assert count(9) == 11  # another process's commit, read through this process's caches
    writer.delete("pid = 9 AND id >= 300 AND id < 1000")
    assert count(9) == 6
    writer.overwrite(rows(9, 400, 3), partitions="dynamic")
    assert count(9) == 3
    want = lance.dataset(str(root / "__manifest")).to_table()
    assert want.num_rows == len(manifest_rows(root))
    total = ctx.sql("SELECT count(*) AS n FROM t").to_arrow_table().column("n")[0].as_py()
    assert total == _fresh(root).to_table().num_rows
    assert SCHEMA.names == ["pid", "id", "s"]


def test_sql_unit_cache_drops_stale_pins_and_stays_right(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lance_sql.engines.datafusion import namespace_provider

    monkeypatch.setattr(namespace_provider, "STALE_PINS_MIN", 4)
    root = tmp_path / "ns"
    seeded(root, 3)
    ctx = lance_sql.SessionContext()
    table = ctx.register_namespace("t", str(root))
    writer = PartitionedNamespace.open(str(root))
    want = {0: 1, 1: 1, 2: 1}
    for i in range(12):
        pid = i % 3
        writer.append(rows(pid, 1000 * i))
        want[pid] += 5
        for k, n in want.items():
            sql = f"SELECT count(*) AS n FROM t WHERE pid = {k}"
            assert ctx.sql(sql).to_arrow_table().column("n")[0].as_py() == n
    units = table._units  # type: ignore[union-attr]
    assert len(units._by_pin) <= 2 * 3 + 3  # stale pins were dropped along the way


def _old_selection(rows: pa.Table, mfilter) -> pa.Table:
    """The selection as it was computed before versions were carried: the whole
    ``__manifest`` predicate evaluated over every row, then every object id parsed."""
    from lance_sql.planning.arrow_expr import to_pyarrow
    from lance_sql.planning.pruning import spec_ids

    tagged = rows.append_column("_table", pa.array(spec_ids(rows) >= 0))
    kept = tagged.filter(to_pyarrow(mfilter.predicate) & pc.field("_table"))
    return kept.drop_columns(["_table"])


def _check_selections(ns: PartitionedNamespace, carried: bool) -> None:
    """Carried table versions and the planner's selections equal a fresh computation."""
    from lance_sql.planning.planner import _selection, plan_partitions

    rows = ns.snapshot.rows
    if carried:  # known before anyone asked: carried through the commit or the read
        assert id(rows) in mf._VERSIONS
    assert mf.table_versions(rows).tolist() == mf.table_versions_of(rows).tolist()
    copy = pa.Table.from_batches(rows.to_batches(), rows.schema)  # (nothing cached for it)
    for where in ("pid = 3", "pid IN (1, 77, 5)", "pid > 40", "id > 5", "s = 'x'", None):
        got = plan_partitions(where, ns.specs, ns.schema, rows)
        fresh = plan_partitions(where, ns.specs, ns.schema, copy)
        assert got.selected.equals(fresh.selected), where
        old = _old_selection(rows, got.manifest_filter)  # (before bounds skip tables)
        assert _selection(rows, got.manifest_filter)[0].equals(old), where
        assert str(got.report) == str(fresh.report)


def test_carried_versions_and_selections_equal_a_fresh_computation(tmp_path: Path) -> None:
    root = tmp_path / "ns"
    ns = seeded(root, 40)
    reader = PartitionedNamespace.open(str(root))
    _check_selections(ns, carried=False)  # (computed once here, then carried)
    _check_selections(reader.refresh(), carried=False)
    steps = [
        lambda: ns.append(rows(3, 100)),  # a re-pinned table
        lambda: ns.append(pa.concat_tables([rows(5, 200), rows(77, 300)])),  # and a new one
        lambda: ns.delete("id >= 100 AND id < 103"),
        lambda: ns.delete("pid = 7"),  # a whole partition
        lambda: ns.overwrite(rows(5, 400, 2), partitions="dynamic"),
        lambda: ns.append(rows(41, 500)),
    ]
    for step in steps * 2:
        step()
        _check_selections(ns, carried=True)
        _check_selections(reader.refresh(), carried=True)
    spawn = multiprocessing.get_context("spawn")
    proc = spawn.Process(target=_append_in_process, args=(str(root), 3, 600))
    proc.start()
    proc.join(120)
    assert proc.exitcode == 0
    _check_selections(reader.refresh(), carried=True)  # its rows read by fragment
    ns.add_spec([{"source": "id", "transform": "bucket", "num_buckets": 4}])  # rewrites all
    ns.append(rows(3, 700))
    _check_selections(ns, carried=False)
    ns.append(rows(9, 800))
    _check_selections(ns, carried=True)
    _check_selections(reader.refresh(), carried=True)
    _check_selections(_fresh(root), carried=False)
