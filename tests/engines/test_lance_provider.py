"""lance_sql.SessionContext.register_lance: queries, pushdown, versions, errors, EXPLAIN."""

from __future__ import annotations

import os
import pickle

import datafusion
import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_sql
from lance_sql.engines.datafusion.provider import capture_scans
from lance_sql.engines.datafusion.session_defaults import DEFAULT_BATCH_SIZE
from lance_sql.errors import (
    FormatError,
    NotFoundError,
    SchemaMismatchError,
    UnsupportedFeatureError,
)
from lance_sql.tables.fragments_unit import LanceFragmentsUnit, split_fragments
from lance_sql.tables.scan import STORAGE_BATCH_ROWS, balanced_groups, storage_batch_size


def rows(ctx: lance_sql.SessionContext, sql: str) -> list[dict]:
    return ctx.sql(sql).to_arrow_table().to_pylist()


def scalar(ctx: lance_sql.SessionContext, sql: str) -> object:
    table = ctx.sql(sql).to_arrow_table()
    return table.column(0)[0].as_py()


# -- basics ------------------------------------------------------------------------------


def test_is_a_datafusion_session_context(ctx) -> None:
    assert isinstance(ctx, datafusion.SessionContext)
    ctx.register_record_batches("m", [[pa.record_batch({"a": [1, 2]})]])
    assert scalar(ctx, "SELECT sum(a) FROM m") == 3
    assert ctx.sql_with_options("SELECT 1", datafusion.SQLOptions()).to_pylist() == [
        {"Int64(1)": 1}
    ]


def test_select_star_and_aggregates(ctx, numbers_uri, numbers_table) -> None:
    ctx.register_lance("t", numbers_uri)
    expected = numbers_table(1000)
    got = ctx.sql("SELECT * FROM t").to_arrow_table().sort_by("id")
    assert got.equals(expected)
    assert scalar(ctx, "SELECT count(*) FROM t") == 1000
    assert (
        scalar(ctx, "SELECT count(*) FROM t WHERE x > 3")
        == pc.sum(pc.greater(expected["x"], 3)).as_py()
    )
    assert scalar(ctx, "SELECT sum(id) FROM t WHERE s = 'w1' AND x IS NOT NULL") == sum(
        r["id"] for r in expected.to_pylist() if r["s"] == "w1" and r["x"] is not None
    )


def test_count_star_without_filter_reads_no_data(ctx, numbers_uri) -> None:
    ctx.register_lance("t", numbers_uri)
    metrics = ctx.lance_table("t").metrics
    assert scalar(ctx, "SELECT count(*) FROM t") == 1000
    assert metrics.rows_read == 0  # answered from fragment metadata


def test_empty_dataset(ctx, write_lance, numbers_table) -> None:
    uri = write_lance(numbers_table(0), "empty")
    ctx.register_lance("e", uri)
    assert ctx.sql("SELECT * FROM e").to_arrow_table().num_rows == 0
    assert scalar(ctx, "SELECT count(*) FROM e") == 0


def test_deleted_rows_are_excluded(ctx, numbers_uri) -> None:
    ds = lance.dataset(numbers_uri)
    ds.delete("id % 3 = 0 OR id < 150")
    ctx.register_lance("t", numbers_uri)
    ids = sorted(r["id"] for r in rows(ctx, "SELECT id FROM t"))
    assert ids == [i for i in range(1000) if i % 3 and i >= 150]
    assert scalar(ctx, "SELECT count(*) FROM t") == len(ids)
    assert scalar(ctx, "SELECT count(*) FROM t WHERE x = 2") == sum(
        1 for i in ids if i % 11 and i % 7 == 2
    )


def test_projection_pushdown(ctx, numbers_uri) -> None:
    ctx.register_lance("t", numbers_uri)
    with capture_scans() as records:
        got = ctx.sql("SELECT id FROM t WHERE x = 1").to_arrow_table()
    assert got.column_names == ["id"]
    assert [r.columns for r in records] == [["id"]]
    # the unit asks pylance for exactly those columns: its batches have no others
    unit = records[0].plan.units[0]
    batch = next(iter(unit.to_batches(["id"], pc.field("x") == 1, 64)))
    assert batch.schema.names == ["id"]


