"""ScanPlan filters round-trip: ``to_json`` -> ``from_json`` -> ``filter_expression`` / task scan.

Every predicate form the pruning planner supports (the strategies of the
differential pruning tests, plus decimals) is planned, shipped as JSON and
scanned the way a task scans it; the rows must equal the rows of the whole
table where the predicate is TRUE (the IR's reference semantics, itself
cross-checked with DataFusion), and SQL filters must equal
``lance_sql.SessionContext``'s ``WHERE`` (the pushed-filter path).
"""

from __future__ import annotations

import datetime as dt
import decimal
import random
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planning_strategies import TIME_ANCHORS, Example, leaves

import lance_sql
from lance_sql.errors import PlanningError
from lance_sql.planning.arrow_expr import matching_rows
from lance_sql.planning.namespace_scan import plan_scan
from lance_sql.planning.planner import to_predicate
from lance_sql.planning.scan_filter import _datafusion_where
from lance_sql.planning.scan_plan import ScanPlan
from lance_sql.spec.predicates import (
    Column,
    Compare,
    InList,
    Literal,
    Not,
    Predicate,
    and_,
    or_,
    to_sql,
)
from lance_sql.tables.namespace.namespace import PartitionedNamespace

US = 1_000_000
SCHEMA = pa.schema(
    [
        pa.field("c0", pa.int32()),
        pa.field("c1", pa.int64()),
        pa.field("c2", pa.date32()),
        pa.field("c3", pa.timestamp("us")),
        pa.field("c4", pa.timestamp("us", "UTC")),
        pa.field("c5", pa.timestamp("us", "America/New_York")),
        pa.field("c6", pa.string()),
        pa.field("c7", pa.decimal128(10, 2)),
    ]
)
DECIMALS = [decimal.Decimal(x) for x in ("-1.25", "0.00", "0.10", "1.25", "99.99", "12.50")]


def _rows(n: int = 60) -> pa.Table:
    r = random.Random(7)

    def maybe(v: Any) -> Any:
        return None if r.random() < 0.1 else v

    ts = [r.choice(TIME_ANCHORS) + r.choice([0, 1, -1, 3600 * US, 86400 * US]) for _ in range(n)]
    cols = {
        "c0": [maybe(r.choice([-(2**31), -7, -1, 0, 3, 5, 2**31 - 1])) for _ in range(n)],
        "c1": [maybe(r.randint(-20, 20)) for _ in range(n)],
        "c2": [maybe(r.choice([0, -1, -365, 20089, 20432, 20454])) for _ in range(n)],
        "c3": [maybe(t) for t in ts],
        "c4": [maybe(t) for t in reversed(ts)],
        "c5": [maybe(r.choice(TIME_ANCHORS)) for _ in range(n)],
        "c6": [maybe(r.choice(["", "a", "ab", "abc", "b", "ca"])) for _ in range(n)],
        "c7": [maybe(r.choice(DECIMALS)) for _ in range(n)],
    }
    return pa.table({k: pa.array(v, SCHEMA.field(k).type) for k, v in cols.items()})


@pytest.fixture(scope="module")
def ns(tmp_path_factory: Any) -> PartitionedNamespace:
    root = str(tmp_path_factory.mktemp("rt") / "ns")
    ns = PartitionedNamespace.create(
        root,
        SCHEMA,
        [
            {"source": "c1", "transform": "bucket", "num_buckets": 4},
            {"source": "c3", "transform": "month"},
        ],
    )
    ns.append(_rows())
    return PartitionedNamespace.open(root)


def _decimal_leaves() -> st.SearchStrategy[Predicate]:
    t = pa.decimal128(10, 2)
    lit = st.one_of(
        st.sampled_from(DECIMALS).map(lambda d: Literal(d, t)),
        st.integers(-2, 100).map(lambda i: Literal(i, pa.int64())),
        st.sampled_from([1.25, 0.1, 12.5, -1.25, 0.3]).map(lambda f: Literal(f, pa.float64())),
    )
    op = st.sampled_from(["=", "!=", "<", "<=", ">", ">="])
    return st.one_of(
        st.builds(lambda o, v: Compare(Column("c7"), o, v), op, lit),
        st.lists(st.sampled_from(DECIMALS), min_size=1, max_size=3).map(
            lambda ds: InList(Column("c7"), tuple(Literal(d, t) for d in ds))
        ),
    )


