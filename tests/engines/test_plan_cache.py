"""Partition plans cached per (`__manifest` rows, schema, filter): answers never go stale."""

from __future__ import annotations

import concurrent.futures
import datetime as dt
from pathlib import Path

import pyarrow as pa

import lance_sql
from lance_sql.engines.datafusion import namespace_plans
from lance_sql.tables.namespace.namespace import PartitionedNamespace

DAYS = [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(4)]


def _rows(start: int, n: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "day": pa.array([DAYS[i % len(DAYS)] for i in range(n)], pa.date32()),
            "x": pa.array([float(i) for i in range(n)], pa.float64()),
        }
    )


def _make(tmp_path: Path) -> tuple[str, PartitionedNamespace]:
    root = str(tmp_path / "ns")
    first = _rows(0, 40)
    ns = PartitionedNamespace.create(
        root, first.schema, [{"source": "day", "transform": "identity"}]
    )
    ns.append(first)
    ns.create_scalar_index("id", "BTREE")
    return root, ns


def _count(ctx: lance_sql.SessionContext, sql: str) -> list[dict[str, object]]:
    return ctx.sql(sql).to_arrow_table().to_pylist()


def test_repeated_filter_hits_and_new_versions_are_seen(tmp_path: Path) -> None:
    root, _ = _make(tmp_path)
    ctx = lance_sql.SessionContext()
    table = ctx.register_namespace("t", root)
    sql = "SELECT count(*) AS n, sum(id) AS s FROM t WHERE day = DATE '2024-01-02'"
    first = _count(ctx, sql)
    assert first == [{"n": 10, "s": sum(range(1, 40, 4))}]
    view = table.namespace
    hits = [0]
    original = namespace_plans.PLANS.get

    def counting(*args: object) -> object:
        got = original(*args)  # type: ignore[arg-type]
        hits[0] += got is not namespace_plans.MISS
        return got

    namespace_plans.PLANS.get = counting  # type: ignore[method-assign]
    try:
        assert _count(ctx, sql) == first
        assert hits[0] == 1 and table.namespace is view
        PartitionedNamespace.open(root).append(_rows(100, 8))  # a new __manifest version
        got = _count(ctx, sql)
        assert table.namespace is not view  # the new snapshot was planned afresh
        assert got == [{"n": 12, "s": first[0]["s"] + 101 + 105}]  # type: ignore[operator]
        assert hits[0] == 1
    finally:
        namespace_plans.PLANS.get = original  # type: ignore[method-assign]


def test_key_filter_switch_is_part_of_the_key(tmp_path: Path) -> None:
    from lance_sql.planning import key_filter_skipping as key_filters

    root, _ = _make(tmp_path)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)

    def explain() -> str:
        return "\n".join(
            ctx.sql("EXPLAIN SELECT * FROM t WHERE id = 7").to_arrow_table().column(1).to_pylist()
        )

    assert "skipped_by_key_filter=3" in explain()
    key_filters.ENABLED[0] = False
    try:
        assert "skipped_by_key_filter" not in explain()
    finally:
        key_filters.ENABLED[0] = True
    assert "skipped_by_key_filter=3" in explain()


def test_threads_share_plans(tmp_path: Path) -> None:
    root, _ = _make(tmp_path)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    data = _rows(0, 40)
    queries = [f"SELECT id, x FROM t WHERE id = {k}" for k in range(0, 40, 3)]
    queries += [f"SELECT count(*) AS n FROM t WHERE day = DATE '{d}'" for d in DAYS]

    def want(sql: str) -> list[dict[str, object]]:
        if "count" in sql:
            return [{"n": 10}]
        k = int(sql.rsplit(" ", 1)[1])
        return [{"id": k, "x": data.column("x")[k].as_py()}]

    def worker(i: int) -> None:
        for sql in queries[i % 3 :] + queries[: i % 3]:
            assert _count(ctx, sql) == want(sql), sql

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(worker, range(16)))