def test_filter_pushed_into_lance_scan(ctx, numbers_uri) -> None:
    ctx.register_lance("t", numbers_uri)
    metrics = ctx.lance_table("t").metrics
    got = rows(ctx, "SELECT id FROM t WHERE id BETWEEN 10 AND 19")
    assert sorted(r["id"] for r in got) == list(range(10, 20))
    # Lance applied the filter: only matching rows came out of pylance
    assert metrics.rows_read == 10
    assert metrics.fallback_filters == 0


def test_not_in_and_null_semantics(ctx, numbers_uri, numbers_table) -> None:
    ctx.register_lance("t", numbers_uri)
    expected = [
        r["id"] for r in numbers_table(1000).to_pylist() if r["x"] is not None and r["x"] > 4
    ]
    got = rows(ctx, "SELECT id FROM t WHERE x NOT IN (0, 1, 2, 3, 4, 10, 11)")
    assert sorted(r["id"] for r in got) == expected
    got = rows(ctx, "SELECT id FROM t WHERE NOT (x IN (0, 1, 2, 3, 4, 10, 11))")
    assert sorted(r["id"] for r in got) == expected


def test_filters_pylance_refuses_are_applied_in_pyarrow(ctx, write_lance) -> None:
    table = pa.table(
        {
            "u": pa.array([1, 2, None, 4, 5], pa.uint32()),
            "ls": pa.array(["a", "bb", None, "bb", "c"], pa.large_string()),
            "ts": pa.array([1, 2, None, 4, 5], pa.timestamp("ns")),
        }
    )
    ctx.register_lance("r", write_lance(table, "refused"))
    metrics = ctx.lance_table("r").metrics
    assert sorted(r["u"] for r in rows(ctx, "SELECT u FROM r WHERE u > 1")) == [2, 4, 5]
    assert [r["u"] for r in rows(ctx, "SELECT u FROM r WHERE ls = 'bb' ORDER BY u")] == [2, 4]
    got = rows(ctx, "SELECT u FROM r WHERE ts > arrow_cast(2, 'Timestamp(Nanosecond, None)')")
    assert sorted(r["u"] for r in got) == [4, 5]
    assert scalar(ctx, "SELECT count(*) FROM r WHERE u >= 2") == 3
    assert metrics.fallback_filters >= 3


def test_like_and_functions_stay_in_datafusion(ctx, numbers_uri, numbers_table) -> None:
    ctx.register_lance("t", numbers_uri)
    expected = sum(1 for r in numbers_table(1000).to_pylist() if (r["s"] or "").startswith("w3"))
    assert scalar(ctx, "SELECT count(*) FROM t WHERE s LIKE 'w3%'") == expected
    assert scalar(ctx, "SELECT count(*) FROM t WHERE starts_with(s, 'w3')") == expected


def test_limit_stops_reading_early(ctx, write_lance, numbers_table) -> None:
    uri = write_lance(numbers_table(50_000), "big", max_rows_per_file=10_000)
    ctx.register_lance("t", uri)
    metrics = ctx.lance_table("t").metrics
    assert ctx.sql("SELECT * FROM t LIMIT 10").to_arrow_table().num_rows == 10
    # the session's batches are 131,072 rows, but scans read at most
    # STORAGE_BATCH_ROWS per batch: at most one batch per partition is read
    assert 0 < metrics.rows_read <= 2 * STORAGE_BATCH_ROWS
    metrics.reset()
    assert ctx.sql("SELECT id FROM t WHERE y > 10 LIMIT 10").to_arrow_table().num_rows == 10
    assert 0 < metrics.rows_read <= 4 * STORAGE_BATCH_ROWS


def test_default_session_uses_large_batches(ctx) -> None:
    table = pa.table({"x": pa.array(range(300_000), pa.int64())})
    ctx.register_record_batches("m", [table.to_batches()])
    sizes = [b.num_rows for b in ctx.sql("SELECT x + 1 FROM m").collect()]
    assert max(sizes) == DEFAULT_BATCH_SIZE == 131072
    small = lance_sql.SessionContext(datafusion.SessionConfig())  # a config is used as given
    small.register_record_batches("m", [table.to_batches()])
    assert max(b.num_rows for b in small.sql("SELECT x + 1 FROM m").collect()) == 8192


