"""``NOT IN`` subqueries between namespaces: storage-partitioned, with SQL's NULL rules.

DataFusion plans ``a.k NOT IN (SELECT b.k ...)`` as a null-aware anti join,
which Substrait cannot carry; :mod:`lance_sql.engines.datafusion.not_in`
rewrites it into plain anti joins (before: every query holding a ``NOT IN``
was left as built, so neither SPJ nor transform-term pruning applied to it).
Checked against DuckDB and plain DataFusion over the same rows, with NULL
keys on either side, empty subqueries and subqueries whose only rows are NULL.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import datafusion
import duckdb
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lance_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("k", pa.int64()),
        pa.field("x", pa.int64()),
        pa.field("day", pa.date32()),
    ]
)
BUCKET = [{"source": "k", "transform": "bucket", "num_buckets": 4}]
IDENTITY = [{"source": "k", "transform": "identity"}]
BY_MONTH = [{"source": "day", "transform": "month"}]


def _rows(n: int, seed: int, nulls: bool) -> pa.Table:
    import datetime

    keys = [None if nulls and (i * seed) % 7 == 3 else (i * seed) % 11 for i in range(n)]
    return pa.table(
        {
            "id": list(range(n)),
            "k": keys,
            "x": [(i * 5 + seed) % 9 for i in range(n)],
            "day": [datetime.date(2025, 1 + i % 5, 1 + i % 3) for i in range(n)],
        },
        schema=SCHEMA,
    )


TABLES = {
    # name: (spec, rows)
    "a": (BUCKET, _rows(40, 3, nulls=True)),
    "b": (BUCKET, _rows(25, 5, nulls=False)),
    "bn": (BUCKET, _rows(25, 2, nulls=True)),
    "c": (IDENTITY, _rows(30, 7, nulls=True)),
    "d": (BY_MONTH, _rows(30, 4, nulls=True)),
}


@pytest.fixture(scope="module")
def engines(tmp_path_factory: pytest.TempPathFactory):
    root: Path = tmp_path_factory.mktemp("not_in")
    ctx = lance_sql.SessionContext()
    plain = datafusion.SessionContext()
    duck = duckdb.connect()
    for name, (spec, rows) in TABLES.items():
        ns = PartitionedNamespace.create(str(root / name), SCHEMA, spec)
        ns.append(rows)
        ctx.register_namespace(name, str(root / name))
        plain.from_arrow(rows, name=name)
        duck.register(name, rows)
    return ctx, plain, duck


def _lance(ctx, sql: str) -> Counter:
    return Counter(tuple(r.values()) for r in ctx.sql(sql).to_arrow_table().to_pylist())


def _duck(duck, sql: str) -> Counter:
    return Counter(tuple(r) for r in duck.sql(sql).fetchall())


def _plan(ctx, sql: str) -> str:
    table = ctx.sql("EXPLAIN " + sql).to_arrow_table()
    return "\n".join(p or "" for p in table.column("plan").to_pylist())


SUBQUERY_FILTERS = ["", "WHERE s.x < 4", "WHERE s.x > 100", "WHERE s.k IS NULL", "WHERE s.x = 2"]
OUTER_FILTERS = ["", "AND a.x < 5", "AND a.day >= DATE '2025-03-02'", "AND a.k IS NULL"]


@settings(max_examples=60, deadline=None)
@given(
    sub=st.sampled_from(["b", "bn", "c", "a"]),
    sub_filter=st.sampled_from(SUBQUERY_FILTERS),
    outer_filter=st.sampled_from(OUTER_FILTERS),
    select=st.sampled_from(["a.id, a.k", "count(*)", "a.x, count(*)"]),
    spj=st.booleans(),
)
def test_not_in_answers_as_duckdb(engines, sub, sub_filter, outer_filter, select, spj) -> None:
    ctx, plain, duck = engines
    group = " GROUP BY a.x" if select.startswith("a.x,") else ""
    sql = (
        f"SELECT {select} FROM a WHERE a.k NOT IN (SELECT s.k FROM {sub} s {sub_filter}) "
        f"{outer_filter}{group}"
    )
    ctx.set_spj(spj)
    try:
        got = _lance(ctx, sql)
    finally:
        ctx.set_spj(True)
    assert got == _duck(duck, sql), sql
    assert got == _lance(plain, sql), sql


def test_not_in_between_compatible_namespaces_is_storage_partitioned(engines) -> None:
    ctx, _, duck = engines
    sql = "SELECT a.id FROM a WHERE a.k NOT IN (SELECT s.k FROM bn s WHERE s.x < 4)"
    plan = _plan(ctx, sql)
    assert "StoragePartitionedJoin: a a x bn bn, how=anti" in plan
    assert "not used" not in plan
    assert _lance(ctx, sql) == _duck(duck, sql)


def test_not_in_keeps_transform_pruning_of_the_outer_scan(engines) -> None:
    ctx, plain, duck = engines
    sql = (
        "SELECT d.id FROM d WHERE date_part('month', d.day) = 2 "
        "AND d.k NOT IN (SELECT s.k FROM b s WHERE s.x < 3)"
    )
    assert _lance(ctx, sql) == _duck(duck, sql) == _lance(plain, sql)
    plan = _plan(ctx, sql)
    scans = [line for line in plan.splitlines() if "LanceNamespaceScan: table=d," in line]
    assert scans and all("partition_tables=1/5," in s for s in scans), plan


def test_not_in_over_an_expression(engines) -> None:
    ctx, plain, duck = engines
    sql = "SELECT a.id FROM a WHERE a.k + 1 NOT IN (SELECT s.k FROM bn s WHERE s.x < 6)"
    assert _lance(ctx, sql) == _duck(duck, sql) == _lance(plain, sql)


def test_benchmark_runs_tiny(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util
    import sys

    folder = Path(__file__).parents[2] / "benchmarks"
    monkeypatch.syspath_prepend(str(folder))
    spec = importlib.util.spec_from_file_location("bench_not_in", folder / "bench_not_in.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_not_in", module)
    spec.loader.exec_module(module)
    out = module.main(["--orders", "3000", "--customers", "400", "--rounds", "1"])
    assert out["rewritten_over_as_built"] > 0
