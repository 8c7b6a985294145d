"""The first write after opening a namespace reads only the partitions it touches.

A writer finds the partitions it writes by key (one Arrow filter over
``__manifest``, then only the rows of those partitions in Python) instead of
building the list of every partition table; the same when it rebases onto a
concurrent commit. The rows it turns into Python do not grow with the number
of partitions, and the result equals what the whole-layout path gives.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import pyarrow as pa
import pytest

from lance_sql.errors import CommitConflictError
from lance_sql.tables.namespace import (
    manifest_commit,
    manifest_fragments,
    reader,
    staging,
    write_layout,
)
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from tests.tables.namespace.test_overwrite_cost import _namespace, _rows

SPEC2 = [
    {"field_id": "a", "source": "a", "transform": {"type": "identity"}},
    {"field_id": "b", "source": "b", "transform": {"type": "identity"}},
]


def _open(root: Any, monkeypatch) -> PartitionedNamespace:
    """``root`` opened as a new process opens it (no snapshot of it in memory yet)."""
    monkeypatch.setattr(manifest_fragments, "_SNAPSHOTS", OrderedDict())
    return PartitionedNamespace.open(root)


def _ids(root: str) -> list[int]:
    return sorted(PartitionedNamespace.open(root).to_table().column("id").to_pylist())


def _no_whole_layout(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("a write of a few partitions built the whole table list")

    monkeypatch.setattr(write_layout, "table_layout", refuse)
    monkeypatch.setattr(write_layout, "namespace_layout", refuse)


def _count_entry_rows(monkeypatch) -> list[int]:
    """Rows of ``__manifest`` turned into partition table entries, per call."""
    seen: list[int] = []
    real = reader.table_entries

    def counting(rows, *args, **kwargs):
        seen.append(rows.num_rows)
        return real(rows, *args, **kwargs)

    monkeypatch.setattr(reader, "table_entries", counting)
    return seen


@pytest.mark.parametrize("how", ["append", "overwrite"])
def test_first_write_after_open_reads_only_its_partitions(tmp_path, monkeypatch, how) -> None:
    seen_by_p = {}
    for p in (200, 2000):
        root = tmp_path / f"p{p}"
        _namespace(root, p)
        ns = _open(root, monkeypatch)
        with monkeypatch.context() as m:
            _no_whole_layout(m)
            seen = _count_entry_rows(m)
            data = _rows([5, 5, p + 1], 10_000)  # an existing partition and a new one
            if how == "append":
                ns.append(data)
            else:
                ns.overwrite(data, partitions="dynamic")
        seen_by_p[p] = sum(seen)
        want = [i for i in range(p) if how == "append" or i != 5] + [10_000, 10_001, 10_002]
        assert _ids(ns.root) == sorted(want)
        assert ns.to_table(filter=pa.compute.field("k") == 5).num_rows == 2 + (how == "append")
    assert seen_by_p[200] == seen_by_p[2000] <= 8, seen_by_p


def test_many_partitions_in_one_write_read_the_whole_layout_once(tmp_path) -> None:
    ns = _namespace(tmp_path / "ns", 40)
    ns = PartitionedNamespace.open(ns.root)
    keys = list(range(20, 80))  # half existing, half new: beyond the by-key share
    ns.append(_rows(keys, 1000))
    assert _ids(ns.root) == sorted([*range(40), *range(1000, 1060)])
    rows = ns._snapshot.rows.to_pydict()
    pairs = zip(rows["object_id"], rows["object_type"], strict=True)
    tables = [o for o, t in pairs if t == "table"]
    assert len(tables) == len(set(tables)) == 80


def test_new_partition_under_an_existing_namespace_level(tmp_path, monkeypatch) -> None:
    """Two levels: a new (a, b) under an existing ``a`` reuses ``a``'s namespace."""
    schema = pa.schema([("id", pa.int64()), ("a", pa.string()), ("b", pa.int32())])

    def rows(pairs, start):
        return pa.table(
            {
                "id": pa.array(range(start, start + len(pairs)), pa.int64()),
                "a": [x for x, _ in pairs],
                "b": pa.array([y for _, y in pairs], pa.int32()),
            },
            schema=schema,
        )

    pairs = [(f"t{i % 30}", i) for i in range(300)]
    ns = PartitionedNamespace.create(tmp_path / "ns", schema, SPEC2)
    ns.append(rows(pairs, 0))
    ns = _open(ns.root, monkeypatch)
    with monkeypatch.context() as m:
        _no_whole_layout(m)
        ns.append(rows([("t3", 3), ("t3", 999), (None, 7)], 5000))
    got = PartitionedNamespace.open(ns.root)
    snap = got._snapshot.rows.to_pydict()
    level1 = [
        o
        for o, t in zip(snap["object_id"], snap["object_type"], strict=True)
        if t == "namespace" and o.count("$") == 1
    ]
    assert len(level1) == 31  # t0..t29 and NULL, each once
    assert got.to_table(filter=pa.compute.field("a") == "t3").num_rows == 10 + 2
    assert sorted(got.to_table().column("id").to_pylist()) == [*range(300), 5000, 5001, 5002]


