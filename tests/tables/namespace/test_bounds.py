"""Column bounds in ``__manifest`` (lance_sql/tables/namespace/bounds.py): written by the
namespace writer, merged by appends, tied to the table version they describe, and never
used for tables another writer (pylance directly) committed."""

from __future__ import annotations

import json
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.planning.planner import plan_partitions
from lance_sql.tables.namespace.bounds import BOUNDS_KEY, bounds_of_metadata, usable
from lance_sql.tables.namespace.manifest_table import commit_rows
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SCHEMA = pa.schema([("id", pa.int64()), ("g", pa.int64()), ("s", pa.string())])
SPEC = [{"field_id": "g", "source": "g", "transform": {"type": "identity"}}]


def _rows(ids: list[int], g: int, s: str = "x") -> pa.Table:
    return pa.table(
        {"id": pa.array(ids, pa.int64()), "g": [g] * len(ids), "s": [s] * len(ids)}, schema=SCHEMA
    )


@pytest.fixture
def ns(tmp_path: Path) -> PartitionedNamespace:
    ns = PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, SPEC)
    ns.append(pa.concat_tables([_rows([1, 2, 3], 0), _rows([10, 20], 1)]))
    return ns


def _bounds_by_g(ns: PartitionedNamespace) -> dict[int, object]:
    rows = ns.snapshot.rows.to_pylist()
    out = {}
    for r in rows:
        if r["object_type"] != "table":
            continue
        b = bounds_of_metadata(r["metadata"])
        ok = usable(b, r["read_version"], r["read_branch"], r["read_tag"], r["location"])
        out[r["partition_field_g"]] = b if ok else None
    return out


def _skipped(ns: PartitionedNamespace, where: str) -> tuple[int, int]:
    plan = plan_partitions(where, ns.specs, ns.schema, ns.snapshot.rows)
    return plan.selected.num_rows, plan.skipped_by_bounds


def _sql(ns: PartitionedNamespace, query: str) -> list[dict]:
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", ns.root)
    return ctx.sql(query).to_arrow_table().to_pylist()


def test_append_writes_bounds_of_the_committed_version(ns: PartitionedNamespace) -> None:
    b = _bounds_by_g(ns)
    id_fid = 0
    assert (b[0].columns[id_fid].lo, b[0].columns[id_fid].hi) == (1, 3)
    assert (b[1].columns[id_fid].lo, b[1].columns[id_fid].hi) == (10, 20)
    assert _skipped(ns, "id = 15") == (1, 1)
    assert _skipped(ns, "id = 25") == (0, 2)
    assert _sql(ns, "SELECT id FROM t WHERE id = 20") == [{"id": 20}]
    text = _sql(ns, "EXPLAIN SELECT id FROM t WHERE id = 20")[1]["plan"]
    assert "partition_tables=1/2, skipped_by_bounds=1" in text


def test_appends_merge_bounds(ns: PartitionedNamespace) -> None:
    ns.append(_rows([-5, 100], 0))
    b = _bounds_by_g(ns)
    assert (b[0].columns[0].lo, b[0].columns[0].hi) == (-5, 100)
    assert _skipped(ns, "id = 50") == (1, 1)  # g=1 [10, 20] skipped, g=0 [-5, 100] kept
    assert sorted(r["id"] for r in _sql(ns, "SELECT id FROM t WHERE id >= 3")) == [3, 10, 20, 100]


def test_delete_keeps_bounds_as_a_superset(ns: PartitionedNamespace) -> None:
    ns.delete("id = 3")
    b = _bounds_by_g(ns)
    assert (b[0].columns[0].lo, b[0].columns[0].hi) == (1, 3)  # not narrowed, still valid
    assert _skipped(ns, "id = 25") == (0, 2)
    assert _sql(ns, "SELECT id FROM t WHERE id = 3") == []
    ns.append(_rows([7], 0))  # appends merge into the carried bounds
    assert (_bounds_by_g(ns)[0].columns[0].lo, _bounds_by_g(ns)[0].columns[0].hi) == (1, 7)
    assert sorted(r["id"] for r in _sql(ns, "SELECT id FROM t WHERE id < 10")) == [1, 2, 7]