def test_lance_scans_read_storage_sized_batches(ctx, write_lance) -> None:
    table = pa.table({"id": pa.array(range(300_000), pa.int64())})
    uri = write_lance(table, "big")  # one fragment: one partition reads it all
    ctx.register_lance("t", uri)
    batches = ctx.sql("SELECT id FROM t").collect()
    sizes = [b.num_rows for b in batches]
    assert max(sizes) == STORAGE_BATCH_ROWS and sum(sizes) == 300_000
    got = pa.Table.from_batches(batches).column("id").to_pylist()
    assert sorted(got) == list(range(300_000))
    assert scalar(ctx, "SELECT count(*) FROM t WHERE id % 3 = 0") == 100_000
    assert scalar(ctx, "SELECT count(*) FROM t WHERE id >= 1000") == 299_000
    small = lance_sql.SessionContext(datafusion.SessionConfig())
    small.register_lance("t", uri)
    assert {b.num_rows for b in small.sql("SELECT id FROM t").collect()} <= {8192, 300_000 % 8192}


def test_storage_batch_size_caps_the_engines_batch_size() -> None:
    assert storage_batch_size(131072) == STORAGE_BATCH_ROWS
    assert storage_batch_size(1000) == 1000 and storage_batch_size(None) is None


def test_partitions_follow_target_partitions(numbers_uri) -> None:
    config = datafusion.SessionConfig().with_target_partitions(3)
    ctx = lance_sql.SessionContext(config)
    ctx.register_lance("t", numbers_uri)
    plan = ctx.sql("SELECT * FROM t").execution_plan()
    assert "number_of_fragments=3" in plan.display_indent()
    ctx.sql("SET datafusion.execution.target_partitions = 4")
    assert "number_of_fragments=4" in ctx.sql("SELECT * FROM t").execution_plan().display_indent()


def test_balanced_groups() -> None:
    groups = balanced_groups([(0, 100), (1, 10), (2, 90), (3, 20), (4, 5)], 2)
    totals = sorted(
        sum(dict([(0, 100), (1, 10), (2, 90), (3, 20), (4, 5)])[i] for i in g) for g in groups
    )
    assert totals == [110, 115]
    assert sorted(i for g in groups for i in g) == [0, 1, 2, 3, 4]
    assert balanced_groups([], 4) == []
    assert balanced_groups([(7, 1)], 4) == [[7]]


def test_units_pickle_and_scan_elsewhere(numbers_uri) -> None:
    ds = lance.dataset(numbers_uri)
    units = split_fragments(ds, 3)
    assert len(units) == 3
    assert sorted(i for u in units for i in u.fragment_ids) == list(range(10))
    data = pickle.dumps(units[0])
    assert len(data) < 4096
    unit = pickle.loads(data)
    assert isinstance(unit, LanceFragmentsUnit)
    assert unit.version == ds.version
    got = pa.Table.from_batches(unit.to_batches(["id"], pc.field("x") == 3))
    direct = pa.Table.from_batches(units[0].to_batches(["id"], pc.field("x") == 3))
    assert got.equals(direct)
    assert unit.count_rows() == units[0].estimated_rows
    assert unit.count_rows(pc.field("x") == 3) == direct.num_rows


# -- versions ------------------------------------------------------------------------------


def test_latest_version_is_seen_by_each_new_query(ctx, numbers_uri, numbers_table) -> None:
    ctx.register_lance("t", numbers_uri)
    df = ctx.sql("SELECT count(*) FROM t")
    assert df.to_pylist()[0]["count(*)"] == 1000
    lance.write_dataset(numbers_table(10, offset=1000), numbers_uri, mode="append")
    assert scalar(ctx, "SELECT count(*) FROM t") == 1010
    assert scalar(ctx, "SELECT max(id) FROM t") == 1009


