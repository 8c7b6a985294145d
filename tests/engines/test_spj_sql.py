"""Storage-partitioned joins through SQL: results equal the plain join, other joins unchanged."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

import lance_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace


@pytest.fixture(scope="module")
def roots(appendix_f_roots: tuple[str, str]) -> tuple[str, str]:
    """Appendix F: orders bucket[16] on customer_id, customers bucket[8] on id."""
    return appendix_f_roots


def _ctx(roots: tuple[str, str], spj: bool) -> lance_sql.SessionContext:
    ctx = lance_sql.SessionContext(spj=spj)
    ctx.register_namespace("orders", roots[0])
    ctx.register_namespace("customers", roots[1])
    ctx.from_pydict({"k": [1, 2, 3], "w": [10, 20, 30]}, name="extra")
    return ctx


def _rows(ctx: lance_sql.SessionContext, sql: str) -> Counter:
    table = ctx.sql(sql).to_arrow_table()
    return Counter(tuple(r.values()) for r in table.to_pylist())


def _reasons(ctx: lance_sql.SessionContext, sql: str) -> list[str]:
    """Why lance-sql left namespace joins of ``sql`` as they were (empty: all replaced)."""
    return ctx.sql(sql).lance_rewrite().reasons


def _used(ctx: lance_sql.SessionContext, sql: str) -> int:
    """How many joins of ``sql`` lance-sql runs storage-partitioned."""
    return len(ctx.sql(sql).lance_rewrite().used)


#: the EXPLAIN line of the appendix F join (aliases are table names: Substrait has none)
SPJ_LINE = "StoragePartitionedJoin: orders orders x customers customers"


QUERIES = [
    "SELECT o.order_id, c.segment FROM orders o {j} customers c ON o.customer_id = c.id",
    "SELECT * FROM orders o {j} customers c ON c.id = o.customer_id",
    "SELECT o.*, segment FROM orders AS o {j} customers AS c ON o.customer_id = c.id",
    "SELECT c.segment, sum(o.amount) AS s, count(*) FROM orders o {j} customers c "
    "ON o.customer_id = c.id GROUP BY c.segment",
    "SELECT order_id, id FROM orders o {j} customers c ON o.customer_id = c.id WHERE o.amount > 20",
    "SELECT o.order_id, e.w FROM orders o {j} customers c ON o.customer_id = c.id "
    "JOIN extra e ON e.k = c.id",
]


@pytest.mark.parametrize("join", ["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"])
@pytest.mark.parametrize("query", QUERIES)
def test_spj_equals_plain_join(roots, join, query) -> None:
    sql = query.format(j=join)
    on, off = _ctx(roots, True), _ctx(roots, False)
    assert on.sql(sql).schema().names == off.sql(sql).schema().names
    assert _rows(on, sql) == _rows(off, sql)
    assert _reasons(on, sql) == []
    assert _used(on, sql) == 1
    text = "\n".join(on.sql("EXPLAIN " + sql).to_arrow_table().column("plan").to_pylist())
    assert SPJ_LINE in text


@pytest.mark.parametrize("join", ["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"])
def test_extra_condition(roots, join) -> None:
    sql = (
        f"SELECT o.order_id, c.id FROM orders o {join} customers c "
        "ON o.customer_id = c.id AND o.amount > c.id"
    )
    on = _ctx(roots, True)
    assert _rows(on, sql) == _rows(_ctx(roots, False), sql)
    assert _reasons(on, sql) == []
    assert _used(on, sql) == 1


@pytest.mark.parametrize(
    ("join", "cols"),
    [
        ("LEFT SEMI JOIN", "o.order_id, o.amount"),
        ("LEFT ANTI JOIN", "o.*"),
        ("RIGHT SEMI JOIN", "c.id, c.segment"),
        ("RIGHT ANTI JOIN", "*"),
    ],
)
def test_semi_and_anti_joins(roots, join, cols) -> None:
    sql = f"SELECT {cols} FROM orders o {join} customers c ON o.customer_id = c.id"
    on, off = _ctx(roots, True), _ctx(roots, False)
    assert _rows(on, sql) == _rows(off, sql)
    assert on.sql(sql).schema().names == off.sql(sql).schema().names
    text = _explain(on, sql)
    how = {"LEFT SEMI": "semi", "LEFT ANTI": "anti", "RIGHT SEMI": "right_semi"}
    how["RIGHT ANTI"] = "right_anti"
    assert f"how={how[join.rsplit(' ', 1)[0]]}," in text


def _explain(ctx: lance_sql.SessionContext, sql: str) -> str:
    return "\n".join(ctx.sql("EXPLAIN " + sql).to_arrow_table().column("plan").to_pylist())


def test_aggregate_over_a_storage_partitioned_join(roots) -> None:
    sql = (
        "SELECT c.segment, sum(o.amount), count(*) AS n, avg(o.order_id), min(o.amount), "
        "max(c.id) FROM orders o JOIN customers c ON o.customer_id = c.id "
        "WHERE o.amount > 3 GROUP BY c.segment HAVING count(*) > 1 ORDER BY n"
    )
    on, off = _ctx(roots, True), _ctx(roots, False)
    got_schema, want_schema = on.sql(sql).schema(), off.sql(sql).schema()
    assert got_schema.names == want_schema.names  # names as written
    assert got_schema.types == want_schema.types
    got, want = on.sql(sql).to_pylist(), off.sql(sql).to_pylist()
    assert [r["segment"] for r in got] == [r["segment"] for r in want]
    for g, w in zip(got, want, strict=True):
        assert g == pytest.approx(w)
    assert SPJ_LINE in _explain(on, sql)


def test_where_prunes_each_side_before_grouping(roots) -> None:
    on = _ctx(roots, True)
    base = "SELECT o.order_id, c.segment FROM orders o JOIN customers c ON o.customer_id = c.id"
    assert "groups=8," in _explain(on, base)
    sql = base + " WHERE o.customer_id = 7 AND c.segment <> 'x'"
    assert _rows(on, sql) == _rows(_ctx(roots, False), sql)
    assert SPJ_LINE in _explain(on, sql)


def test_where_on_the_null_supplying_side_of_an_outer_join(roots) -> None:
    """A WHERE on the null-supplying side of an outer join must not prune that side."""
    on = _ctx(roots, True)
    sql = (
        "SELECT o.order_id, c.segment FROM orders o LEFT JOIN customers c "
        "ON o.customer_id = c.id WHERE c.id IS NULL"
    )
    assert _rows(on, sql) == _rows(_ctx(roots, False), sql)
    text = _explain(on, sql)
    assert re.search(r"groups=\d+, .*partitions left=1[0-6] right=8", text)


def test_where_on_the_key_cuts_the_groups(roots) -> None:
    on = _ctx(roots, True)
    sql = (
        "SELECT o.order_id, c.segment FROM orders o JOIN customers c ON o.customer_id = c.id "
        "WHERE o.customer_id = 7 AND c.segment <> 'x'"
    )
    assert "groups=1," in _explain(on, sql)


def test_set_lance_spj(roots) -> None:
    ctx = _ctx(roots, False)
    sql = "SELECT o.order_id FROM orders o JOIN customers c ON o.customer_id = c.id"
    assert "storage-partitioned join: not used (turned off" in _explain(ctx, sql)
    for statement, value in [
        ("SET lance.spj = true", True),
        ("set LANCE.SPJ to 'off';", False),
        ("SET lance.spj=1", True),
        ("SET lance.spj = FALSE", False),
    ]:
        assert ctx.sql(statement).to_arrow_table().num_rows == 0
        assert ctx.spj_enabled is value
    ctx.set_spj(True)
    assert SPJ_LINE in _explain(ctx, sql)
    assert "not used" not in _explain(ctx, sql)
    assert not lance_sql.SessionContext(spj=False).spj_enabled
    assert lance_sql.SessionContext().spj_enabled  # on by default (docs/joins.md)
    with pytest.raises(lance_sql.errors.PlanningError, match=r"lance\.spj.*'maybe'"):
        ctx.sql("SET lance.spj = maybe")
    assert ctx.spj_enabled


def test_explain_says_why_not_used(roots) -> None:
    ctx = _ctx(roots, True)
    sql = "SELECT o.order_id FROM orders o JOIN customers c ON o.order_id = c.id"
    text = _explain(ctx, sql)
    assert (
        "storage-partitioned join: not used (orders x customers: no common partition grouping"
        in text
    )
    assert "StoragePartitionedJoin" not in text
    # a join that does not involve two namespaces gets no line
    assert "storage-partitioned join" not in _explain(
        ctx, "SELECT * FROM orders o JOIN extra e ON e.k = o.customer_id"
    )


def test_no_temporary_table_remains(roots) -> None:
    ctx = _ctx(roots, True)
    sql = (
        "SELECT c.segment, sum(o.amount) AS s FROM orders o JOIN customers c "
        "ON o.customer_id = c.id GROUP BY c.segment"
    )
    frames = [ctx.sql(sql) for _ in range(3)]
    _explain(ctx, sql)
    leftovers = [
        t
        for t in ctx.catalog().schema().table_names()
        if t.startswith("__lance_spj") or t.startswith("__spj")
    ]
    assert leftovers == []
    want = _rows(_ctx(roots, False), sql)
    for df in frames:  # the plans keep their providers: they still execute
        assert Counter(tuple(r.values()) for r in df.to_pylist()) == want


def test_explain_appendix_f(roots) -> None:
    ctx = _ctx(roots, True)
    sql = (
        "SELECT c.segment, sum(o.amount) FROM orders o JOIN customers c "
        "ON o.customer_id = c.id GROUP BY c.segment"
    )
    text = "\n".join(ctx.sql("EXPLAIN " + sql).to_arrow_table().column("plan").to_pylist())
    assert "how=inner, on=[customer_id=id], groups=8" in text
    assert "bucket[16] x bucket[8] grouped by bucket % 8" in text
    assert re.search(r"partitions left=1[0-6] right=8", text)  # buckets the data filled
    # The namespace scans run inside the SPJ units: the physical plan scans one table
    # (the SPJ table, one partition per group) and has no join and no RepartitionExec
    # below the aggregation's own hash repartition.
    physical = ctx.sql("EXPLAIN " + sql).to_arrow_table().column("plan").to_pylist()[-1]
    assert "HashJoinExec" not in physical
    assert "number_of_fragments=8" in physical
    scan_at = physical.index("DatasetExec")
    last_repartition = physical.rfind("RepartitionExec", 0, scan_at)
    between = physical[last_repartition:scan_at]
    assert "AggregateExec: mode=Partial" in between  # the repartition is the aggregate's shuffle


def test_off_leaves_query_unchanged(roots) -> None:
    ctx = _ctx(roots, False)
    sql = "SELECT o.order_id FROM orders o JOIN customers c ON o.customer_id = c.id"
    text = "\n".join(ctx.sql("EXPLAIN " + sql).to_arrow_table().column("plan").to_pylist())
    assert "HashJoinExec" in text and "StoragePartitionedJoin" not in text


def test_other_joins_planned_as_before(roots) -> None:
    sql = "EXPLAIN SELECT * FROM t1 JOIN t2 ON t1.a = t2.b"

    def plan(ctx: lance_sql.SessionContext) -> list[str]:
        ctx.from_pydict({"a": [1, 2]}, name="t1")
        ctx.from_pydict({"b": [2, 3]}, name="t2")
        return ctx.sql(sql).to_arrow_table().column("plan").to_pylist()

    assert plan(_ctx(roots, True)) == plan(lance_sql.SessionContext(spj=False))


def test_incompatible_or_unsupported_falls_back(roots) -> None:
    ctx = _ctx(roots, True)
    sql = "SELECT o.order_id FROM orders o JOIN customers c ON o.order_id = c.id"
    assert _rows(ctx, sql) == _rows(_ctx(roots, False), sql)
    [why] = _reasons(ctx, sql)
    assert why.startswith("orders x customers: ") and "no partition field on the join keys" in why
    sql = "SELECT o.order_id FROM orders o CROSS JOIN customers c"
    assert _rows(ctx, sql) == _rows(_ctx(roots, False), sql)
    assert _reasons(ctx, sql) == [
        "orders x customers: no equality of plain columns between the two sides"
    ]


def test_plan_unchanged_without_namespace_join(roots) -> None:
    """Queries without a join of two namespaces run the plan DataFusion built, untouched."""
    ctx = _ctx(roots, True)
    for sql in ["SELECT  *  FROM orders -- x", "select 1 from extra join extra e2 on true"]:
        df = ctx.sql(sql)
        done = df.lance_rewrite()
        assert (done.used, done.reasons, done.pruned) == ([], [], {})
        assert (
            done.dataframe.optimized_logical_plan().display_indent()
            == df.optimized_logical_plan().display_indent()
        )


def test_benchmark_runs_tiny() -> None:
    import importlib.util

    path = Path(__file__).parents[2] / "benchmarks" / "bench_spj.py"
    spec = importlib.util.spec_from_file_location("bench_spj", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    ratios = module.main(
        ["--orders", "2000", "--customers", "300", "--repeats", "1", "--rounds", "2"]
    )
    assert set(ratios) == {"time_ratio", "rss_ratio", "query_rss_ratio"}


@pytest.mark.parametrize(
    "where",
    ["murmur3(o.customer_id) > 0", "abs(murmur3(c.id)) % 8 = 3", "o.amount::int > 2"],
)
def test_lance_functions_in_where(roots, where) -> None:
    sql = (
        "SELECT c.segment, count(*) AS n FROM orders o JOIN customers c "
        f"ON o.customer_id = c.id WHERE {where} GROUP BY c.segment"
    )
    on = _ctx(roots, True)
    assert _rows(on, sql) == _rows(_ctx(roots, False), sql)
    assert _reasons(on, sql) == []  # each group query dispatches murmur3 in its context
    assert _used(on, sql) == 1


@pytest.mark.parametrize(
    ("where", "how"),
    [
        ("o.customer_id IN (SELECT c.id FROM customers c WHERE c.segment = 's1')", "semi"),
        ("EXISTS (SELECT 1 FROM customers c WHERE c.id = o.customer_id)", "semi"),
        ("NOT EXISTS (SELECT 1 FROM customers c WHERE c.id = o.customer_id AND c.id > 5)", "anti"),
    ],
)
def test_exists_and_in_become_semi_and_anti_joins(roots, where, how) -> None:
    sql = f"SELECT o.order_id, o.amount FROM orders o WHERE {where} AND o.amount > 1"
    on = _ctx(roots, True)
    assert _rows(on, sql) == _rows(_ctx(roots, False), sql)
    assert f"how={how}," in _explain(on, sql)


def test_not_in_is_a_storage_partitioned_anti_join_with_null_rules(roots) -> None:
    """NOT IN (a null-aware anti join) runs as a plain SPJ anti join + NULL checks (not_in.py)."""
    for where in ("", "WHERE c.id IS NOT NULL", "WHERE c.id > 1000"):
        sql = (
            "SELECT o.order_id FROM orders o "
            f"WHERE o.customer_id NOT IN (SELECT c.id FROM customers c {where})"
        )
        on = _ctx(roots, True)
        assert _rows(on, sql) == _rows(_ctx(roots, False), sql)
        assert "StoragePartitionedJoin: orders orders x customers customers, how=anti" in (
            _explain(on, sql)
        )


def test_correlated_subquery_over_the_join(roots) -> None:
    """DataFusion decorrelates the subquery into a join above the namespace join: SPJ stays."""
    sql = (
        "SELECT o.order_id FROM orders o JOIN customers c ON o.customer_id = c.id "
        "WHERE o.amount > (SELECT min(e.w) FROM extra e WHERE e.k = c.id)"
    )
    on = _ctx(roots, True)
    assert _rows(on, sql) == _rows(_ctx(roots, False), sql)
    assert _reasons(on, sql) == []
    assert SPJ_LINE in _explain(on, sql)


def test_group_sides_read_only_needed_columns_and_rows(roots) -> None:
    """Each group reads the columns its query needs, with the side's pushable WHERE."""
    from lance_sql.engines.datafusion import spj_sides
    from lance_sql.engines.datafusion import substrait_plan as sp
    from lance_sql.tables.namespace.namespace import PartitionedNamespace as NS

    left, right = (
        spj_sides.SpjSide(NS.open(r), NS.open(r).schema, alias, name)
        for r, alias, name in ((roots[0], "o", "orders"), (roots[1], "c", "customers"))
    )

    def group(sql: str) -> spj_sides.GroupQuery:
        """The group query of ``sql`` as the SPJ pass builds it (optimized plan, Substrait)."""
        gctx = spj_sides.group_context(left, right, None)
        return spj_sides.GroupQuery(sp.to_substrait(gctx, gctx.sql(sql).optimized_logical_plan()))

    sql = (
        f"SELECT c.segment, o.order_id FROM {spj_sides.LEFT_TABLE} o "
        f"JOIN {spj_sides.RIGHT_TABLE} c ON o.customer_id = c.id "
        "WHERE o.amount > 20 AND c.segment LIKE 's1%'"
    )
    reads = spj_sides.plan_side_reads(left, right, group(sql))
    orders, customers = reads[spj_sides.LEFT_TABLE], reads[spj_sides.RIGHT_TABLE]
    # the optimized plan pushes ``o.amount > 20`` into the side's scan: Lance applies it while
    # reading, so ``amount`` itself need not be read into memory
    assert set(orders.columns) == {"order_id", "customer_id"}
    assert set(customers.columns) == {"id", "segment"}  # LIKE stays in the query: segment read
    assert orders.filter is not None and "amount" in str(orders.filter)
    count = (
        f"SELECT count(*) FROM {spj_sides.LEFT_TABLE} o "
        f"JOIN {spj_sides.RIGHT_TABLE} c ON o.customer_id = c.id"
    )
    reads = spj_sides.plan_side_reads(left, right, group(count))
    assert reads[spj_sides.LEFT_TABLE].columns == ("customer_id",)