def test_update_widens_bounds_to_the_new_values(ns: PartitionedNamespace) -> None:
    ns.update({"id": "id + 100"}, where="id = 2")
    b = _bounds_by_g(ns)[0]
    assert b is None or (b.columns[0].lo <= 1 and b.columns[0].hi >= 102)
    assert _sql(ns, "SELECT id FROM t WHERE id = 102") == [{"id": 102}]
    assert _sql(ns, "SELECT id FROM t WHERE id = 2") == []


def test_merge_and_compaction_never_hide_rows(ns: PartitionedNamespace) -> None:
    src = pa.table({"id": pa.array([3, 300], pa.int64()), "g": [0, 0], "s": ["m", "m"]})
    ns.merge(src, on=["id"], when_matched_update=True, when_not_matched_insert=True)
    assert _sql(ns, "SELECT id, s FROM t WHERE id = 300") == [{"id": 300, "s": "m"}]
    ns.compact()
    b = _bounds_by_g(ns)[0]
    assert b is None or b.columns[0].hi >= 300
    assert _sql(ns, "SELECT id, s FROM t WHERE id = 300") == [{"id": 300, "s": "m"}]
    assert _sql(ns, "SELECT id, s FROM t WHERE id = 3") == [{"id": 3, "s": "m"}]


def test_compaction_and_indexes_keep_bounds(ns: PartitionedNamespace) -> None:
    ns.append(_rows([4], 0))  # a second fragment to compact
    ns.delete("id = 1")
    ns.compact()
    ns.create_scalar_index("id", index_type="BTREE")
    b = _bounds_by_g(ns)
    assert (b[0].columns[0].lo, b[0].columns[0].hi) == (1, 4)
    assert _skipped(ns, "id = 15") == (1, 1)
    assert _sql(ns, "SELECT id FROM t WHERE id = 4") == [{"id": 4}]


def test_overwrite_recomputes_bounds(ns: PartitionedNamespace) -> None:
    ns.delete("id = 2")
    ns.overwrite(_rows([40, 41], 0), partitions="dynamic")
    b = _bounds_by_g(ns)
    assert (b[0].columns[0].lo, b[0].columns[0].hi) == (40, 41)
    assert (b[1].columns[0].lo, b[1].columns[0].hi) == (10, 20)
    assert _sql(ns, "SELECT id FROM t WHERE id = 1") == []
    assert _sql(ns, "SELECT id FROM t WHERE id = 41") == [{"id": 41}]


def test_staged_writes_carry_their_bounds(ns: PartitionedNamespace) -> None:
    from lance_sql.tables.namespace.staging import StagedWrite

    a = PartitionedNamespace.open(ns.root).stage(_rows([500, 501], 2), write_id="job")
    b = PartitionedNamespace.open(ns.root).stage(
        pa.concat_tables([_rows([600], 2), _rows([30], 1)]), write_id="job"
    )
    ns.commit_staged([StagedWrite.from_json(a.to_json()), StagedWrite.from_json(b.to_json())])
    ns = PartitionedNamespace.open(ns.root)
    got = _bounds_by_g(ns)
    assert (got[2].columns[0].lo, got[2].columns[0].hi) == (500, 600)
    assert (got[1].columns[0].lo, got[1].columns[0].hi) == (10, 30)  # merged with the append
    assert _skipped(ns, "id = 550") == (1, 2)
    assert _sql(ns, "SELECT id FROM t WHERE id = 30") == [{"id": 30}]


def test_staged_writes_without_bounds_drop_them(ns: PartitionedNamespace) -> None:
    """A stage serialized without bounds (older writers): the table gets none."""
    import json as _json

    from lance_sql.tables.namespace.staging import StagedWrite

    staged = PartitionedNamespace.open(ns.root).stage(_rows([40], 1), write_id="job")
    obj = _json.loads(staged.to_json())
    for p in obj["partitions"]:
        del p["bounds"]
    ns.commit_staged([StagedWrite.from_json(_json.dumps(obj))])
    ns = PartitionedNamespace.open(ns.root)
    assert _bounds_by_g(ns)[1] is None
    assert _sql(ns, "SELECT id FROM t WHERE id = 40") == [{"id": 40}]