def test_pinned_version_and_tag(ctx, numbers_uri, numbers_table) -> None:
    lance.write_dataset(numbers_table(10, offset=1000), numbers_uri, mode="append")
    ds = lance.dataset(numbers_uri)
    ds.tags.create("first", 1)
    ctx.register_lance("v1", numbers_uri, version=1)
    ctx.register_lance("tagged", numbers_uri, tag="first")
    ctx.register_lance("latest", numbers_uri)
    lance.write_dataset(numbers_table(5, offset=2000), numbers_uri, mode="append")
    assert scalar(ctx, "SELECT count(*) FROM v1") == 1000
    assert scalar(ctx, "SELECT count(*) FROM tagged") == 1000
    assert scalar(ctx, "SELECT count(*) FROM latest") == 1015
    assert scalar(ctx, "SELECT count(*) FROM v1 JOIN latest USING (id)") == 1000


def test_dropped_column_after_registration_is_a_typed_error(ctx, numbers_uri) -> None:
    ctx.register_lance("t", numbers_uri)
    lance.dataset(numbers_uri).drop_columns(["s"])
    with pytest.raises(Exception, match="no column 's'") as info:
        ctx.sql("SELECT id FROM t").to_arrow_table()
    assert numbers_uri in str(info.value)
    ctx.register_lance("t", numbers_uri)  # re-registering picks up the new schema
    assert ctx.sql("SELECT * FROM t").to_arrow_table().column_names == ["id", "x", "y"]


def test_schema_mismatch_error_type(numbers_uri) -> None:
    from lance_sql.tables.lance_table import LanceTable

    table = LanceTable.open(numbers_uri)
    lance.dataset(numbers_uri).drop_columns(["x"])
    with pytest.raises(SchemaMismatchError, match="no column 'x'") as info:
        table.snapshot()
    assert numbers_uri in str(info.value)


# -- registration errors -------------------------------------------------------------------


def test_nonexistent_path(ctx, tmp_path) -> None:
    missing = str(tmp_path / "nope")
    with pytest.raises(NotFoundError) as info:
        ctx.register_lance("t", missing)
    assert missing in str(info.value)
    assert not ctx.table_exist("t")


def test_non_lance_directory(ctx, tmp_path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "data.csv").write_text("a\n1\n")
    with pytest.raises(FormatError, match="not a Lance dataset") as info:
        ctx.register_lance("t", folder)
    assert str(folder) in str(info.value)


def test_unknown_reader_feature_flag(ctx, numbers_uri, set_reader_flag) -> None:
    manifest = set_reader_flag(numbers_uri, 1 << 40)
    with pytest.raises(UnsupportedFeatureError) as info:
        ctx.register_lance("t", numbers_uri)
    assert str(manifest) in str(info.value) or numbers_uri in str(info.value)
    assert not ctx.table_exist("t")


def test_missing_version_and_tag(ctx, numbers_uri) -> None:
    with pytest.raises(NotFoundError, match="version 7") as info:
        ctx.register_lance("t", numbers_uri, version=7)
    assert numbers_uri in str(info.value)
    with pytest.raises(NotFoundError, match="tag 'nope'") as info:
        ctx.register_lance("t", numbers_uri, tag="nope")
    assert numbers_uri in str(info.value)


def test_version_and_tag_together_refused(ctx, numbers_uri) -> None:
    with pytest.raises(ValueError, match="either version") as info:
        ctx.register_lance("t", numbers_uri, version=1, tag="x")
    assert numbers_uri in str(info.value)


def test_lance_table_lookup_error(ctx) -> None:
    with pytest.raises(KeyError, match="nope"):
        ctx.lance_table("nope")


def test_reregister_and_deregister(ctx, numbers_uri, write_lance, numbers_table) -> None:
    ctx.register_lance("t", numbers_uri)
    other = write_lance(numbers_table(5), "other")
    ctx.register_lance("t", other)
    assert scalar(ctx, "SELECT count(*) FROM t") == 5
    ctx.deregister_table("t")
    assert not ctx.table_exist("t")


# -- EXPLAIN -------------------------------------------------------------------------------


