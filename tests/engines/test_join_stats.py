"""Join statistics from Lance metadata (``join_stats``): row-bound hints, never a changed answer.

Every query runs three ways: lance-sql with the pass (a low broadcast
threshold, so the small tables here are hinted), lance-sql without it, and
DuckDB over the same Arrow tables (the oracle).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import duckdb
import lance
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.engines.datafusion.session_defaults import default_config

THRESHOLD = 500  # rows: the dimension tables below (<= 300 rows) are hinted, the fact (3000) not


def _fact(n: int = 3000) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "dim_id": pa.array([None if i % 17 == 0 else i % 250 for i in range(n)], pa.int64()),
            "v": pa.array([float(i % 97) for i in range(n)], pa.float64()),
        }
    )


def _dim(n: int = 300) -> pa.Table:
    # ids 0..299: fact rows point at 0..249, so 50 dimension rows match nothing
    return pa.table(
        {
            "dim_id": pa.array(range(n), pa.int64()),
            "name": pa.array([f"d{i % 9}" for i in range(n)], pa.string()),
        }
    )


def _tiny() -> pa.Table:
    return pa.table({"name": ["d1", "d2", "d4", "zz"], "w": [1, 2, 4, 9]})


@pytest.fixture
def tables(write_lance: Callable[..., str]) -> dict[str, tuple[str, pa.Table]]:
    out = {}
    for name, table, kw in (
        ("fact", _fact(), {"max_rows_per_file": 1000}),
        ("dim", _dim(), {}),
        ("tiny", _tiny(), {}),
    ):
        out[name] = (write_lance(table, name, **kw), table)
    return out


def _context(tables: dict[str, tuple[str, pa.Table]], *, stats: bool) -> Any:
    # SHOW (how the pass reads the threshold) needs the information schema
    ctx = lance_sql.SessionContext(default_config().with_information_schema(True))
    ctx.join_stats_enabled = stats
    ctx.sql(f"SET datafusion.optimizer.hash_join_single_partition_threshold_rows = {THRESHOLD}")
    for name, (uri, _) in tables.items():
        ctx.register_lance(name, uri)
    return ctx


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return sorted(zip(*cols, strict=True), key=repr)


def _duck(tables: dict[str, tuple[str, pa.Table]], sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    for name, (_, table) in tables.items():
        con.register(name, table)
    return sorted(con.execute(sql).fetchall(), key=repr)


QUERIES = {
    "inner_small_right": "SELECT f.id, d.name FROM fact f JOIN dim d ON f.dim_id = d.dim_id",
    "inner_small_left": "SELECT f.id, d.name FROM dim d JOIN fact f ON f.dim_id = d.dim_id",
    "inner_three": (
        "SELECT f.id, d.name, t.w FROM fact f JOIN dim d ON f.dim_id = d.dim_id "
        "JOIN tiny t ON t.name = d.name WHERE f.v > 10"
    ),
    "left_small_right": (
        "SELECT f.id, d.name FROM fact f LEFT JOIN dim d ON f.dim_id = d.dim_id AND d.name <> 'd3'"
    ),
    "left_small_left": "SELECT d.dim_id, f.id FROM dim d LEFT JOIN fact f ON f.dim_id = d.dim_id",
    "right_small_left": "SELECT d.dim_id, f.id FROM dim d RIGHT JOIN fact f ON f.dim_id = d.dim_id",
    "right_small_right": (
        "SELECT f.id, d.dim_id FROM fact f RIGHT JOIN dim d ON f.dim_id = d.dim_id"
    ),
    "full": "SELECT f.id, d.dim_id FROM fact f FULL JOIN dim d ON f.dim_id = d.dim_id",
    "semi_in": "SELECT id FROM fact WHERE dim_id IN (SELECT dim_id FROM dim WHERE name = 'd2')",
    "semi_exists": (
        "SELECT d.dim_id FROM dim d WHERE EXISTS (SELECT 1 FROM fact f WHERE f.dim_id = d.dim_id)"
    ),
    "anti_not_exists": (
        "SELECT d.dim_id FROM dim d "
        "WHERE NOT EXISTS (SELECT 1 FROM fact f WHERE f.dim_id = d.dim_id)"
    ),
    "anti_fact": (
        "SELECT f.id FROM fact f "
        "WHERE NOT EXISTS (SELECT 1 FROM dim d WHERE f.dim_id = d.dim_id AND d.name = 'd1')"
    ),
    "aggregate_side": (
        "SELECT f.id, a.n FROM fact f JOIN "
        "(SELECT name, count(*) AS n FROM dim GROUP BY name) a ON a.n = f.dim_id"
    ),
    "global_aggregate_side": (
        "SELECT f.id FROM fact f, (SELECT max(dim_id) AS m FROM dim) a WHERE f.dim_id * 2 > a.m"
    ),
    "self_join": (
        "SELECT a.dim_id, b.dim_id FROM dim a JOIN dim b ON a.name = b.name AND a.dim_id < b.dim_id"
    ),
    "union_side": (
        "SELECT f.id, u.name FROM fact f JOIN "
        "(SELECT dim_id, name FROM dim UNION ALL SELECT 7 AS dim_id, 'x' AS name) u "
        "ON u.dim_id = f.dim_id"
    ),
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_same_answer_with_and_without_hints(
    name: str, tables: dict[str, tuple[str, pa.Table]]
) -> None:
    sql = QUERIES[name]
    on, off = _context(tables, stats=True), _context(tables, stats=False)
    want = _duck(tables, sql)
    assert _rows(on.sql(sql).to_arrow_table()) == want
    assert _rows(off.sql(sql).to_arrow_table()) == want


def test_small_side_is_broadcast_and_reported(tables: dict[str, tuple[str, pa.Table]]) -> None:
    ctx = _context(tables, stats=True)
    sql = QUERIES["inner_small_right"]
    done = ctx.sql(sql).lance_rewrite()
    assert len(done.join_stats) == 1
    assert "dim v1" in done.join_stats[0] and "at most 300 rows" in done.join_stats[0]
    physical = done.dataframe.execution_plan().display_indent()
    assert "mode=CollectLeft" in physical
    # DataFusion put the hinted side on the build (left) side: its scan is the first one
    first_scan = next(line for line in physical.splitlines() if "DatasetExec" in line)
    assert "projection=[dim_id, name]" in first_scan
    explain = "\n".join(p or "" for p in ctx.sql("EXPLAIN " + sql).to_pydict()["plan"])
    assert "join statistics: right input (dim v1): at most 300 rows" in explain
    assert "table=dim" in explain  # the pinned copy keeps the table's name in EXPLAIN


def test_without_the_pass_the_join_is_partitioned(
    tables: dict[str, tuple[str, pa.Table]],
) -> None:
    ctx = _context(tables, stats=False)
    done = ctx.sql(QUERIES["inner_small_right"]).lance_rewrite()
    assert done.join_stats == []
    assert "mode=Partitioned" in done.dataframe.execution_plan().display_indent()


def test_large_inputs_get_no_hint(tables: dict[str, tuple[str, pa.Table]]) -> None:
    ctx = _context(tables, stats=True)
    done = ctx.sql("SELECT a.id FROM fact a JOIN fact b ON a.id = b.dim_id").lance_rewrite()
    assert done.join_stats == []


def test_bounds_of_derived_inputs(tables: dict[str, tuple[str, pa.Table]]) -> None:
    ctx = _context(tables, stats=True)
    lines = ctx.sql(QUERIES["global_aggregate_side"]).lance_rewrite().join_stats
    assert any("at most 1 rows" in line for line in lines), lines
    lines = ctx.sql(QUERIES["union_side"]).lance_rewrite().join_stats
    assert any("at most 301 rows" in line for line in lines), lines
    lines = ctx.sql(QUERIES["inner_three"]).lance_rewrite().join_stats
    assert any("tiny v1" in line and "at most 4 rows" in line for line in lines), lines


def test_new_rows_are_counted_and_read(tables: dict[str, tuple[str, pa.Table]]) -> None:
    """A hint never hides rows appended after an earlier query: it counts the version it reads."""
    ctx = _context(tables, stats=True)
    sql = "SELECT f.id, d.name FROM fact f JOIN dim d ON f.dim_id = d.dim_id"
    before = ctx.sql(sql).to_arrow_table().num_rows
    uri, _ = tables["dim"]
    extra = pa.table(
        {"dim_id": pa.array([1, 2], pa.int64()), "name": pa.array(["n1", "n2"], pa.string())}
    )
    lance.write_dataset(extra, uri, mode="append")
    tables["dim"] = (uri, pa.concat_tables([_dim(), extra]))
    done = ctx.sql(sql).lance_rewrite()
    assert "dim v2" in done.join_stats[0] and "at most 302 rows" in done.join_stats[0]
    after = ctx.sql(sql).to_arrow_table()
    assert after.num_rows > before
    assert _rows(after) == _duck(tables, sql)


def test_deleted_rows_lower_the_bound(tables: dict[str, tuple[str, pa.Table]]) -> None:
    uri, table = tables["dim"]
    lance.dataset(uri).delete("dim_id >= 200")
    tables["dim"] = (uri, table.filter(pa.compute.less(table.column("dim_id"), 200)))
    ctx = _context(tables, stats=True)
    sql = QUERIES["left_small_left"]
    done = ctx.sql(sql).lance_rewrite()
    assert any("at most 200 rows" in line for line in done.join_stats), done.join_stats
    assert _rows(ctx.sql(sql).to_arrow_table()) == _duck(tables, sql)


def test_pinned_copy_counts_into_the_table_metrics(
    tables: dict[str, tuple[str, pa.Table]],
) -> None:
    ctx = _context(tables, stats=True)
    before = ctx.lance_table("dim").metrics.rows_read
    ctx.sql(QUERIES["inner_small_right"]).collect()
    assert ctx.lance_table("dim").metrics.rows_read - before == 300


def test_pinned_registration_needs_no_copy(
    tables: dict[str, tuple[str, pa.Table]],
) -> None:
    ctx = _context(tables, stats=True)
    uri, _ = tables["dim"]
    ctx.register_lance("dim", uri, version=1)
    done = ctx.sql(QUERIES["inner_small_right"]).lance_rewrite()
    assert done.join_stats and "__lance_pinned" not in done.dataframe.logical_plan().display()


def test_default_threshold_without_information_schema(
    tables: dict[str, tuple[str, pa.Table]],
) -> None:
    """Without SHOW the pass hints up to DataFusion's default threshold (131,072 rows)."""
    ctx = lance_sql.SessionContext()
    for name, (uri, _) in tables.items():
        ctx.register_lance(name, uri)
    done = ctx.sql(QUERIES["inner_small_right"]).lance_rewrite()
    assert len(done.join_stats) == 2  # fact's 3000 rows are under the default too
    assert "mode=CollectLeft" in done.dataframe.execution_plan().display_indent()