def test_aggregates_over_one_side_equal_plain_join(roots) -> None:
    """Aggregates over one side, or both, of a storage-partitioned join (was: eager aggregation)."""
    base = (
        "SELECT c.segment, sum(o.amount) AS s, count(*) AS n, min(o.order_id) AS m "
        "FROM orders o {j} customers c ON o.customer_id = c.id WHERE o.amount > 3 "
        "GROUP BY c.segment ORDER BY c.segment"
    )
    on, off = _ctx(roots, True), _ctx(roots, False)
    sql = base.format(j="JOIN")
    assert on.sql(sql).to_pylist() == off.sql(sql).to_pylist()  # quarters: sums are exact
    assert SPJ_LINE in _explain(on, sql)
    outer = base.format(j="LEFT JOIN")
    assert on.sql(outer).to_pylist() == off.sql(outer).to_pylist()
    both = sql.replace("min(o.order_id)", "min(c.id)")  # aggregates read both sides
    assert _rows(on, both) == _rows(off, both)


def test_sides_stream_when_their_reads_cannot_be_planned(roots, monkeypatch) -> None:
    """A failure planning what groups read makes them stream their sides, not fail."""
    from lance_sql.engines.datafusion import spj_sides

    def refuse(*_args):
        raise RuntimeError("cannot plan")

    monkeypatch.setattr(spj_sides, "_needed_columns", refuse)
    sql = QUERIES[3].format(j="JOIN")
    on = _ctx(roots, True)
    assert _rows(on, sql) == _rows(_ctx(roots, False), sql)
    assert "StoragePartitionedJoin" in _explain(on, sql)