def test_explain_shows_the_lance_scan(ctx, numbers_uri) -> None:
    ctx.register_lance("t", numbers_uri)
    table = ctx.sql("EXPLAIN SELECT id, s FROM t WHERE x > 2 AND s LIKE 'w%'").to_arrow_table()
    physical = dict(zip(table["plan_type"].to_pylist(), table["plan"].to_pylist(), strict=True))[
        "physical_plan"
    ]
    lines = physical.splitlines()
    exec_line = next(i for i, line in enumerate(lines) if "DatasetExec:" in line)
    assert "filter_expr=(x > 2)" in lines[exec_line]
    assert "projection=[id, s]" in lines[exec_line]
    lance_line = lines[exec_line + 1].strip()
    assert lance_line.startswith("LanceScan: table=t")
    assert f"uri={numbers_uri}" in lance_line
    assert "version=1 (latest)" in lance_line
    assert "fragments=10" in lance_line and "partitions=" in lance_line
    assert "filter=(x > 2) (in Lance)" in lance_line
    assert lance_line.endswith("columns=[id, s]")
    assert "FilterExec" in physical  # LIKE is evaluated by DataFusion


def test_explain_of_a_join_annotates_both_scans(
    ctx, numbers_uri, write_lance, numbers_table
) -> None:
    ctx.register_lance("a", numbers_uri)
    ctx.register_lance("b", write_lance(numbers_table(20), "small"), version=1)
    out = "\n".join(
        ctx.sql("EXPLAIN SELECT a.id FROM a JOIN b ON a.id = b.id WHERE b.x = 1")
        .to_arrow_table()["plan"]
        .to_pylist()
    )
    assert "LanceScan: table=a" in out
    assert "LanceScan: table=b" in out and "(pinned)" in out
    b_line = next(line for line in out.splitlines() if "LanceScan: table=b" in line)
    assert "filter=(x == 1) (in Lance)" in b_line


def test_explain_shows_filters_pylance_refuses(ctx, write_lance) -> None:
    uri = write_lance(pa.table({"u": pa.array([1, 2], pa.uint32())}), "u")
    ctx.register_lance("u", uri)
    out = "\n".join(
        ctx.sql("EXPLAIN SELECT * FROM u WHERE u > 1").to_arrow_table()["plan"].to_pylist()
    )
    assert "(in pyarrow: pylance refused it" in out


def test_explain_without_lance_tables_is_untouched(ctx) -> None:
    out = ctx.sql("EXPLAIN SELECT 1").to_arrow_table()
    assert "plan" in out.column_names


def test_explain_analyze_still_works(ctx, numbers_uri) -> None:
    ctx.register_lance("t", numbers_uri)
    out = "\n".join(
        ctx.sql("EXPLAIN ANALYZE SELECT count(*) FROM t WHERE x = 1")
        .to_arrow_table()["plan"]
        .to_pylist()
    )
    assert "LanceScan: table=t" in out


def test_scan_unit_dataset_rejects_bad_schema() -> None:
    from lance_sql.engines.datafusion.provider import ScanUnitDataset
    from lance_sql.planning.scan_plan import ScanPlan

    with pytest.raises(TypeError, match="mytable"):
        ScanUnitDataset("not a schema", lambda f: ScanPlan.of_units([]), name="mytable")  # type: ignore[arg-type]


def test_storage_options_are_passed(ctx, numbers_uri) -> None:
    ctx.register_lance("t", numbers_uri, storage_options={})
    assert scalar(ctx, "SELECT count(*) FROM t") == 1000


def test_relative_and_pathlike_uris(ctx, numbers_uri, monkeypatch) -> None:
    monkeypatch.chdir(os.path.dirname(numbers_uri))
    ctx.register_lance("t", "numbers")
    assert scalar(ctx, "SELECT count(*) FROM t") == 1000