# ---- estimates: swaps (no hint applies) and join trees ordered for DataFusion's rebuild ----


def _context_with_threshold(tables: dict[str, tuple[str, pa.Table]], threshold: int) -> Any:
    ctx = _context(tables, stats=True)
    ctx.sql(f"SET datafusion.optimizer.hash_join_single_partition_threshold_rows = {threshold}")
    return ctx


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_same_answer_when_only_estimates_apply(
    name: str, tables: dict[str, tuple[str, pa.Table]]
) -> None:
    """Threshold 1: no input is hinted; inner joins may be swapped by estimate."""
    sql = QUERIES[name]
    ctx = _context_with_threshold(tables, 1)
    assert _rows(ctx.sql(sql).to_arrow_table()) == _duck(tables, sql)


def test_smaller_right_input_is_swapped_to_the_build_side(
    tables: dict[str, tuple[str, pa.Table]],
) -> None:
    ctx = _context_with_threshold(tables, 1)
    sql = "SELECT d.name, f.id, f.v FROM fact f JOIN dim d ON f.dim_id = d.dim_id WHERE f.v > 3"
    done = ctx.sql(sql).lance_rewrite()
    assert any("inner join inputs swapped" in line for line in done.join_stats), done.join_stats
    physical = done.dataframe.execution_plan().display_indent()
    first_scan = next(line for line in physical.splitlines() if "DatasetExec" in line)
    assert "projection=[dim_id, name]" in first_scan  # dim builds the hash table
    assert done.dataframe.schema().names == ["name", "id", "v"]
    assert _rows(ctx.sql(sql).to_arrow_table()) == _duck(tables, sql)