def test_rebase_of_a_first_write_looks_up_its_partitions_only(tmp_path, monkeypatch) -> None:
    root = _namespace(tmp_path / "ns", 300).root
    mine, other = _open(root, monkeypatch), PartitionedNamespace.open(root)
    with monkeypatch.context() as m:
        _no_whole_layout(m)
        writer = mine._writer("append", None)
        writer.write(_rows([7, 301], 500))
        other.append(_rows([8, 302], 600))  # commits first: the writer rebases
        seen = _count_entry_rows(m)
        mine._set_snapshot(writer.commit())
    assert writer.rebased
    assert sum(seen) <= 8, seen
    assert _ids(root) == sorted([*range(300), 500, 501, 600, 601])


def test_first_writes_creating_the_same_partition_conflict(tmp_path) -> None:
    root = _namespace(tmp_path / "ns", 300).root
    mine, other = PartitionedNamespace.open(root), PartitionedNamespace.open(root)
    writer = mine._writer("append", None)
    writer.write(_rows([400], 500))
    other.append(_rows([400], 600))
    with pytest.raises(CommitConflictError, match="created concurrently"):
        writer.commit()
    writer.abort()
    assert _ids(root) == sorted([*range(300), 600])


def test_abort_staged_without_stages_reads_nothing(tmp_path, monkeypatch) -> None:
    ns = _namespace(tmp_path / "ns", 5)

    def refuse(*args, **kwargs):
        raise AssertionError("__manifest read to abort nothing")

    monkeypatch.setattr(staging, "read_manifest", refuse)
    ns.abort_staged([])
    empty = ns.stage(_rows([], 0))
    ns.abort_staged([empty])


def test_consecutive_commits_carry_fragment_slices(tmp_path, monkeypatch) -> None:
    """Each commit hands the next one where every fragment's rows are: no commit after
    the first slices all rows of ``__manifest`` by fragment again."""
    ns = _namespace(tmp_path / "ns", 300)
    ns.append(_rows([1], 1000))
    calls: list[int] = []
    real = manifest_fragments.row_slices

    def counting(addresses):
        calls.append(len(addresses))
        return real(addresses)

    monkeypatch.setattr(manifest_fragments, "row_slices", counting)
    monkeypatch.setattr(manifest_commit, "row_slices", counting, raising=False)
    for i in range(12):  # appends, overwrites, new partitions: folds happen on the way
        data = _rows([(i * 37) % 300, 300 + i], 2000 + 10 * i)
        if i % 3:
            ns.append(data)
        else:
            ns.overwrite(data, partitions="dynamic")
    assert calls == [], calls
    monkeypatch.undo()
    got = PartitionedNamespace.open(ns.root).to_table().column("id").to_pylist()
    assert len(got) == len(set(got))
    state = manifest_fragments.find_state(ns._snapshot.uri)
    assert state.rows.equals(ns._snapshot.rows)
    assert manifest_fragments.slices_of(state) == real(state.addresses)


def test_staged_commit_looks_up_all_its_partitions_at_once(tmp_path, monkeypatch) -> None:
    """A distributed commit of 20 partitions (existing and new) after opening finds them
    by key in one lookup, not one per partition (which would end in the whole layout)."""
    root = _namespace(tmp_path / "ns", 400).root
    keys = [*range(0, 200, 20), *range(400, 410)]
    stages = [
        PartitionedNamespace.open(root).stage(_rows(keys[i::2], 5000 + 100 * i), write_id="job")
        for i in range(2)
    ]
    ns = _open(root, monkeypatch)
    with monkeypatch.context() as m:
        _no_whole_layout(m)
        ns.commit_staged(stages)
    want = [*range(400), *range(5000, 5010), *range(5100, 5110)]
    assert _ids(root) == sorted(want)