@pytest.mark.parametrize(
    ("key_type", "values", "spec"),
    [
        (pa.string(), ["a", "bb", None, "a", "ccc", "bb"], {"transform": "identity"}),
        (
            pa.string(),
            ["a", "bb", None, "a", "ccc", "bb"],
            {"transform": "bucket", "num_buckets": 4},
        ),
        (pa.date32(), [0, 1, None, 400, 400, 31], {"transform": "month"}),
        (pa.decimal128(9, 2), [1, 2, None, 1, 3, 2], {"transform": "bucket", "num_buckets": 3}),
        (pa.int32(), [5, 6, None, 5, 27, 6], {"transform": "truncate", "width": 10}),
    ],
)
def test_key_types_equal_plain_join(tmp_path, key_type, values, spec) -> None:
    """Keys of other types, with NULLs, through every partition transform family."""
    import decimal

    if pa.types.is_decimal(key_type):
        values = [None if v is None else decimal.Decimal(v) for v in values]
    schema = pa.schema([pa.field("k", key_type), pa.field("x", pa.int64())])
    for name in ("l", "r"):
        ns = PartitionedNamespace.create(str(tmp_path / name), schema, [{"source": "k", **spec}])
        ns.append(pa.table({"k": pa.array(values, key_type), "x": list(range(len(values)))}))
    contexts = []
    for spj in (True, False):
        ctx = lance_sql.SessionContext(spj=spj)
        ctx.register_namespace("l", str(tmp_path / "l"))
        ctx.register_namespace("r", str(tmp_path / "r"))
        contexts.append(ctx)
    for sql in (
        "SELECT a.k, a.x AS ax, b.x AS bx FROM l a FULL JOIN r b ON a.k = b.k",
        "SELECT b.k, count(*), sum(a.x) FROM l a JOIN r b ON a.k = b.k GROUP BY b.k",
    ):
        assert _rows(contexts[0], sql) == _rows(contexts[1], sql), sql
        assert _reasons(contexts[0], sql) == [], sql
        assert _used(contexts[0], sql) == 1, sql