def test_each_conjunct_of_a_filter_counts_in_the_estimate(
    tables: dict[str, tuple[str, pa.Table]],
) -> None:
    """3000 fact rows under three AND-ed conditions: 3000 / 4**3 = 47 estimated, under 300 / 2.

    Counted as one filter (750 rows) the fact side stayed the probe side, as
    TPC-H q12's five-condition lineitem filter did against orders.
    """
    ctx = _context_with_threshold(tables, 1)
    sql = (
        "SELECT d.name, f.id FROM dim d JOIN fact f ON f.dim_id = d.dim_id "
        "WHERE f.v > 3 AND f.id > 10 AND f.id < 2500"
    )
    done = ctx.sql(sql).lance_rewrite()
    assert any("inner join inputs swapped" in line for line in done.join_stats), done.join_stats
    assert _rows(ctx.sql(sql).to_arrow_table()) == _duck(tables, sql)
    one = "SELECT d.name, f.id FROM dim d JOIN fact f ON f.dim_id = d.dim_id WHERE f.v > 3"
    assert ctx.sql(one).lance_rewrite().join_stats == []


def test_similar_inputs_are_not_swapped(tables: dict[str, tuple[str, pa.Table]]) -> None:
    ctx = _context_with_threshold(tables, 1)
    sql = "SELECT a.id FROM fact a JOIN fact b ON a.id = b.dim_id"
    assert ctx.sql(sql).lance_rewrite().join_stats == []


