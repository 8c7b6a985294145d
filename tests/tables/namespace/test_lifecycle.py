"""Delete, overwrite, update, merge, compact and expire of a namespace: targeted cases.

The random sequences are in ``test_lifecycle_model.py``; here: what touches which
files, typed refusals, one ``__manifest`` commit per operation, conflicts, pins.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.errors import CommitConflictError
from lance_sql.tables.namespace.delete import delete_matching
from lance_sql.tables.namespace.maintenance import table_stats
from lance_sql.tables.namespace.merge import MergeKeyError
from lance_sql.tables.namespace.mutation import Mutation
from lance_sql.tables.namespace.overwrite import RowsOutsideFilterError

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("region", pa.string()), ("amount", pa.int64())]
)
SPEC = [{"field_id": "region", "source": "region", "transform": {"type": "identity"}}]


def _ns(tmp_path: Path, regions: int = 4, rows: int = 5) -> lance_sql.PartitionedNamespace:
    ns = lance_sql.PartitionedNamespace.create(tmp_path / "ns", SCHEMA, SPEC)
    ids = list(range(regions * rows))
    ns.append(
        pa.table(
            {"id": ids, "region": [f"r{i % regions}" for i in ids], "amount": [1] * len(ids)},
            schema=SCHEMA,
        )
    )
    return ns


def _files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file outside ``__manifest``: path -> (size, mtime ns)."""
    out = {}
    for dirpath, _, names in os.walk(root):
        if "__manifest" in Path(dirpath).relative_to(root).parts:
            continue
        for n in names:
            p = Path(dirpath) / n
            st = p.stat()
            out[str(p.relative_to(root))] = (st.st_size, st.st_mtime_ns)
    return out


def _ids(ns: lance_sql.PartitionedNamespace) -> list[int]:
    return sorted(ns.to_table().column("id").to_pylist())