def _predicates(ex: Example, depth: int = 2) -> st.SearchStrategy[Predicate]:
    leaf = st.one_of(leaves(ex), leaves(ex), _decimal_leaves())
    if depth == 0:
        return leaf
    sub = _predicates(ex, depth - 1)
    return st.one_of(
        leaf,
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: and_(*xs)),
        st.lists(sub, min_size=2, max_size=3).map(lambda xs: or_(*xs)),
        sub.map(Not),
    )


def _sorted(t: pa.Table) -> list:
    return sorted(t.to_pylist(), key=repr)


def _task_scan(plan: ScanPlan, ns: PartitionedNamespace) -> pa.Table:
    shipped = ScanPlan.from_json(plan.to_json())
    assert shipped == plan and shipped.scan_filter == plan.scan_filter
    task_ns = PartitionedNamespace.open(shipped.root, version=shipped.manifest_version)
    return pa.Table.from_batches(list(shipped.to_batches(task_ns)), schema=ns.schema)


@st.composite
def _cases(draw: st.DrawFn, ns: PartitionedNamespace, table: pa.Table) -> Predicate:
    ex_schema = pa.schema([f for f in ns.schema if f.name != "c7"])
    ex = Example(ex_schema, table.select(ex_schema.names), ns.specs)
    return draw(_predicates(ex))


def test_every_planner_form_round_trips_and_scans_exactly(ns: PartitionedNamespace) -> None:
    table = ns.to_table()

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def run(data: st.DataObject) -> None:
        pred = data.draw(_cases(ns, table))
        try:
            bound = to_predicate(pred, ns.schema)
        except PlanningError:
            return  # not a filter the planner accepts (e.g. a literal that fits no type)
        try:
            want = _sorted(matching_rows(bound, table))
        except PlanningError:  # a leaf the IR does not model: DataFusion over its SQL
            want = _sorted(_datafusion_where(table, to_sql(pred)))
        plan = plan_scan(ns, pred)
        assert _sorted(_task_scan(plan, ns)) == want, to_sql(bound)
        try:
            expr = ScanPlan.from_json(plan.to_json()).filter_expression()
        except PlanningError as e:  # only forms with no pyarrow equivalent may refuse
            assert "no pyarrow expression" in str(e) or "unsupported" in str(e), e
            return
        got = table if expr is None else table.filter(expr)
        assert _sorted(got) == want, to_sql(bound)

    run()


SQL_FILTERS = [
    "c5 >= TIMESTAMP '2025-03-09 00:00:00'",
    "c4 >= TIMESTAMP '2025-01-01 00:00:00'",
    "c3 < '2025-01-01'",
    "CAST(c5 AS DATE) = DATE '2025-11-02'",
    "CAST(c3 AS DATE) >= DATE '2025-03-30'",
    "CAST(c4 AS DATE) IN (DATE '2025-01-01', DATE '1970-01-01')",
    "date_trunc('day', c3) = TIMESTAMP '2025-10-26 00:00:00'",
    "date_trunc('month', c5) >= TIMESTAMP '2025-03-01 00:00:00'",
    "date_part('month', c3) = 3 AND date_part('day', c3) = 30",
    "c7 > 1.25",
    "c7 IN (0.10, 12.50)",
    "c7 BETWEEN -1.25 AND 1",
    "c2 > DATE '2025-01-01' OR c2 IS NULL",
    "c6 LIKE 'a%' AND c6 <> 'abc'",
    "left(c6, 1) = 'c'",
    "abs(murmur3(c1)) % 4 = 2",
    "murmur3(c1) % 4 = -1 OR c1 = 3",
    "c1 - c1 % 5 = 10",
    "c1 / 2 = 3",
    "c1 * 2 > 10 AND c0 IS NOT NULL",
    "murmur3(c1) + 1 > 0 AND c1 > -5",  # murmur3 inside an expression the planner does not model
    "NOT (c1 IN (1, 2, 3)) AND c6 IS NOT NULL",
    "c0 = 2147483647 OR c0 < -7",
]


@pytest.mark.parametrize("sql", SQL_FILTERS)
def test_sql_filters_round_trip_to_datafusion_rows(ns: PartitionedNamespace, sql: str) -> None:
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", ns.root)
    want = _sorted(ctx.sql(f"SELECT * FROM t WHERE {sql}").to_arrow_table().cast(ns.schema))
    for plan in (plan_scan(ns, sql), plan_scan(ns.root, sql)):
        assert _sorted(_task_scan(plan, ns)) == want