@pytest.fixture
def star(tmp_path: Any) -> dict[str, tuple[str, pa.Table]]:
    """TPC-H q5's shape, small: orders/lineitem bucketed namespaces, four dimension datasets."""
    n_orders = 2000
    tables = {
        "nation": pa.table(
            {
                "nk": pa.array(range(10), pa.int64()),
                "rk": [i % 3 for i in range(10)],
                "nname": [f"n{i}" for i in range(10)],
            }
        ),
        "region": pa.table({"rk": pa.array(range(3), pa.int64()), "rname": ["r0", "r1", "r2"]}),
        "customer": pa.table(
            {
                "ck": pa.array(range(300), pa.int64()),
                "cnk": pa.array([i % 10 for i in range(300)], pa.int64()),
            }
        ),
        "supplier": pa.table(
            {
                "sk": pa.array(range(50), pa.int64()),
                "snk": pa.array([i % 10 for i in range(50)], pa.int64()),
            }
        ),
        "orders": pa.table(
            {
                "ok": pa.array(range(n_orders), pa.int64()),
                "ock": pa.array([(i * 7) % 300 for i in range(n_orders)], pa.int64()),
            }
        ),
        "lineitem": pa.table(
            {
                "lok": pa.array([i // 3 for i in range(3 * n_orders)], pa.int64()),
                "lsk": pa.array([(i * 11) % 50 for i in range(3 * n_orders)], pa.int64()),
                "price": pa.array([float(i % 101) for i in range(3 * n_orders)], pa.float64()),
            }
        ),
    }
    out = {}
    for name, table in tables.items():
        uri = str(tmp_path / name)
        if name in ("orders", "lineitem"):
            key = "ok" if name == "orders" else "lok"
            spec = [
                {
                    "field_id": f"{key}_b",
                    "source": key,
                    "transform": {"type": "bucket", "num_buckets": 4},
                }
            ]
            lance_sql.PartitionedNamespace.create(uri, table.schema, spec).append(table)
        else:
            lance.write_dataset(table, uri)
        out[name] = (uri, table)
    return out


Q5_SHAPE = (
    "SELECT nname, sum(price) AS revenue FROM customer, orders, lineitem, supplier, nation, region "
    "WHERE ck = ock AND lok = ok AND lsk = sk AND cnk = snk AND snk = nk AND region.rk = nation.rk "
    "AND rname = 'r1' GROUP BY nname"
)


@pytest.mark.parametrize("stats", [True, False])
def test_q5_shape_is_ordered_from_the_fact_side(
    stats: bool, star: dict[str, tuple[str, pa.Table]]
) -> None:
    ctx = lance_sql.SessionContext(default_config().with_information_schema(True))
    ctx.join_stats_enabled = stats
    for name, (uri, _) in star.items():
        if name in ("orders", "lineitem"):
            ctx.register_namespace(name, uri)
        else:
            ctx.register_lance(name, uri)
    done = ctx.sql(Q5_SHAPE).lance_rewrite()
    assert done.used, "orders x lineitem is a storage-partitioned join"
    ordered = [line for line in done.join_stats if "ordered by estimated rows" in line]
    if stats:
        assert ordered and ordered[0].split(": ", 1)[1].startswith("supplier"), done.join_stats
        physical = done.dataframe.execution_plan().display_indent()
        assert "on=[(snk@1, cnk@1)]" not in physical and "on=[(cnk" not in physical
    else:
        assert ordered == []
    assert _rows(ctx.sql(Q5_SHAPE).to_arrow_table()) == _duck(star, Q5_SHAPE)


@pytest.mark.parametrize("spj", ["true", "false"])
def test_a_join_of_namespaces_only_is_swapped_by_estimate(
    spj: str, star: dict[str, tuple[str, pa.Table]]
) -> None:
    """TPC-H q12's shape: orders x lineitem, no plain dataset in the query.

    The filtered lineitem side (6000 rows under four conditions: ~23 estimated)
    builds the hash table instead of all of orders; the pass used to run only
    when the query read a plain Lance dataset (q12 with namespaces built a
    1.5M-row hash table at SF1 where plain datasets built a 94k-row one).
    """
    ctx = lance_sql.SessionContext()
    ctx.sql(f"SET lance.spj = {spj}")
    ctx.spj_large_side_rows = 1000  # as at SF1: the plain join is kept, not storage-partitioned
    for name in ("orders", "lineitem"):
        ctx.register_namespace(name, star[name][0])
    sql = (
        "SELECT ock, count(*) AS n FROM orders JOIN lineitem ON ok = lok "
        "WHERE price > 10 AND price < 50 AND lsk > 3 AND lsk < 40 GROUP BY ock"
    )
    done = ctx.sql(sql).lance_rewrite()
    assert any("inner join inputs swapped" in line for line in done.join_stats), done.join_stats
    physical = done.dataframe.execution_plan().display_indent()
    first_scan = next(line for line in physical.splitlines() if "DatasetExec" in line)
    assert "lok" in first_scan  # lineitem builds the hash table
    assert _rows(ctx.sql(sql).to_arrow_table()) == _duck(star, sql)


def test_a_qualified_table_of_the_same_name_gets_no_bound(
    tables: dict[str, tuple[str, pa.Table]],
) -> None:
    """``s2.dim`` is not the Lance table ``dim``: its rows are never limited to dim's count."""
    ctx = _context(tables, stats=True)
    ctx.from_arrow(_dim(400).append_column("extra", pa.array(range(400))), "wide")
    ctx.sql("CREATE SCHEMA s2")
    ctx.sql("CREATE TABLE s2.dim AS SELECT dim_id, name FROM wide")
    sql = "SELECT o.dim_id, d.name FROM s2.dim o LEFT JOIN dim d ON o.dim_id = d.dim_id"
    done = ctx.sql(sql).lance_rewrite()
    assert not any("at most 400" in line or "s2" in line for line in done.join_stats)
    assert ctx.sql(sql).to_arrow_table().num_rows == 400


def test_an_empty_grouping_set_counts_one_row(
    tables: dict[str, tuple[str, pa.Table]],
) -> None:
    """GROUPING SETS ((name), ()) over no rows is one row: the bound must count it."""
    empty = _dim(0)
    uri = tables["dim"][0] + "_empty"
    lance.write_dataset(empty, uri)
    tables = {**tables, "nothing": (uri, empty)}
    ctx = _context(tables, stats=True)
    sql = (
        "SELECT f.id, g.n FROM fact f JOIN ("
        "SELECT name, count(*) AS n FROM nothing GROUP BY GROUPING SETS ((name), ()) "
        "UNION ALL SELECT 'x' AS name, 5 AS n) g ON g.n = f.dim_id"
    )
    lines = ctx.sql(sql).lance_rewrite().join_stats
    assert any("(nothing v1): at most 2 rows" in line for line in lines), lines
    want = _duck(tables, sql)
    assert {n for _, n in want} == {0, 5}
    assert _rows(ctx.sql(sql).to_arrow_table()) == want


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("semi_in", "left_semi"),
        ("anti_fact", "left_anti"),
        ("left_small_right", "left"),
        ("right_small_right", "right"),
    ],
)
def test_outer_semi_and_anti_joins_swap_mirrored(
    name: str, kind: str, tables: dict[str, tuple[str, pa.Table]]
) -> None:
    ctx = _context_with_threshold(tables, 1)
    done = ctx.sql(QUERIES[name]).lance_rewrite()
    assert any(line.startswith(f"{kind} join inputs swapped") for line in done.join_stats)
    assert _rows(done.dataframe.to_arrow_table()) == _duck(tables, QUERIES[name])


