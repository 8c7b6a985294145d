"""The service path's per-query caches never change an answer.

The plan-rewrite skip (:data:`plan_rewrite._SKIPS`: a plan shape over the same
namespace providers for which no plan pass applies) hits on a repeated query,
misses on a new shape or a namespace registered again, and a write between
two identical queries (same context, or another process) is always seen.
Answers are compared with plain DataFusion over the same rows in memory.
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import datafusion
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.engines.datafusion import plan_rewrite
from lance_sql.tables.namespace.namespace import PartitionedNamespace

DAYS = [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(5)]
REPO = Path(__file__).resolve().parents[2]

QUERIES = [
    "SELECT id, day, x FROM t WHERE id = 17",
    "SELECT count(*) AS n, sum(x) AS s FROM t WHERE day = DATE '2024-01-03'",
    "SELECT count(*) AS n FROM t WHERE day >= DATE '2024-01-02' AND x < 20",
    "SELECT day, count(*) AS n FROM t GROUP BY day ORDER BY day",
    "SELECT id FROM t WHERE id IN (3, 4, 99) ORDER BY id",
]


def rows(start: int, n: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "day": pa.array([DAYS[i % len(DAYS)] for i in range(start, start + n)], pa.date32()),
            "x": pa.array([float(i % 37) for i in range(start, start + n)], pa.float64()),
        }
    )


def make_namespace(tmp_path: Path, n: int = 60) -> str:
    root = str(tmp_path / "ns")
    first = rows(0, n)
    ns = PartitionedNamespace.create(
        root, first.schema, [{"source": "day", "transform": "identity"}]
    )
    ns.append(first)
    ns.create_scalar_index("id", "BTREE")
    return root


def expected(table: pa.Table, sql: str) -> list[dict[str, object]]:
    """``sql`` answered by plain DataFusion over ``table`` in memory."""
    plain = datafusion.SessionContext()
    plain.from_arrow(table, "t")
    return in_sql_order(plain.sql(sql).to_arrow_table().to_pylist(), sql)


def answer(ctx: lance_sql.SessionContext, sql: str) -> list[dict[str, object]]:
    return in_sql_order(ctx.sql(sql).to_arrow_table().to_pylist(), sql)


def in_sql_order(found: list[dict[str, object]], sql: str) -> list[dict[str, object]]:
    """Rows as returned under ORDER BY, else sorted (SQL defines no order)."""
    return found if "ORDER BY" in sql else sorted(found, key=repr)


def test_a_repeated_query_skips_the_rewrite_and_answers_the_same(tmp_path: Path) -> None:
    root = make_namespace(tmp_path)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    data = rows(0, 60)
    for sql in QUERIES:
        want = expected(data, sql)
        first = answer(ctx, sql)
        hits = plan_rewrite._SKIPS.hits
        second = answer(ctx, sql)
        assert first == second == want, sql
        assert plan_rewrite._SKIPS.hits == hits + 1, sql  # the second run was a hit
    # another literal of the same type is the same query shape: a hit, with its own answer
    hits = plan_rewrite._SKIPS.hits
    for sql in ("SELECT id, day, x FROM t WHERE id = 18", QUERIES[1].replace("-03", "-04")):
        assert answer(ctx, sql) == expected(data, sql)
    assert plan_rewrite._SKIPS.hits == hits + 2
    # another shape (another column, another literal type): a miss
    misses = plan_rewrite._SKIPS.misses
    for sql in ("SELECT id, day FROM t WHERE id = 18", "SELECT id FROM t WHERE x = 3.0"):
        assert answer(ctx, sql) == expected(data, sql)
    assert plan_rewrite._SKIPS.misses == misses + 2


def test_plans_with_joins_or_subqueries_are_never_skipped(tmp_path: Path) -> None:
    root = make_namespace(tmp_path)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    ctx.register_namespace("u", root)
    data = rows(0, 60)
    plain = datafusion.SessionContext()
    plain.from_arrow(data, "t")
    plain.from_arrow(data, "u")
    for sql in (
        "SELECT count(*) AS n FROM t JOIN u ON t.id = u.id WHERE t.day = DATE '2024-01-02'",
        "SELECT count(*) AS n FROM t WHERE id IN (SELECT id FROM u WHERE x < 3)",
        "SELECT count(*) AS n FROM t LEFT JOIN u ON t.id = u.id + 100 WHERE u.id IS NULL",
    ):
        want = plain.sql(sql).to_arrow_table().to_pylist()
        for _ in range(2):
            hits = plan_rewrite._SKIPS.hits
            assert answer(ctx, sql) == want, sql
            assert plan_rewrite._SKIPS.hits == hits, sql


def test_a_namespace_registered_again_is_a_miss(tmp_path: Path) -> None:
    root = make_namespace(tmp_path)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    sql = QUERIES[1]
    answer(ctx, sql)
    ctx.register_namespace("t", root)
    misses = plan_rewrite._SKIPS.misses
    assert answer(ctx, sql) == expected(rows(0, 60), sql)
    assert plan_rewrite._SKIPS.misses == misses + 1


def test_a_write_between_two_identical_queries_is_seen(tmp_path: Path) -> None:
    root = make_namespace(tmp_path)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    before = [answer(ctx, sql) for sql in QUERIES]
    assert before == [expected(rows(0, 60), sql) for sql in QUERIES]
    PartitionedNamespace.open(root).append(rows(60, 40))  # same context, same process
    after = rows(0, 100)
    for sql in QUERIES:
        assert answer(ctx, sql) == expected(after, sql), sql


def test_a_write_by_another_process_is_seen(tmp_path: Path) -> None:
    root = make_namespace(tmp_path)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    sql = QUERIES[1]
    assert answer(ctx, sql) == answer(ctx, sql) == expected(rows(0, 60), sql)
    script = (
        "import sys; sys.path.insert(0, sys.argv[2]);"
        "from tests.engines.test_service_caches import rows;"
        "from lance_sql.tables.namespace.namespace import PartitionedNamespace;"
        "PartitionedNamespace.open(sys.argv[1]).append(rows(60, 40))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", script, root, str(REPO)], check=True, env=env)
    assert answer(ctx, sql) == expected(rows(0, 100), sql)
    assert answer(ctx, QUERIES[0]) == expected(rows(0, 100), QUERIES[0])


@pytest.mark.parametrize("threads", [8])
def test_threads_on_one_context_answer_as_a_serial_run(tmp_path: Path, threads: int) -> None:
    root = make_namespace(tmp_path, n=200)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    work = [q.replace("= 17", f"= {k}") for k in range(0, 200, 9) for q in QUERIES]
    serial = [answer(ctx, sql) for sql in work]
    fresh = lance_sql.SessionContext()  # cold caches, filled concurrently
    fresh.register_namespace("t", root)
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for ctx_ in (ctx, fresh):
            got = list(pool.map(lambda sql, c=ctx_: answer(c, sql), work * 2))
            assert got == serial * 2
    assert serial == [expected(rows(0, 200), sql) for sql in work]


def test_only_number_and_date_literals_are_masked_in_a_shape() -> None:
    def mask(text: str) -> str:
        return plan_rewrite._LITERAL.sub(plan_rewrite._masked, text)

    assert mask('t.id = Int64(5) AND t.day = Date32("2024-01-03")') == (
        "t.id = Int64(?) AND t.day = Date32(?)"
    )
    assert mask("t.x IN ([Float64(1.5), Float64(-2e-3)])") == "t.x IN ([Float64(?), Float64(?)])"
    # a string's content can change the plan (LIKE 'ab' is an equality, LIKE 'a%' is not)
    assert mask('t.s LIKE Utf8("ab")') == 't.s LIKE Utf8("ab")'
    assert mask("CAST(t.x AS Int64)") == "CAST(t.x AS Int64)"
    assert mask('t.d = CAST(Utf8("2024-01-03") AS Date32)') == "t.d = Date32(?)"
    assert mask('t.t > CAST(Utf8("2024-01-01 00:00:00") AS Timestamp(ns))') == (
        't.t > CAST(Utf8("2024-01-01 00:00:00") AS Timestamp(ns))'
    )


def test_sql_a_pruning_hook_evaluates_while_datafusion_plans_runs(tmp_path: Path) -> None:
    """Planning runs on DataFusion's own thread (no hop); SQL evaluated there must not
    nest DataFusion's runtime (it would panic): the SQL engine runs it on a thread."""
    import threading

    from udfs.sql_engine import sql_engine

    root = make_namespace(tmp_path)
    seen: list[tuple[str, int]] = []

    def hook(filter: object, ns: PartitionedNamespace) -> None:
        one = sql_engine().query({}, "SELECT 40 + 2 AS v").column(0)[0].as_py()
        seen.append((threading.current_thread().name, one))
        return None  # every table

    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root, prune=hook)
    for sql in QUERIES:
        assert answer(ctx, sql) == expected(rows(0, 60), sql), sql
    assert seen and all(v == 42 for _, v in seen)