def test_benchmark_runs_at_tiny_size(tmp_path) -> None:
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_scan.py"
    spec = importlib.util.spec_from_file_location("bench_scan", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    results = module.main(["--rows", "2000", "--repeat", "1", "--dir", str(tmp_path)])
    assert [r["query"] for r in results][-1] == "SELECT * LIMIT 10"


def test_sql_null_semantics_for_is_in() -> None:
    from lance_sql.tables.scan import with_sql_null_semantics

    table = pa.table({"u": pa.array([None, 0, 3], pa.uint32())})
    expr = ~pc.field("u").isin([0, 1])
    assert table.filter(expr)["u"].to_pylist() == [None, 3]  # pyarrow's own semantics
    fixed = with_sql_null_semantics(expr)
    assert table.filter(fixed)["u"].to_pylist() == [3]
    assert "EMIT_NULL" in str(fixed)
    plain = pc.field("u") > 1
    assert with_sql_null_semantics(plain).equals(plain)


def test_unit_fallback_reads_all_columns_but_returns_the_projection(write_lance) -> None:
    table = pa.table(
        {"u": pa.array([1, 2, None, 4], pa.uint32()), "v": pa.array([10, 20, 30, 40], pa.int64())}
    )
    ds = lance.dataset(write_lance(table, "fb"))
    (unit,) = split_fragments(ds, 2)
    out = pa.Table.from_batches(unit.to_batches(["v"], ~pc.field("u").isin([1, 7, 9]), 2))
    assert out.schema.names == ["v"]
    assert sorted(out["v"].to_pylist()) == [20, 40]
    assert unit.metrics.fallback_filters == 1
    empty = list(unit.to_batches([], pc.field("u") > 1))
    assert sum(b.num_rows for b in empty) == 2
    assert all(b.num_columns == 0 for b in empty)


def test_where_simplified_to_a_constant(ctx, numbers_uri) -> None:
    ctx.register_lance("t", numbers_uri)
    metrics = ctx.lance_table("t").metrics
    assert rows(ctx, "SELECT id FROM t WHERE x = 1 AND x BETWEEN 0 AND 0") == []
    assert scalar(ctx, "SELECT count(*) FROM t WHERE id = 1 AND id = 2") == 0
    assert metrics.rows_read == 0
    assert scalar(ctx, "SELECT count(*) FROM t WHERE 1 = 1") == 1000
    out = "\n".join(
        ctx.sql("EXPLAIN SELECT id FROM t WHERE id = 1 AND id = 2")
        .to_arrow_table()["plan"]
        .to_pylist()
    )
    assert "filter=false (nothing is read)" in out or "EmptyExec" in out


def test_explain_registers_no_tables(ctx, numbers_uri) -> None:
    ctx.register_lance("t", numbers_uri)
    before = ctx.catalog().schema().names()
    ctx.sql("EXPLAIN SELECT * FROM t WHERE x = 1").to_arrow_table()
    ctx.sql("EXPLAIN SELECT 1").to_arrow_table()
    assert ctx.catalog().schema().names() == before


def test_version_must_be_an_int(ctx, numbers_uri) -> None:
    with pytest.raises(TypeError, match="version must be an int") as info:
        ctx.register_lance("t", numbers_uri, version="1")  # type: ignore[arg-type]
    assert numbers_uri in str(info.value)


def test_dataset_removed_after_registration(numbers_uri) -> None:
    import shutil

    from lance_sql.tables.lance_table import LanceTable

    table = LanceTable.open(numbers_uri)
    shutil.rmtree(numbers_uri)
    with pytest.raises(NotFoundError) as info:
        table.snapshot()
    assert numbers_uri in str(info.value)


def test_column_type_changed_after_registration(numbers_uri) -> None:
    from lance_sql.tables.lance_table import LanceTable

    table = LanceTable.open(numbers_uri)
    lance.dataset(numbers_uri).alter_columns({"path": "y", "data_type": pa.float32()})
    with pytest.raises(SchemaMismatchError, match="column 'y' changed type") as info:
        table.snapshot()
    assert numbers_uri in str(info.value)


def test_filter_of_a_wrong_type_is_refused(numbers_uri) -> None:
    from lance_sql.tables.scan import normalize_filter

    with pytest.raises(TypeError, match="str"):
        normalize_filter("x > 1")
    assert normalize_filter(pa.scalar(True)) is None
    assert normalize_filter(pa.scalar(None, pa.bool_())).equals(pc.scalar(False))


def test_partitions_must_be_positive(numbers_uri) -> None:
    from lance_sql.engines.datafusion.lance_provider import LanceDatasetTable
    from lance_sql.tables.lance_table import LanceTable

    with pytest.raises(ValueError, match="mytable: partitions"):
        LanceDatasetTable(LanceTable.open(numbers_uri), name="mytable", partitions=0)


def test_register_table_over_a_lance_name_forgets_it(ctx, numbers_uri) -> None:
    ctx.register_lance("t", numbers_uri)
    ctx.deregister_table("t")
    ctx.register_table("t", ctx.from_pydict({"a": [1]}))
    with pytest.raises(KeyError):
        ctx.lance_table("t")
    assert scalar(ctx, "SELECT count(*) FROM t") == 1


def test_units_are_reused_until_the_version_changes(ctx, numbers_uri, numbers_table) -> None:
    ctx.register_lance("t", numbers_uri)
    with capture_scans() as first:
        ctx.sql("SELECT count(*) FROM t WHERE x = 1").to_arrow_table()
    with capture_scans() as second:
        ctx.sql("SELECT id FROM t WHERE x = 2").to_arrow_table()
    assert first[0].plan.units is second[0].plan.units
    lance.write_dataset(numbers_table(10, offset=1000), numbers_uri, mode="append")
    with capture_scans() as third:
        ctx.sql("SELECT id FROM t").to_arrow_table()
    assert third[0].plan.units is not first[0].plan.units
    assert {u.version for u in third[0].plan.units} == {2}


def test_projection_reads_fewer_bytes(ctx, write_lance) -> None:
    n = 20_000
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "wide": pa.array([f"{i:08d}" * 16 for i in range(n)]),
        }
    )
    ctx.register_lance("w", write_lance(table, "wide"))
    ds = ctx.lance_table("w").table.snapshot().dataset  # the open dataset scans reuse
    ds.io_stats_incremental()
    assert scalar(ctx, "SELECT sum(id) FROM w") == n * (n - 1) // 2
    narrow = ds.io_stats_incremental().read_bytes
    assert ctx.sql("SELECT * FROM w").to_arrow_table().num_rows == n
    full = ds.io_stats_incremental().read_bytes
    assert 0 < narrow * 5 < full


