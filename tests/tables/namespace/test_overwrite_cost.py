"""A dynamic overwrite of one partition costs what it changes, and races like an append.

The overwrite commits only the ``__manifest`` rows of the partitions it
replaces (a Lance ``Update``), never all rows of the next version: the bytes
it writes to ``__manifest`` do not grow with the number of partitions. A
writer that committed meanwhile to another partition does not fail it; one
that wrote the same partition does (``CommitConflictError``), and nothing of
the failed overwrite is visible.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lance_sql.errors import CommitConflictError
from lance_sql.tables.namespace import manifest_commit, mutation, overwrite
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SPEC = [{"field_id": "k", "source": "k", "transform": {"type": "identity"}}]


def _rows(keys: list[int], start: int) -> pa.Table:
    n = len(keys)
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "k": pa.array(keys, pa.int32()),
            "s": pa.array([f"v{i}" for i in range(n)], pa.string()),
        }
    )


def _namespace(root: Path, partitions: int) -> PartitionedNamespace:
    data = _rows(list(range(partitions)), 0)
    ns = PartitionedNamespace.create(root, data.schema, SPEC)
    ns.append(data)
    return ns


def _bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _ids(ns: PartitionedNamespace) -> list[int]:
    return sorted(PartitionedNamespace.open(ns.root).to_table().column("id").to_pylist())


def test_overwrite_of_one_partition_writes_manifest_bytes_independent_of_partitions(
    tmp_path, monkeypatch
) -> None:
    def full_rows(*args, **kwargs):  # the planner comparing every row of the next version
        raise AssertionError("an overwrite of one partition committed all __manifest rows")

    monkeypatch.setattr(manifest_commit, "plan_change", full_rows)
    written = {}
    for p in (200, 2000):
        ns = _namespace(tmp_path / f"p{p}", p)
        sizes = []
        for i in range(3):
            before = _bytes(tmp_path / f"p{p}" / "__manifest")
            ns.overwrite(_rows([7 + i] * 5, 10_000 + 10 * i), partitions="dynamic")
            sizes.append(_bytes(tmp_path / f"p{p}" / "__manifest") - before)
        written[p] = max(sizes)
        want = [i for i in range(p) if i not in (7, 8, 9)]
        want += [10_000 + 10 * i + j for i in range(3) for j in range(5)]
        assert _ids(ns) == sorted(want)
    # 10x the partitions: the same bytes, give or take the ids' digits (~0.8 KB per row
    # when every row was rewritten: 1.6 MB at P=2000)
    assert written[2000] <= written[200] * 1.2 + 1024, written
    assert written[2000] < 64 * 1024, written


def _racing(monkeypatch, other_write) -> None:
    """Make the next overwrite plan its change, then let ``other_write`` commit, then commit
    (once: no retry on a conflict)."""

    def run(ns, build, **_):
        def planned_then_raced(m):
            out = build(m)
            other_write()
            return out

        return mutation.run(ns, planned_then_raced, retries=0)

    monkeypatch.setattr(overwrite, "run", run)


def test_overwrite_racing_an_append_to_another_partition_both_land(tmp_path, monkeypatch) -> None:
    ns = _namespace(tmp_path / "ns", 50)
    other = PartitionedNamespace.open(ns.root)
    _racing(monkeypatch, lambda: other.append(_rows([30, 31], 500)))
    ns.overwrite(_rows([3, 3], 900), partitions="dynamic")
    want = [i for i in range(50) if i != 3] + [500, 501, 900, 901]
    assert _ids(ns) == sorted(want)
    assert sorted(ns.to_table().column("id").to_pylist()) == sorted(want)


def test_overwrite_racing_an_append_to_the_same_partition_fails(tmp_path, monkeypatch) -> None:
    ns = _namespace(tmp_path / "ns", 50)
    other = PartitionedNamespace.open(ns.root)
    _racing(monkeypatch, lambda: other.append(_rows([3], 500)))
    with pytest.raises(CommitConflictError):
        ns.overwrite(_rows([3, 3], 900), partitions="dynamic")
    assert _ids(ns) == sorted([*range(50), 500])  # the append only
    monkeypatch.undo()  # and the namespace stays writable: the overwrite, again
    ns.overwrite(_rows([3, 3], 900), partitions="dynamic")
    assert _ids(ns) == sorted([i for i in range(50) if i != 3] + [900, 901])