def test_delete_of_whole_partitions_touches_no_data_file(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    before = _files(tmp_path / "ns")
    version = ns.manifest_version
    assert ns.delete("region IN ('r1', 'r2')") == 10
    assert _files(tmp_path / "ns") == before  # no file written, changed or removed
    assert ns.manifest_version == version + 1  # one __manifest commit
    assert len(ns.tables()) == 2
    assert _ids(ns) == [i for i in range(20) if i % 4 in (0, 3)]


def test_row_delete_writes_deletion_files_only_where_the_filter_can_match(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    locations = {e.values.get("region"): e.location for e in ns.tables()}
    before = _files(tmp_path / "ns")
    assert ns.delete("region = 'r1' AND id > 10") == 2  # ids 13, 17
    after = _files(tmp_path / "ns")
    changed = {p for p in set(after) | set(before) if after.get(p) != before.get(p)}
    assert changed and all(p.startswith(locations["r1"] + "/") for p in changed)
    assert not any("/data/" in p for p in changed)  # no data file written or changed
    assert any("_deletions" in p for p in changed)
    assert 13 not in _ids(ns) and 17 not in _ids(ns) and len(_ids(ns)) == 18


def test_delete_nothing_commits_nothing(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    version = ns.manifest_version
    assert ns.delete("id > 1000") == 0
    assert ns.delete("region = 'nowhere'") == 0
    assert ns.refresh().manifest_version == version


def test_update_moves_rows_between_partitions_in_one_commit(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    version = ns.manifest_version
    assert ns.update({"region": "'r9'", "amount": "amount + 41"}, where="id IN (0, 1)") == 2
    assert ns.manifest_version == version + 1
    rows = {r["id"]: r for r in ns.to_table().to_pylist()}
    assert rows[0] == {"id": 0, "region": "r9", "amount": 42}
    assert rows[1] == {"id": 1, "region": "r9", "amount": 42}
    assert len(rows) == 20
    regions = sorted(str(e.values.get("region")) for e in ns.tables())
    assert regions == ["r0", "r1", "r2", "r3", "r9"]


def test_overwrite_where_refuses_rows_outside_the_filter(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    version = ns.manifest_version
    data = pa.table({"id": [100, 101], "region": ["r0", "r1"], "amount": [5, 5]}, schema=SCHEMA)
    with pytest.raises(RowsOutsideFilterError, match="1 of 2 rows"):
        ns.overwrite(data, where="region = 'r0'")
    assert ns.refresh().manifest_version == version
    ns.overwrite(data.slice(0, 1), where="region = 'r0'")
    assert [i for i in _ids(ns) if i % 4 == 0 or i == 100] == [100]


def test_dynamic_overwrite_replaces_only_the_partitions_in_the_data(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    kept = {e.object_id: e.read_version for e in ns.tables() if e.values.get("region") != "r2"}
    data = pa.table({"id": [7], "region": ["r2"], "amount": [0]}, schema=SCHEMA)
    ns.overwrite(data, partitions="dynamic")
    assert [r for r in ns.to_table().to_pylist() if r["region"] == "r2"] == [
        {"id": 7, "region": "r2", "amount": 0}
    ]
    assert {e.object_id: e.read_version for e in ns.tables() if e.object_id in kept} == kept
    assert len(_ids(ns)) == 16


def test_merge_refuses_duplicate_source_keys(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    with pytest.raises(MergeKeyError):
        ns.merge(pa.table({"id": [1, 1]}), on=["id"], when_matched_delete=True)


def test_merge_null_keys_never_match(tmp_path: Path) -> None:
    ns = lance_sql.PartitionedNamespace.create(
        tmp_path / "ns",
        pa.schema([("k", pa.int64()), ("region", pa.string())]),
        SPEC,
    )
    ns.append(pa.table({"k": [None, 1], "region": ["a", "a"]}))
    r = ns.merge(
        pa.table({"k": [None, 1], "region": ["b", "b"]}),
        on=["k"],
        when_matched_update=True,
        when_not_matched_insert=True,
    )
    assert (r.updated, r.inserted) == (1, 1)
    got = sorted(
        ns.to_table().to_pylist(), key=lambda d: (d["k"] is None, d["k"] or 0, d["region"])
    )
    assert got == [
        {"k": 1, "region": "b"},
        {"k": None, "region": "a"},
        {"k": None, "region": "b"},
    ]


def test_a_concurrent_commit_fails_the_delete_and_nothing_shows(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    other = lance_sql.PartitionedNamespace.open(tmp_path / "ns")
    m = Mutation(ns)
    assert delete_matching(m, "id < 3") == 3
    other.append(pa.table({"id": [99], "region": ["r0"], "amount": [1]}, schema=SCHEMA))
    with pytest.raises(CommitConflictError):
        m.commit()
    fresh = lance_sql.PartitionedNamespace.open(tmp_path / "ns")
    assert _ids(fresh) == sorted([*range(20), 99])
    # the next writer restores over the table versions the failed delete left
    assert fresh.delete("id < 3") == 3
    assert _ids(fresh) == sorted([*range(3, 20), 99])


def test_compact_one_commit_same_rows_fewer_fragments(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    for i in range(4):
        ns.append(pa.table({"id": [100 + i], "region": ["r0"], "amount": [1]}, schema=SCHEMA))
    ns.delete("id = 4")
    before = _ids(ns)
    version = ns.manifest_version
    report = ns.compact(target_rows_per_fragment=1000)
    assert ns.manifest_version == version + 1
    assert _ids(ns) == before
    stats = {s["object_id"]: s for s in table_stats(ns)}
    r0 = next(e.object_id for e in ns.tables() if e.values.get("region") == "r0")
    assert report.compacted[r0][1] == 1 and stats[r0]["fragments"] == 1
    assert ns.compact(target_rows_per_fragment=1000).compacted == {}  # nothing left to do


def test_expire_keeps_pinned_and_tagged_versions(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.append(pa.table({"id": [100], "region": ["r0"], "amount": [1]}, schema=SCHEMA))
    entry = next(e for e in ns.tables() if e.values.get("region") == "r0")
    ds = lance.dataset(entry.uri)
    ds.tags.create("keep", 1)
    ns.delete("id = 100")
    assert ns.expire_versions(older_than=timedelta(days=1)).table_versions_removed == 0
    report = ns.expire_versions(older_than=timedelta(0))
    assert report.manifest_versions_removed > 0
    versions = [v["version"] for v in lance.dataset(entry.uri).versions()]
    pinned = next(e for e in ns.tables() if e.values.get("region") == "r0").read_version
    assert pinned in versions and 1 in versions  # the live pin and the tagged version
    assert _ids(ns) == list(range(20))
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", ns.root)
    assert ctx.sql("SELECT count(*) AS n FROM t").to_pylist() == [{"n": 20}]


def test_without_the_pruning_planner_results_are_the_same(tmp_path: Path, monkeypatch) -> None:
    from lance_sql.tables.namespace import filter_hook

    monkeypatch.setattr(filter_hook, "_PLANNER", None)  # as before lance_sql.planning loads
    ns = _ns(tmp_path)
    assert ns.delete("region = 'r1' OR id = 2") == 6
    assert ns.update({"amount": "amount + 1"}, where="region = 'r0'") == 5
    assert _ids(ns) == [i for i in range(20) if i % 4 != 1 and i != 2]
    assert len(ns.tables()) == 3  # r1 emptied: dropped, not kept empty