def test_a_qualified_table_is_not_taken_for_a_namespace(tmp_path: Any) -> None:
    """``s2.b`` is not the namespace ``b``: never storage-partitioned with it (was: wrong rows)."""
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    ctx = lance_sql.SessionContext()
    for name in ("a", "b"):
        spec = [
            {"field_id": "kb", "source": "k", "transform": {"type": "bucket", "num_buckets": 4}}
        ]
        ns = lance_sql.PartitionedNamespace.create(str(tmp_path / name), schema, spec)
        ns.append(pa.table({"k": list(range(10)), "v": list(range(10))}, schema=schema))
        ctx.register_namespace(name, str(tmp_path / name))
    ctx.sql("CREATE SCHEMA s2")
    ctx.from_arrow(pa.table({"k": list(range(10)) * 3, "v": list(range(30))}), "mem")
    ctx.sql("CREATE TABLE s2.b AS SELECT * FROM mem")
    sql = "SELECT count(*) AS n FROM a JOIN s2.b ON a.k = s2.b.k"
    assert ctx.sql(sql).lance_rewrite().used == []
    assert ctx.sql(sql).to_pydict() == {"n": [30]}


def test_threads_see_whole_versions_while_a_writer_appends(
    tables: dict[str, tuple[str, pa.Table]],
) -> None:
    """Hinted joins on one context from 4 threads, while the hinted table grows.

    Each answer must be the answer over one version of ``dim`` (a LIMIT hint
    counted on one version and applied to another would drop rows).
    """
    import threading
    import time

    ctx = _context(tables, stats=True)
    sql = "SELECT count(*) AS n, sum(f.v) AS s FROM fact f JOIN dim d ON f.dim_id = d.dim_id"
    uri, _ = tables["dim"]
    extra = pa.table(
        {"dim_id": pa.array(range(0, 250, 5), pa.int64()), "name": pa.array(["e"] * 50)}
    )
    versions = [_dim()]
    for _ in range(3):
        versions.append(pa.concat_tables([versions[-1], extra]))
    answers = set()
    for version in versions:
        want = _duck({**tables, "dim": (uri, version)}, sql)
        answers.add(want[0])
    seen: list[Any] = []
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            for _ in range(12):
                row = ctx.sql(sql).to_pylist()[0]
                seen.append((row["n"], row["s"]))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for _ in range(3):
        time.sleep(0.05)
        lance.write_dataset(extra, uri, mode="append")
    for t in threads:
        t.join()
    assert not errors, errors
    assert seen and set(seen) <= answers, set(seen) - answers