@pytest.mark.parametrize(
    "sql",
    [
        "c5 >= TIMESTAMP '2025-03-09 00:00:00'",
        "CAST(c5 AS DATE) = DATE '2025-11-02'",
        "c7 > 1.25",
        "date_part('month', c3) = 3 AND date_part('hour', c2) = 0",
    ],
)
def test_filter_expression_after_json(ns: PartitionedNamespace, sql: str) -> None:
    """The issue's examples: a task's pyarrow filter from a shipped plan."""
    plan = ScanPlan.from_json(plan_scan(ns, sql).to_json())
    expr = plan.filter_expression()
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", ns.root)
    want = _sorted(ctx.sql(f"SELECT * FROM t WHERE {sql}").to_arrow_table().cast(ns.schema))
    assert _sorted(ns.to_table().filter(expr)) == want


def test_unmodelled_leaf_is_never_rendered_true(ns: PartitionedNamespace) -> None:
    plan = ScanPlan.from_json(plan_scan(ns, "c1 / 2 = 3").to_json())
    with pytest.raises(PlanningError, match="unsupported"):
        plan.filter_expression()
    assert {r["c1"] for r in _task_scan(plan, ns).to_pylist()} <= {6, 7}


def test_a_malformed_plan_is_one_planning_error(ns: PartitionedNamespace) -> None:
    """A shipped plan missing a key, or with a value of the wrong shape, is refused with
    one typed line naming the scan plan, never a KeyError or TypeError."""
    import json

    good = json.loads(plan_scan(ns, "c1 = 3").to_json())
    broken = [
        {k: v for k, v in good.items() if k != "partitions"},
        {**good, "specs": [{"spec_version": 1}]},
        {**good, "specs": [7]},
        {**good, "partitions": [{"values": 3}]},
        {**good, "skipped_by_bounds": "many"},
    ]
    for obj in broken:
        with pytest.raises(PlanningError, match=r"^scan plan: malformed") as err:
            ScanPlan.from_json(json.dumps(obj))
        assert "\n" not in str(err.value)
    assert ScanPlan.from_json(json.dumps(good)).object_ids == plan_scan(ns, "c1 = 3").object_ids


def test_pyarrow_expression_filters_round_trip(ns: PartitionedNamespace) -> None:
    import pyarrow.compute as pc

    table = ns.to_table()
    for expr in (
        pc.field("c1") > 3,
        (pc.field("c1") * 2) > 10,  # no IR form: shipped as Substrait
        pc.field("c5") >= pa.scalar(dt.datetime(2025, 3, 9, tzinfo=dt.timezone.utc)),
    ):
        plan = plan_scan(ns, expr)
        assert _sorted(_task_scan(plan, ns)) == _sorted(table.filter(expr))


def test_join_plan_ships_exact_side_filters(ns: PartitionedNamespace) -> None:
    from lance_sql.planning.joins import JoinPlan, plan_join
    from lance_sql.planning.scan_filter import scan_batches

    left = "c5 >= TIMESTAMP '2025-03-09 00:00:00' AND c1 / 2 = 3"
    plan = plan_join(ns, ns, on=[("c1", "c1")], how="inner", left_filter=left)
    shipped = JoinPlan.from_json(plan.to_json())
    assert shipped == plan and shipped.left_filter == plan.left_filter
    assert shipped.right_filter is None
    ids = sorted({r.object_id for g in shipped.groups for r in g.left})
    units = ns.scan_units(ids)
    got = pa.Table.from_batches(
        list(scan_batches(units, shipped.left_filter, ns.schema)), schema=ns.schema
    )
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", ns.root)
    want = ctx.sql(f"SELECT * FROM t WHERE {left}").to_arrow_table().cast(ns.schema)
    assert _sorted(got) == _sorted(want)


def test_task_scan_refuses_another_manifest_version(tmp_path: Any) -> None:
    root = str(tmp_path / "ns")
    ns = PartitionedNamespace.create(
        root, SCHEMA, [{"source": "c1", "transform": "bucket", "num_buckets": 2}]
    )
    ns.append(_rows(10))
    plan = ScanPlan.from_json(plan_scan(PartitionedNamespace.open(root), "c1 > 0").to_json())
    ns.append(_rows(10))
    with pytest.raises(PlanningError, match=f"version={plan.manifest_version}"):
        list(plan.to_batches(PartitionedNamespace.open(root)))
    pinned = PartitionedNamespace.open(root, version=plan.manifest_version)
    assert sum(b.num_rows for b in plan.to_batches(pinned)) == sum(
        1 for v in _rows(10).column("c1").to_pylist() if v is not None and v > 0
    )