def test_damaged_partition_table_is_named(tmp_path) -> None:
    """A data file damaged under a storage-partitioned join fails the query naming its table.

    The error reaches the caller as lance-sql's typed ``FormatError`` (issue #15).
    """
    import glob

    schema = pa.schema([pa.field("k", pa.int64()), pa.field("v", pa.int64())])
    for name in ("l", "r"):
        ns = PartitionedNamespace.create(
            str(tmp_path / name), schema, [{"source": "k", "transform": "bucket", "num_buckets": 4}]
        )
        ns.append(pa.table({"k": list(range(100)), "v": list(range(100))}))
    entry = PartitionedNamespace.open(str(tmp_path / "l")).tables()[0]
    with open(glob.glob(f"{entry.uri}/data/*.lance")[0], "r+b") as f:
        f.truncate(100)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("l", str(tmp_path / "l"))
    ctx.register_namespace("r", str(tmp_path / "r"))
    sql = "SELECT a.k, b.v FROM l a JOIN r b ON a.k = b.k"
    assert "StoragePartitionedJoin" in _explain(ctx, sql)
    for run in ("collect", "to_arrow_table", "count"):
        with pytest.raises(
            lance_sql.errors.FormatError, match=r"partition table '" + re.escape(entry.object_id)
        ):
            getattr(ctx.sql(sql), run)()