def test_a_hinted_read_reads_the_version_it_counted(
    tables: dict[str, tuple[str, pa.Table]],
) -> None:
    """Rows written between the count and the scan are never cut by the old bound."""
    ctx = _context(tables, stats=True)
    sql = "SELECT d.dim_id, d.name FROM dim d LEFT JOIN fact f ON f.dim_id = d.dim_id"
    done = ctx.sql(sql).lance_rewrite()  # counts dim at version 1: at most 300 rows
    assert any("(dim v1): at most 300 rows" in line for line in done.join_stats)
    uri, table = tables["dim"]
    lance.dataset(uri).delete("dim_id < 100")  # version 2: 200 rows
    new = pa.table(
        {"dim_id": pa.array(range(1000, 1600), pa.int64()), "name": pa.array(["n"] * 600)}
    )
    lance.write_dataset(new, uri, mode="append")  # version 3: 800 rows
    # read at version 1, whole (the first 300 rows of version 3 would be other rows)
    assert _rows(done.dataframe.to_arrow_table()) == _duck(tables, sql)
    kept = table.filter(pa.compute.greater_equal(table.column("dim_id"), 100))
    tables["dim"] = (uri, pa.concat_tables([kept, new]))
    assert _rows(ctx.sql(sql).to_arrow_table()) == _duck(tables, sql)  # version 3, whole


