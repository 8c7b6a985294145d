"""Adversarial review (session 6) of column bounds and the manifest caches: wrong rows.

Each story interleaves lance-sql operations with schema evolution, direct pylance
commits on partition tables, stale namespace objects, a root deleted and recreated,
and time travel; after each step the SQL answers of a long-lived
``lance_sql.SessionContext`` (and of a fresh one) must equal DuckDB's over a
pyarrow model of the rows.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import lance
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SPEC = [{"field_id": "k", "source": "k", "transform": {"type": "identity"}}]


@pytest.fixture
def root(tmp_path: Path) -> Iterator[str]:
    yield str(tmp_path / "ns")


def _sql(root: str, where: str, cols: str, ctx: Any = None) -> list[tuple[Any, ...]]:
    if ctx is None:
        ctx = lance_sql.SessionContext()
        ctx.register_namespace("t", root)
    got = ctx.sql(f"SELECT {cols} FROM t WHERE {where}").to_arrow_table().to_pylist()
    return sorted((tuple(r.values()) for r in got), key=repr)


def _oracle(model: pa.Table, where: str, cols: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    con.register("t", model)
    got = con.execute(f"SELECT {cols} FROM t WHERE {where}").fetchall()
    return sorted((tuple(r) for r in got), key=repr)


def _check(root: str, model: pa.Table, wheres: list[str], cols: str, ctx: Any) -> None:
    """``ctx``: a long-lived context (None after schema changes, which need a new one)."""
    for where in wheres:
        want = _oracle(model, where, cols)
        if ctx is not None:
            assert _sql(root, where, cols, ctx) == want, f"long-lived ctx: WHERE {where}"
        assert _sql(root, where, cols) == want, f"fresh ctx: WHERE {where}"


def _ctx(root: str) -> Any:
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    return ctx


def _table_uri(ns: PartitionedNamespace, k: int) -> str:
    (entry,) = [e for e in ns.tables() if e.values.get("k") == k]
    return entry.uri


# ------------------------------------------------------------------ schema evolution


def test_drop_and_readd_column_same_name(root: str) -> None:
    """A dropped column re-added under its old name is NULL for old rows (new field id)."""
    schema = pa.schema([("k", pa.int64()), ("x", pa.int64())])
    ns = PartitionedNamespace.create(root, schema, SPEC)
    ns.append(pa.table({"k": [1, 1, 2], "x": [10, 11, 20]}, schema=schema))
    assert _sql(root, "x = 10", "x", _ctx(root)) == [(10,)]
    ns.drop_columns(["x"])
    ns.add_columns([pa.field("x", pa.int64())])
    ns.append(pa.table({"k": [1, 3], "x": [500, 30]}, schema=schema))
    model = pa.table({"k": [1, 1, 2, 1, 3], "x": [None, None, None, 500, 30]}, schema=schema)
    wheres = ["x = 10", "x = 500", "x IS NULL", "x > 25", "x IS NOT NULL", "x < 15"]
    _check(root, model, wheres, "k, x", None)


def test_drop_and_readd_column_other_type(root: str) -> None:
    schema = pa.schema([("k", pa.int64()), ("x", pa.string())])
    ns = PartitionedNamespace.create(root, schema, SPEC)
    ns.append(pa.table({"k": [1, 2], "x": ["b", "c"]}, schema=schema))
    ns.drop_columns(["x"])
    ns.add_columns([pa.field("x", pa.int64())])
    s2 = pa.schema([("k", pa.int64()), ("x", pa.int64())])
    ns.append(pa.table({"k": [1], "x": [7]}, schema=s2))
    model = pa.table({"k": [1, 2, 1], "x": [None, None, 7]}, schema=s2)
    _check(root, model, ["x = 7", "x IS NULL", "x > 100"], "k, x", None)


def test_rename_keeps_bounds_by_field_id(root: str) -> None:
    schema = pa.schema([("k", pa.int64()), ("x", pa.int64()), ("y", pa.int64())])
    ns = PartitionedNamespace.create(root, schema, SPEC)
    ns.append(pa.table({"k": [1, 2], "x": [1, 100], "y": [100, 1]}, schema=schema))
    ns.rename_column("x", "tmp")
    ns.rename_column("y", "x")
    ns.rename_column("tmp", "y")  # x and y swapped names
    model = pa.table({"k": [1, 2], "y": [1, 100], "x": [100, 1]})
    _check(root, model, ["x = 100", "y = 100", "x < 50", "y > 50"], "k, x, y", None)


def test_rename_after_registration_keeps_field_ids(root: str) -> None:
    schema = pa.schema([("k", pa.int64()), ("x", pa.int64()), ("y", pa.int64())])
    ns = PartitionedNamespace.create(root, schema, SPEC)
    ns.append(pa.table({"k": [1, 2], "x": [1, 100], "y": [100, 1]}, schema=schema))
    ctx = _ctx(root)
    ns.rename_column("x", "tmp")
    ns.rename_column("y", "x")
    ns.rename_column("tmp", "y")
    # A registration keeps its schema and matches columns by field id (as an Iceberg
    # DataFrame analyzed before a rename does): registered "x" is the column now named "y".
    assert _sql(root, "x = 100", "k, x, y", ctx) == [(2, 100, 1)]
    assert _sql(root, "x = 100", "k, x, y", _ctx(root)) == [(1, 100, 1)]  # registered anew


# ------------------------------------------------------------- row operations vs bounds


def test_update_moves_values_outside_old_bounds(root: str) -> None:
    schema = pa.schema([("k", pa.int64()), ("x", pa.int64()), ("s", pa.string())])
    ns = PartitionedNamespace.create(root, schema, SPEC)
    ctx = _ctx(root)
    p = "p" * 32
    ns.append(pa.table({"k": [1, 1, 2], "x": [1, 2, 3], "s": [p + "a", p + "b", "c"]}, schema))
    ns.update({"x": "x + 1000", "s": f"'{p}zz'"}, where="x = 2")
    ns.delete("x = 3")
    ns.append(pa.table({"k": [2], "x": [3], "s": [p]}, schema=schema))
    ns.overwrite(
        pa.table({"k": [1], "x": [-5], "s": [p + "c"]}, schema=schema), partitions="dynamic"
    )
    ns.compact()
    model = pa.table({"k": [2, 1], "x": [3, -5], "s": [p, p + "c"]}, schema=schema)
    wheres = [
        "x = 1002",
        "x = 3",
        "x = -5",
        "x > 100",
        f"s = '{p}c'",
        f"s > '{p}b'",
        f"s LIKE '{p}%'",
        f"s = '{p}'",
        f"s < '{p}a'",
    ]
    _check(root, model, wheres, "k, x, s", ctx)


# --------------------------------------------------------- direct pylance commits


def test_pylance_commits_on_a_partition_table_then_lance_sql(root: str) -> None:
    """Direct pylance deletes/updates/merge_insert on a partition table are not part of the
    namespace (restored away by the next lance-sql write); answers follow __manifest."""
    schema = pa.schema([("k", pa.int64()), ("x", pa.int64())])
    ns = PartitionedNamespace.create(root, schema, SPEC)
    ns.append(pa.table({"k": [1, 1, 2], "x": [1, 2, 3]}, schema=schema))
    ctx = _ctx(root)
    uri = _table_uri(ns, 1)
    ds = lance.dataset(uri)
    ds.delete("x = 1")
    lance.dataset(uri).update({"x": "x + 900"})
    src = pa.table({"k": [1], "x": [777]}, schema=ds.schema)
    lance.dataset(uri).merge_insert("x").when_not_matched_insert_all().execute(src)
    model = pa.table({"k": [1, 1, 2], "x": [1, 2, 3]}, schema=schema)
    wheres = ["x = 1", "x = 902", "x = 777", "x > 500", "x < 3"]
    _check(root, model, wheres, "k, x", ctx)
    ns2 = PartitionedNamespace.open(root)
    ns2.append(pa.table({"k": [1], "x": [5]}, schema=schema))
    model = pa.concat_tables([model, pa.table({"k": [1], "x": [5]}, schema=schema)])
    _check(root, model, [*wheres, "x = 5", "x >= 5"], "k, x", ctx)
    ns2.delete("x = 2")
    ns2.append(pa.table({"k": [1], "x": [2]}, schema=schema))
    _check(root, model, [*wheres, "x = 2"], "k, x", ctx)


def test_pylance_add_columns_on_a_partition_table(root: str) -> None:
    schema = pa.schema([("k", pa.int64()), ("x", pa.int64())])
    ns = PartitionedNamespace.create(root, schema, SPEC)
    ns.append(pa.table({"k": [1, 2], "x": [1, 2]}, schema=schema))
    uri = _table_uri(ns, 1)
    lance.dataset(uri).add_columns({"z": "x * 10"})
    ns.append(pa.table({"k": [1], "x": [50]}, schema=schema))
    model = pa.table({"k": [1, 2, 1], "x": [1, 2, 50]}, schema=schema)
    _check(root, model, ["x = 50", "x = 1", "x > 10"], "k, x", _ctx(root))


# --------------------------------------------------- stale objects and other processes


def test_stale_namespace_object_operations(root: str) -> None:
    schema = pa.schema([("k", pa.int64()), ("x", pa.int64())])
    ns1 = PartitionedNamespace.create(root, schema, SPEC)
    ns1.append(pa.table({"k": [1, 2], "x": [1, 2]}, schema=schema))
    ns2 = PartitionedNamespace.open(root)
    ctx = _ctx(root)
    assert _sql(root, "x = 1", "x", ctx) == [(1,)]
    ns1.append(pa.table({"k": [1], "x": [100]}, schema=schema))
    ns2.append(pa.table({"k": [1], "x": [200]}, schema=schema))  # rebased or refused
    rows = {r["x"] for r in PartitionedNamespace.open(root).to_table().to_pylist()}
    model = pa.table({"x": sorted(rows)})
    assert {1, 2, 100} <= rows
    _check(root, model, ["x = 100", "x = 200", "x > 50"], "x", ctx)
    try:
        ns2.delete("x = 100")
    except Exception:
        ns2.refresh()
        ns2.delete("x = 100")
    rows.discard(100)
    _check(root, pa.table({"x": sorted(rows)}), ["x = 100", "x > 50", "x = 1"], "x", ctx)
    ns1.refresh()
    ns1.update({"x": "x + 5000"}, where="x = 1")
    rows = (rows - {1}) | {5001}
    _check(root, pa.table({"x": sorted(rows)}), ["x = 1", "x = 5001", "x > 4000"], "x", ctx)


def test_root_deleted_and_recreated_same_versions(root: str) -> None:
    """Same __manifest version numbers, different rows: no cache may answer from the old."""
    schema = pa.schema([("k", pa.int64()), ("x", pa.int64())])
    ctx = _ctx_after = None
    for gen, xs in enumerate(([1, 2, 3], [1000, 2000, 3000])):
        shutil.rmtree(root, ignore_errors=True)
        ns = PartitionedNamespace.create(root, schema, SPEC)
        ns.append(pa.table({"k": [1, 1, 2], "x": xs}, schema=schema))
        ns.delete(f"x = {xs[0]}")
        if ctx is None:
            ctx = _ctx(root)
            assert _sql(root, "x = 2", "x", ctx) == [(2,)]
        _ctx_after = _ctx(root)
        model = pa.table({"k": [1, 2], "x": xs[1:]}, schema=schema)
        wheres = ["x = 2", "x = 2000", "x > 500", "x = 1", "x = 1000"]
        _check(root, model, wheres, "k, x", _ctx_after)
        ns_view = PartitionedNamespace.open(root)
        assert sorted(ns_view.to_table()["x"].to_pylist()) == xs[1:], gen


def test_time_travel_versions_after_changes(root: str) -> None:
    schema = pa.schema([("k", pa.int64()), ("x", pa.int64())])
    ns = PartitionedNamespace.create(root, schema, SPEC)
    ns.append(pa.table({"k": [1, 2], "x": [1, 2]}, schema=schema))
    v1 = ns.manifest_version
    ns.update({"x": "x + 100"}, where="x = 1")
    v2 = ns.manifest_version
    ns.overwrite(pa.table({"k": [1], "x": [7]}, schema=schema), partitions="dynamic")
    for v, xs in ((v1, [1, 2]), (v2, [2, 101]), (None, [2, 7])):
        ctx = lance_sql.SessionContext()
        ctx.register_namespace("t", root, version=v)
        for where in ("x = 1", "x = 101", "x = 7", "x > 50", "x < 5"):
            want = _oracle(pa.table({"x": xs}), where, "x")
            assert _sql(root, where, "x", ctx) == want, (v, where)


# ------------------------------------------------------------------ staged writes


def test_staged_writes_interleaved_with_appends_deletes_and_pylance(root: str) -> None:
    schema = pa.schema([("k", pa.int64()), ("x", pa.int64())])
    ns = PartitionedNamespace.create(root, schema, SPEC)
    ns.append(pa.table({"k": [1, 2], "x": [1, 2]}, schema=schema))
    ctx = _ctx(root)
    truth = {1, 2}
    stager = PartitionedNamespace.open(root)
    s1 = stager.stage(pa.table({"k": [1, 3], "x": [10, 30]}, schema=schema), write_id="w")
    PartitionedNamespace.open(root).append(pa.table({"k": [1], "x": [500]}, schema=schema))
    truth.add(500)
    lance.dataset(_table_uri(PartitionedNamespace.open(root), 1)).delete("x = 1")  # foreign
    PartitionedNamespace.open(root).delete("x = 2")
    truth.discard(2)
    s2 = stager.stage(pa.table({"k": [1], "x": [-7]}, schema=schema), write_id="w")
    try:
        PartitionedNamespace.open(root).commit_staged([s1, s2])
        truth |= {10, 30, -7}
    except Exception as exc:  # a refused commit leaves the namespace as it was
        assert "onflict" in f"{type(exc).__name__} {exc}", exc
    model = pa.table({"x": sorted(truth)}, schema=pa.schema([("x", pa.int64())]))
    wheres = ["x = 1", "x = 500", "x = 10", "x = -7", "x < 0", "x > 100", "x = 2", "x = 30"]
    _check(root, model, wheres, "x", ctx)
    ns.refresh()
    ns.append(pa.table({"k": [1], "x": [7000]}, schema=schema))
    truth.add(7000)
    model = pa.table({"x": sorted(truth)}, schema=pa.schema([("x", pa.int64())]))
    _check(root, model, [*wheres, "x = 7000", "x > 6000"], "x", ctx)


# ------------------------------------------- early materialization with deletes and NaN


def test_sampled_early_materialization_after_deletes(root: str) -> None:
    """A partition large enough to be sampled (lance_sql.tables.materialization), with row
    deletes, NaN and NULL-only columns: every projection and filter equals DuckDB."""
    import numpy as np

    n = 40_000
    rng = np.random.default_rng(7)
    x = rng.integers(0, 100, n)
    f = rng.random(n)
    f[::97] = np.nan
    schema = pa.schema(
        [("k", pa.int64()), ("x", pa.int64()), ("f", pa.float64()), ("z", pa.int64())]
    )
    data = pa.table(
        {"k": np.ones(n, np.int64), "x": x, "f": f, "z": pa.nulls(n, pa.int64())}, schema=schema
    )
    ns = PartitionedNamespace.create(root, schema, SPEC)
    ns.append(data)
    ns.delete("x % 3 = 0 AND x > 50")
    model = _oracle_table(data, "NOT (x % 3 = 0 AND x > 50)")
    wheres = ["x > 10", "f > 0.5", "isnan(f)", "z IS NULL", "z = 1", "x = 99 OR f < 0.01"]
    for where in wheres:
        want = _oracle(model, where, "k, x, f, z")
        got = _sql(root, where, "k, x, f, z")
        assert list(map(repr, got)) == list(map(repr, want)), where  # repr: NaN equals NaN


def _oracle_table(t: pa.Table, where: str) -> pa.Table:
    con = duckdb.connect()
    con.register("t", t)
    return con.execute(f"SELECT * FROM t WHERE {where}").to_arrow_table()


# ------------------------------------- a commit between a row operation's read and write


@pytest.mark.parametrize("when", ["before_read", "after_read"])
@pytest.mark.parametrize("other", ["append_same", "append_other", "delete_same", "pylance"])
def test_commit_interleaved_into_a_delete(root: str, when: str, other: str) -> None:
    """Another namespace object commits while a delete runs (between ``Mutation`` reading
    ``__manifest`` and its commit); the delete is replayed or refused, never half-applied."""
    from lance_sql.tables.namespace.delete import delete_matching
    from lance_sql.tables.namespace.mutation import run

    schema = pa.schema([("k", pa.int64()), ("x", pa.int64())])
    ns = PartitionedNamespace.create(root, schema, SPEC)
    ns.append(pa.table({"k": [1, 1, 2], "x": [1, 2, 3]}, schema=schema))
    ctx = _ctx(root)
    assert _sql(root, "x = 2", "x", ctx) == [(2,)]
    truth = {1, 2, 3}
    attempts = []

    def interleave() -> None:
        other_ns = PartitionedNamespace.open(root)
        if other == "append_same":
            other_ns.append(pa.table({"k": [1, 1], "x": [2, 900]}, schema=schema))
            truth.update({900})
            extra.append(2)
        elif other == "append_other":
            other_ns.append(pa.table({"k": [3], "x": [2]}, schema=schema))
            extra.append(2)
        elif other == "delete_same":
            other_ns.delete("x = 1")
            truth.discard(1)
        else:
            lance.dataset(_table_uri(other_ns, 1)).delete("x = 1")  # not part of the namespace

    extra: list[int] = []

    def build(m: Any) -> int:
        attempts.append(1)
        if len(attempts) == 1 and when == "before_read":
            interleave()
        n = delete_matching(m, "x = 2")
        if len(attempts) == 1 and when == "after_read":
            interleave()
        return n

    try:
        run(ns, build)
        truth.discard(2)
        deleted_all = True
    except Exception as exc:
        assert "onflict" in f"{type(exc).__name__} {exc}", exc
        deleted_all = False
    rows = sorted(PartitionedNamespace.open(root).to_table()["x"].to_pylist())
    # deleted: every x = 2, the other writer's too; refused: nothing of the delete happened
    want = sorted(v for v in truth if v != 2) if deleted_all else sorted([*truth, *extra])
    assert rows == want, (rows, want, attempts)
    model = pa.table({"x": rows}, schema=pa.schema([("x", pa.int64())]))
    _check(root, model, ["x = 2", "x = 1", "x = 900", "x > 500", "x < 3"], "x", ctx)


def test_manifest_restored_to_an_older_version_with_pylance(root: str) -> None:
    """``__manifest`` rolled back by a pylance restore: the older pins (and their bounds)
    are the namespace again; a long-lived object and context follow it."""
    schema = pa.schema([("k", pa.int64()), ("x", pa.int64())])
    ns = PartitionedNamespace.create(root, schema, SPEC)
    ns.append(pa.table({"k": [1, 2], "x": [1, 2]}, schema=schema))
    old = ns.manifest_version
    ctx = _ctx(root)
    ns.append(pa.table({"k": [1, 3], "x": [100, 300]}, schema=schema))
    ns.delete("x = 1")
    assert _sql(root, "x = 100", "x", ctx) == [(100,)]
    mds = lance.dataset(f"{root}/__manifest", version=old)
    mds.restore()
    model = pa.table({"x": [1, 2]}, schema=pa.schema([("x", pa.int64())]))
    wheres = ["x = 1", "x = 100", "x = 300", "x > 50", "x < 2"]
    _check(root, model, wheres, "x", ctx)
    ns.append(pa.table({"k": [1], "x": [5]}, schema=schema))  # the stale object appends
    ns.delete("x = 2")
    model = pa.table({"x": [1, 5]}, schema=pa.schema([("x", pa.int64())]))
    _check(root, model, [*wheres, "x = 5", "x = 2"], "x", ctx)
    assert sorted(PartitionedNamespace.open(root).to_table()["x"].to_pylist()) == [1, 5]