def test_cte_shadowing_a_namespace_is_not_the_namespace(roots) -> None:
    """``WITH orders AS (...)`` is the CTE, not the namespace: found after SPJ went on by default.

    In the plan the CTE is a filter over the namespace scan, so the join of the CTE
    with ``customers`` may be storage-partitioned; its rows must be the CTE's.
    """
    sql = (
        "WITH orders AS (SELECT * FROM orders WHERE order_id < 10) "
        "SELECT count(*) AS n FROM orders o JOIN customers c ON o.customer_id = c.id"
    )
    on, off = _ctx(roots, True), _ctx(roots, False)
    assert _rows(on, sql) == _rows(off, sql)
    exists = (
        "WITH customers AS (SELECT * FROM customers WHERE id < 5) SELECT o.order_id FROM orders o "
        "WHERE EXISTS (SELECT 1 FROM customers c WHERE c.id = o.customer_id)"
    )
    assert _rows(on, exists) == _rows(off, exists)


def test_unquoted_names_resolve_as_datafusion_does(roots) -> None:
    """``FROM Orders`` is table ``orders`` to DataFusion, so it is storage-partitioned too."""
    sql = "SELECT count(*) AS n FROM Orders o JOIN CUSTOMERS c ON o.customer_id = c.id"
    on = _ctx(roots, True)
    assert _rows(on, sql) == _rows(_ctx(roots, False), sql)
    assert "StoragePartitionedJoin" in _explain(on, sql)