def test_scan_planning_stays_on_the_calling_thread(tmp_path: Path) -> None:
    """A cache-missing point lookup plans without handing the work to another thread."""
    import threading

    from lance_sql.engines.datafusion import namespace_plans

    root = make_namespace(tmp_path)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    threads: set[str] = set()
    plan = namespace_plans._plan_pruning

    def spy(*args: object, **kwargs: object) -> object:
        threads.add(threading.current_thread().name)
        return plan(*args, **kwargs)  # type: ignore[arg-type]

    namespace_plans._plan_pruning = spy  # type: ignore[assignment]
    try:
        for k in (5, 23, 41):
            sql = f"SELECT id, day, x FROM t WHERE id = {k}"
            assert answer(ctx, sql) == expected(rows(0, 60), sql)
    finally:
        namespace_plans._plan_pruning = plan  # type: ignore[assignment]
    assert threads and not any(name.startswith("lance-sql") for name in threads), threads


def test_scanners_skip_pylance_option_copies_and_read_the_same(tmp_path: Path) -> None:
    """``lance_scanner`` hands pylance's native scanner the builder's options directly
    (no deep copy); the rows equal pylance's own scanner's for the same options."""
    import lance
    import pyarrow.compute as pc

    from lance_sql.tables import lance_scanner

    data = rows(0, 300)
    ds = lance.write_dataset(data, str(tmp_path / "one.lance"), max_rows_per_file=70)
    ds.create_scalar_index("id", "BTREE")
    cases = [
        dict(columns=["id", "x"], filter=pc.field("id") == 17),
        dict(columns=["x"], filter=(pc.field("x") > 10.0) & (pc.field("id") < 200)),
        dict(columns=None, filter=None, batch_size=7),
        dict(columns=["day"], filter=None, fragments=ds.get_fragments()[1:3]),
    ]
    for case in cases:
        got = lance_scanner.lance_scanner(ds, **case).to_table()  # type: ignore[arg-type]
        plain = dict(case)
        want = ds.scanner(**plain).to_table()  # type: ignore[arg-type]
        assert got.sort_by("id" if "id" in got.column_names else got.column_names[0]).equals(
            want.sort_by("id" if "id" in want.column_names else want.column_names[0])
        ), case
    assert (
        lance_scanner._BUILDER_ARGS and lance_scanner._BUILDER_ARGS[0] is not None
    )  # the direct path ran