def test_table_written_by_pylance_directly_is_never_skipped(ns: PartitionedNamespace) -> None:
    """A partition table committed by pylance, then pinned in __manifest: its old bounds
    describe an older version, so the new row (id 99) must still be found."""
    entry = next(e for e in ns.tables() if e.values.get("g") == 0)
    ds = lance.write_dataset(_rows([99], 0), entry.uri, mode="append")
    rows = ns.snapshot.rows
    rv = [
        ds.version if o == entry.object_id else v
        for o, v in zip(
            rows["object_id"].to_pylist(), rows["read_version"].to_pylist(), strict=True
        )
    ]
    at = rows.schema.get_field_index("read_version")
    commit_rows(ns.snapshot, rows.set_column(at, rows.schema.field(at), pa.array(rv, pa.uint64())))
    ns = PartitionedNamespace.open(ns.root)
    assert _bounds_by_g(ns)[0] is None
    assert _skipped(ns, "id = 99") == (1, 1)  # only g=1's table (bounds [10, 20]) skipped
    assert _sql(ns, "SELECT id FROM t WHERE id = 99") == [{"id": 99}]


def test_namespace_built_without_bounds_is_never_skipped(ns: PartitionedNamespace) -> None:
    """__manifest rows whose metadata carries no bounds (as pylance's own namespace writes
    them, '{}'), or bounds naming another location: nothing is skipped."""
    rows = ns.snapshot.rows
    metas = []
    for m in rows["metadata"].to_pylist():
        obj = json.loads(m)
        if BOUNDS_KEY in obj:
            inner = json.loads(obj[BOUNDS_KEY])  # a string property holding JSON
            obj[BOUNDS_KEY] = json.dumps({**inner, "location": "elsewhere"})
        metas.append(json.dumps(obj))
    metas[-1] = "{}"
    at = rows.schema.get_field_index("metadata")
    commit_rows(ns.snapshot, rows.set_column(at, rows.schema.field(at), pa.array(metas)))
    ns = PartitionedNamespace.open(ns.root)
    assert _skipped(ns, "id = 1000") == (2, 0)
    assert _sql(ns, "SELECT count(*) AS n FROM t WHERE id > 0") == [{"n": 5}]


def test_pylance_directory_namespace_still_lists_the_tables(ns: PartitionedNamespace) -> None:
    """Every metadata value stays a string (pylance's namespace refuses anything else)."""
    for r in ns.snapshot.rows.to_pylist():
        assert all(isinstance(v, str) for v in json.loads(r["metadata"]).values())


def test_other_metadata_keys_are_kept(ns: PartitionedNamespace) -> None:
    rows = ns.snapshot.rows
    metas = [
        json.dumps({**json.loads(m), "owner": "me"}) if t == "table" else m
        for m, t in zip(rows["metadata"].to_pylist(), rows["object_type"].to_pylist(), strict=True)
    ]
    at = rows.schema.get_field_index("metadata")
    commit_rows(ns.snapshot, rows.set_column(at, rows.schema.field(at), pa.array(metas)))
    ns = PartitionedNamespace.open(ns.root)
    ns.append(_rows([4], 0))
    for r in ns.snapshot.rows.to_pylist():
        if r["object_type"] == "table":
            assert json.loads(r["metadata"])["owner"] == "me"
    assert _bounds_by_g(ns)[0].columns[0].hi == 4


def test_plan_scan_reports_skipped_tables(ns: PartitionedNamespace) -> None:
    from lance_sql.planning.namespace_scan import plan_scan
    from lance_sql.planning.scan_plan import ScanPlan

    for plan in (plan_scan(ns, "id = 15"), plan_scan(ns.root, "id = 15")):
        assert (len(plan.partitions), plan.skipped_by_bounds) == (1, 1)
        assert "(1 skipped by column bounds)" in plan.explain()
        assert ScanPlan.from_json(plan.to_json()).skipped_by_bounds == 1
        got = pa.Table.from_batches(list(plan.to_batches(ns)), schema=ns.schema)
        assert got.num_rows == 0
    plan = plan_scan(ns.root, "id = 20")
    assert plan.skipped_by_bounds == 1
    assert pa.Table.from_batches(list(plan.to_batches(ns)))["id"].to_pylist() == [20]
