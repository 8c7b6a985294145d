"""Key filters (per-partition-table Bloom filters of indexed columns): never a wrong skip.

1. Algebra (many examples): random rows per table give real filter files and
   ``__manifest``-like rows pointing to them; random predicates (=, IN with
   NULLs, AND, OR, literals of other types) are prepared by the planner;
   whenever the filters claim a table cannot match, DataFusion over that
   table's rows must find no matching row.
2. Deterministic cases: skipping happens (and is reported), stale filters (a
   pylance-direct commit) and damaged or missing files never skip, malformed
   pointers are dropped.

The end-to-end story tests are in ``test_key_filters_story.py``.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
from pathlib import Path
from typing import Any

import datafusion
import lance
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_sql
from lance_sql.planning import key_filter_skipping as pk
from lance_sql.planning.namespace_scan import plan_scan
from lance_sql.planning.planner import to_predicate
from lance_sql.tables.namespace import bounds as tb
from lance_sql.tables.namespace import key_filters as kf
from lance_sql.tables.namespace.layout import manifest_uri

EXAMPLES = int(os.environ.get("LANCE_SQL_HYPOTHESIS_EXAMPLES", "300"))
FID = b"lance:field_id"

TYPES = {
    "k": pa.int64(),
    "i": pa.int32(),
    "s": pa.string(),
    "d": pa.date32(),
    "ts": pa.timestamp("us"),
    "u64": pa.uint64(),
}
SCHEMA = pa.schema(
    [pa.field(n, t, metadata={FID: str(i).encode()}) for i, (n, t) in enumerate(TYPES.items())]
)
PLAIN = pa.schema(list(TYPES.items()))
D0 = datetime.date(2020, 1, 1)
T0 = datetime.datetime(2024, 3, 31, 0, 0)
POOLS: dict[str, list[Any]] = {
    "k": [-(2**63), -5, 0, 1, 2, 3, 7, 2**40, 2**63 - 1],
    "i": [-(2**31), -7, 0, 1, 2, 5, 2**31 - 1],
    "s": ["", "a", "ab", "b", "é", "x" * 40, "1", "\U0001f600"],
    "d": [D0 + datetime.timedelta(days=n) for n in (-400, 0, 1, 59)],
    "ts": [T0 + datetime.timedelta(minutes=m) for m in (0, 1, 60)],
    "u64": [0, 1, 2**63 - 1, 2**63, 2**64 - 1],
}
# Literals also come from outside the pools and from other types.
EXTRA: dict[str, list[str]] = {
    "k": ["4", "-1", "1.0", "'1'", "CAST(1 AS INT)", "CAST(2 AS SMALLINT)", "2.5"],
    "i": ["3", "3000000000", "-2147483649", "CAST(5 AS BIGINT)", "'5'", "5.0"],
    "s": ["'aa'", "'c'", "1", "'x'", "'é'"],
    "d": ["DATE '2020-01-03'", "'2020-01-01'", "TIMESTAMP '2020-01-01 00:00:00'"],
    "ts": ["TIMESTAMP '2024-03-31 00:00:30'", "'2024-03-31T00:01:00'", "DATE '2024-03-31'"],
    "u64": ["2", "-1", "CAST(9223372036854775808 AS BIGINT UNSIGNED)", "18446744073709551615"],
}


def _sql(col: str, v: Any) -> str:
    if v is None:
        return "NULL"
    if col == "s":
        return "'" + v.replace("'", "''") + "'"
    if col == "d":
        return f"DATE '{v.isoformat()}'"
    if col == "ts":
        return f"TIMESTAMP '{v.isoformat(sep=' ')}'"
    if col == "u64" and v >= 2**63:
        return f"CAST({v} AS BIGINT UNSIGNED)"
    return str(v)


def literals(col: str) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(POOLS[col]).map(lambda v: _sql(col, v)), st.sampled_from(EXTRA[col])
    )


ROW = st.fixed_dictionaries({c: st.one_of(st.none(), st.sampled_from(POOLS[c])) for c in TYPES})
COLS = st.sampled_from(list(TYPES))


@st.composite
def leaves(draw: Any) -> str:
    col = draw(COLS)
    if draw(st.booleans()):
        return f"{col} = {draw(literals(col))}"
    vals = draw(st.lists(st.one_of(literals(col), st.just("NULL")), min_size=1, max_size=3))
    return f"{col} IN ({', '.join(vals)})"


def predicates(depth: int = 2) -> st.SearchStrategy[str]:
    if depth == 0:
        return leaves()
    sub = predicates(depth - 1)
    return st.one_of(
        leaves(),
        st.tuples(sub, sub).map(lambda t: f"({t[0]}) AND ({t[1]})"),
        st.tuples(sub, sub).map(lambda t: f"({t[0]}) OR ({t[1]})"),
    )


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=PLAIN)


def _count(rows: list[dict[str, Any]], where: str) -> int:
    ctx = datafusion.SessionContext()
    batches = _table(rows).to_batches() or [pa.RecordBatch.from_pylist([], schema=PLAIN)]
    ctx.register_record_batches("t", [batches])
    out = ctx.sql(f"SELECT count(*) AS n FROM t WHERE {where}").to_arrow_table()
    return int(out.column("n")[0].as_py())


def _manifest_rows(root: Path, tables: list[list[dict[str, Any]]]) -> pa.Table:
    """``__manifest``-like rows whose bounds point to real filter files of ``tables``."""
    metas, locs = [], []
    for n, rows in enumerate(tables):
        loc = f"t{n}"
        data = _table(rows)
        refs = {}
        for fid, (name, t) in enumerate(TYPES.items()):
            hashes = kf.hash_values(data.column(name))
            refs[fid] = kf.write_filter(str(root / loc), 3, fid, t, hashes)
        b = tb.TableBounds(3, None, loc, {}, refs)
        metas.append(tb.with_bounds(None, b))
        locs.append(loc)
    n = len(tables)
    return pa.table(
        {
            "object_id": [f"o{i}" for i in range(n)],
            "metadata": metas,
            "read_version": pa.array([3] * n, pa.uint64()),
            "read_branch": pa.array([None] * n, pa.string()),
            "read_tag": pa.array([None] * n, pa.string()),
            "location": locs,
        }
    )


def _check(root: Path, tables: list[list[dict[str, Any]]], where: str) -> int:
    try:
        pred = to_predicate(where, SCHEMA)
    except Exception:
        return 0
    if pk.compile_key_skip(pred) is None:
        return 0
    rows = _manifest_rows(root, tables)
    mask = pk.key_skip_mask(pred, rows, str(root))
    if mask is None:
        return 0
    for n, skipped in enumerate(mask):
        if skipped:
            try:
                got = _count(tables[n], where)
            except Exception:  # DataFusion refuses the query (a failing cast): no rows shown
                continue
            assert got == 0, f"key filter skipped table {n} where {where} matches: {tables[n]}"
    return int(mask.sum())


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.lists(ROW, min_size=0, max_size=5), min_size=1, max_size=3), predicates())
def test_a_claimed_skip_never_hides_a_row(
    tmp_path_factory: pytest.TempPathFactory, tables: list[list[dict[str, Any]]], where: str
) -> None:
    root = tmp_path_factory.mktemp("kf")
    try:
        _check(root, tables, where)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_skips_do_happen(tmp_path: Path) -> None:
    a = [{"k": 1, "i": 5, "s": "a", "d": D0, "ts": T0, "u64": 2**63}]
    b = [{"k": 2, "i": 7, "s": "b", "d": None, "ts": None, "u64": 1}]
    assert _check(tmp_path / "1", [a, b], "k = 1") == 1
    assert _check(tmp_path / "3", [a, b], "s IN ('a', NULL)") == 1
    assert _check(tmp_path / "4", [a, b], "d = DATE '2020-01-01'") == 1
    assert _check(tmp_path / "5", [a, b], "(k = 1 AND s = 'b') OR i = 99") == 2
    assert _check(tmp_path / "6", [a, b], "u64 = 1") == 1
    assert _check(tmp_path / "7", [a, b], "k = 3 OR s <> 'zz'") == 0


# ------------------------------------------------------------------- files, pointers


def test_file_round_trip_and_damage() -> None:
    h = kf.hash_values(pa.array([1, 2, 3], pa.int64()))
    bits = kf.build(h, 1024)
    blob = kf.encode(bits, 1024, kf.K, 3)
    assert np.array_equal(kf.decode(blob), bits)
    for bad in (blob[:10], b"XXXX" + blob[4:], blob[:-1], blob[:-1] + bytes([blob[-1] ^ 1])):
        with pytest.raises(kf.KeyFilterError):
            kf.decode(bad)
    ref = kf.KeyFilterRef("a.bloom", "int64", 1024, kf.K, 4)
    with pytest.raises(kf.KeyFilterError):
        kf.decode(blob, ref)  # another filter's file


def test_malformed_pointers_are_dropped() -> None:
    good = {"file": "v1-f0-a.bloom", "type": "int64", "bits": 1024, "k": 6, "keys": 3}
    assert kf.refs_from_json({"0": good}) == {0: kf.KeyFilterRef.from_json(good)}
    for bad in (
        {**good, "file": "../x.bloom"},
        {**good, "file": "a/b"},
        {**good, "bits": 1000},
        {**good, "k": 0},
        {**good, "keys": -1},
        {**good, "bits": True},
        {"file": "x"},
        "nonsense",
    ):
        assert kf.refs_from_json({"0": bad}) == {}
    assert kf.refs_from_json([good]) == {}


# ----------------------------------------------------------------- on a namespace

NS_SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("region", pa.string()), ("s", pa.string())]
)
SPEC = [{"field_id": "region", "source": "region", "transform": {"type": "identity"}}]


def _rows(ids: list[int]) -> pa.Table:
    return pa.table(
        {"id": ids, "region": [f"r{i % 8}" for i in ids], "s": [f"k{i}" for i in ids]},
        schema=NS_SCHEMA,
    )


def _ns(tmp_path: Path) -> lance_sql.PartitionedNamespace:
    ns = lance_sql.PartitionedNamespace.create(tmp_path / "ns", NS_SCHEMA, SPEC)
    ns.append(_rows(list(range(400))))
    ns.create_scalar_index("id", "BTREE")
    return ns


def _query(root: Any, where: str) -> tuple[list[int], str]:
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", str(root))
    ids = ctx.sql(f"SELECT id FROM t WHERE {where}").to_arrow_table().column("id").to_pylist()
    plan = ctx.sql(f"EXPLAIN SELECT id FROM t WHERE {where}").to_arrow_table()
    return sorted(ids), "\n".join(str(v) for v in plan.column(1).to_pylist())


def _skipped(plan: Any) -> int:
    return int(plan.skipped_by_bounds + plan.skipped_by_key_filter)


def test_namespace_lookups_skip_and_report(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    plan = plan_scan(ns, "id = 17")
    assert plan.skipped_by_key_filter == 7 and len(plan.partitions) == 1
    assert "7 skipped by key filters" in plan.explain()
    assert plan_scan(str(ns.root), "id = 17").skipped_by_key_filter == 7
    assert plan_scan(ns, "s = 'k17'").skipped_by_key_filter == 0  # not indexed
    ids, explain = _query(ns.root, "id = 17")
    assert ids == [17] and "skipped_by_key_filter=7" in explain
    # appends OR the new keys in; overwrites rebuild; both keep skipping
    ns.append(_rows(list(range(400, 420))))
    assert plan_scan(ns, "id = 417").object_ids == plan_scan(ns, "region = 'r1'").object_ids
    assert _skipped(plan_scan(ns, "id = 417")) == 7
    ns.overwrite(_rows([1000, 1001]), partitions="dynamic")
    assert _skipped(plan_scan(ns, "id = 1001")) == 7
    assert _query(ns.root, "id IN (1000, 1001, 17, 3)")[0] == [3, 1000, 1001]  # r1 replaced
    # deletes carry the filter (a superset stays valid)
    ns.delete("id = 3")
    assert _skipped(plan_scan(ns, "id = 5")) == 7
    assert _query(ns.root, "id IN (3, 5)")[0] == [5]


def test_a_pylance_direct_commit_is_never_skipped(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    entry = next(e for e in ns.tables() if e.values.get(next(iter(e.values))) == "r1")
    ds = lance.write_dataset(_rows([999_001]), entry.uri, mode="append")
    mds = lance.dataset(manifest_uri(str(ns.root)))
    mds.update({"read_version": str(ds.version)}, where=f"object_id = '{entry.object_id}'")
    ns = lance_sql.PartitionedNamespace.open(ns.root)
    assert _query(ns.root, "id = 999001")[0] == [999_001]
    assert _skipped(plan_scan(ns, "id = 999001")) == 7


def test_damaged_or_missing_files_never_skip(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    files = sorted((tmp_path / "ns").rglob("*.bloom"))
    assert len(files) == 8
    errors = pk.LOAD_ERRORS[0]
    files[0].write_bytes(b"garbage")
    files[1].unlink()
    data = bytearray(files[2].read_bytes())
    data[-1] ^= 0xFF
    files[2].write_bytes(bytes(data))
    plan = plan_scan(ns, "id = 17")
    damaged = {f.parent.parent.parent.name for f in files[:3]}
    selected = {p.location for p in plan.partitions}
    assert damaged <= selected and pk.LOAD_ERRORS[0] == errors + 3
    assert plan.skipped_by_key_filter == 8 - len(selected) and len(selected) <= 4
    for i in (0, 1, 2, 17, 399):
        assert _query(ns.root, f"id = {i}")[0] == [i]


def test_pointer_is_in_the_bounds_json(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    rows = ns.snapshot.rows.to_pylist()
    meta = [r["metadata"] for r in rows if r["object_type"] == "table"]
    assert len(meta) == 8
    for text in meta:
        b = json.loads(json.loads(text)[tb.BOUNDS_KEY])
        assert set(b["key_filters"]) == {"0"}


# ---------------------------------------------------------------- expire, cleanup


def _filter_files(root: Path) -> set[str]:
    return {f.name for f in root.rglob("*.bloom")}


def _live_files(ns: lance_sql.PartitionedNamespace) -> set[str]:
    return {
        name
        for text in ns.snapshot.rows.column("metadata").to_pylist()
        for name in tb.referenced_key_filters(text)
    }


def test_expire_and_cleanup_remove_only_unreferenced_filters(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    root = tmp_path / "ns"
    ns.append(_rows(list(range(400, 440))))
    ns.overwrite(_rows([1000, 1001]), partitions="dynamic")
    assert _filter_files(root) > _live_files(ns)
    before = _filter_files(root)
    assert ns.expire_versions(older_than=datetime.timedelta(0)).key_filters_removed > 0
    assert _filter_files(root) < before
    # an orphan (a writer that failed before its __manifest commit)
    live = _live_files(lance_sql.PartitionedNamespace.open(root))
    table_dir = next(f for f in root.rglob("*.bloom") if f.name in live).parent
    orphan = table_dir / "v99-f0-orphan.bloom"
    orphan.write_bytes(b"x")
    report = ns.cleanup(older_than=datetime.timedelta(0), dry_run=True)
    assert report.reasons.get("unreferenced key filter", 0) == 1
    ns.cleanup(older_than=datetime.timedelta(0), dry_run=False)
    assert not orphan.exists()
    # dropped tables' directories went with cleanup; what is left is what is live
    assert _filter_files(root) == live
    for i in (5, 418, 1000, 1001):
        assert _query(root, f"id = {i}")[0] == [i]
    assert _skipped(plan_scan(lance_sql.PartitionedNamespace.open(root), "id = 5")) == 7


# ------------------------------------------------------------- write paths, sizing


def test_appends_beyond_capacity_rebuild_and_staged_writes_read_the_table(
    tmp_path: Path,
) -> None:
    ns = lance_sql.PartitionedNamespace.create(tmp_path / "ns", NS_SCHEMA, SPEC)
    ns.append(_rows(list(range(8))))  # one row per partition table
    ns.create_scalar_index("id", "BTREE")
    small = {r.bits for r in _refs(ns)}
    ns.append(_rows(list(range(8, 2008))))  # 250 rows per table: far beyond capacity
    refs = _refs(ns)
    assert all(r.keys == 251 and r.bits > max(small) for r in refs)  # rebuilt from the table
    ns.append(_rows([3000, 3001]))  # room left: ORed in
    assert sorted(r.keys for r in _refs(ns))[-2:] == [252, 252]
    staged = [ns.stage(_rows([5000 + i, 6000 + i])) for i in range(2)]
    ns.commit_staged(staged)
    for i in (0, 7, 1999, 3000, 5000, 6001):
        assert _query(ns.root, f"id = {i}")[0] == [i]
    ns = lance_sql.PartitionedNamespace.open(ns.root)
    for i in (1999, 6001, 5000):  # the staged tables' filters were rebuilt from the tables
        plan = plan_scan(ns, f"id = {i}")
        assert plan.skipped_by_key_filter == 7 and len(plan.partitions) == 1


def _refs(ns: lance_sql.PartitionedNamespace) -> list[kf.KeyFilterRef]:
    ns = lance_sql.PartitionedNamespace.open(ns.root)
    out = []
    for text in ns.snapshot.rows.column("metadata").to_pylist():
        b = tb.bounds_of_metadata(text)
        if b is not None:
            out.extend(b.key_filters.values())
    return out