def test_storage_batches_keep_every_type(ctx, write_lance) -> None:
    """Storage-sized batches carry nested, dictionary and string columns intact."""
    n = 40_000
    ids = pa.array(range(n), pa.int64())
    table = pa.table(
        {
            "id": ids,
            "s": pa.array([None if i % 7 == 0 else f"v{i % 97}" for i in range(n)]),
            "d": pa.array([f"k{i % 5}" for i in range(n)]).dictionary_encode(),
            "l": pa.array([[i, i + 1] if i % 3 else None for i in range(n)]),
            "st": pa.array([{"a": i, "b": str(i)} for i in range(n)]),
            "ts": pc.cast(ids, pa.timestamp("us", "UTC")),
        }
    )
    uri = write_lance(table, "typed")
    ctx.register_lance("t", uri)
    batches = ctx.sql("SELECT * FROM t").collect()
    assert max(b.num_rows for b in batches) == STORAGE_BATCH_ROWS
    got = pa.Table.from_batches(batches).sort_by("id")
    expected = lance.dataset(uri).to_table().sort_by("id")
    assert got.schema.equals(expected.schema)
    assert got.equals(expected)


def test_fallback_filter_path_reads_storage_batches(ctx, write_lance) -> None:
    """pylance refuses filters on uint64; the pyarrow fallback reads the same batch sizes."""
    n = 60_000
    uri = write_lance(pa.table({"u": pa.array(range(n), pa.uint64())}), "unsigned")
    ctx.register_lance("t", uri)
    metrics = ctx.lance_table("t").metrics
    batches = ctx.sql("SELECT u FROM t WHERE u >= 10").collect()
    assert metrics.fallback_filters >= 1
    assert sum(b.num_rows for b in batches) == n - 10
    assert 8192 < max(b.num_rows for b in batches) <= STORAGE_BATCH_ROWS
    metrics.reset()
    assert ctx.sql("SELECT u FROM t WHERE u >= 10 LIMIT 3").to_arrow_table().num_rows == 3
    assert 0 < metrics.rows_read <= 2 * STORAGE_BATCH_ROWS