def test_joins_inside_a_scalar_subquery_are_hinted(
    tables: dict[str, tuple[str, pa.Table]],
) -> None:
    """TPC-H q11's shape: the HAVING subquery keeps its own joins (a subquery expression)."""
    ctx = _context(tables, stats=True)
    sql = (
        "SELECT f.dim_id, sum(f.v) AS s FROM fact f JOIN dim d ON f.dim_id = d.dim_id "
        "GROUP BY f.dim_id HAVING sum(f.v) > (SELECT sum(f2.v) / 300 FROM fact f2 "
        "JOIN dim d2 ON f2.dim_id = d2.dim_id JOIN tiny t ON t.name = d2.name)"
    )
    lines = ctx.sql(sql).lance_rewrite().join_stats
    assert any("tiny v1" in line for line in lines), lines  # tiny is only in the subquery
    assert _rows(ctx.sql(sql).to_arrow_table()) == _duck(tables, sql)


def test_the_threshold_is_read_once_and_again_after_a_set(
    tables: dict[str, tuple[str, pa.Table]],
) -> None:
    """The join threshold is read with SHOW once per context (not per rewrite), and again
    after a statement sets it: the hints follow the new value."""
    ctx = _context(tables, stats=True)
    sql = QUERIES["inner_small_right"]
    assert len(ctx.sql(sql).lance_rewrite().join_stats) == 1  # dim: 300 <= 500 < fact's 3000
    assert ctx._join_threshold_rows == THRESHOLD  # read once, kept
    ctx.sql("SET datafusion.optimizer.hash_join_single_partition_threshold_rows = 1")
    assert not any("CollectLeft" in line for line in ctx.sql(sql).lance_rewrite().join_stats)
    ctx.sql("SET datafusion.optimizer.hash_join_single_partition_threshold_rows = 1000000")
    assert len(ctx.sql(sql).lance_rewrite().join_stats) == 2


def test_default_threshold_is_kept_until_show_works(
    tables: dict[str, tuple[str, pa.Table]],
) -> None:
    """Without the information schema SHOW fails once and the default is kept; turning the
    schema on (a SET) makes the next rewrite read the context's value."""
    ctx = lance_sql.SessionContext()
    ctx.sql("SET datafusion.optimizer.hash_join_single_partition_threshold_rows = 1")
    for name, (uri, _) in tables.items():
        ctx.register_lance(name, uri)
    sql = QUERIES["inner_small_right"]
    assert len(ctx.sql(sql).lance_rewrite().join_stats) == 2  # the default, 131,072
    ctx.sql("SET datafusion.catalog.information_schema = true")
    assert not any("CollectLeft" in line for line in ctx.sql(sql).lance_rewrite().join_stats)
