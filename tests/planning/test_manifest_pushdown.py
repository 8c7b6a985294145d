"""Pruning pushed into the ``__manifest`` Lance scan selects exactly what in-memory pruning does.

Differential: random schemas, multi-version specs and predicates (the
strategies of the property test); the manifest rows are written to a real
Lance table and :func:`plan_manifest` (filter run by Lance as SQL, candidates
re-checked) must give the same partitions, residuals and report as
:func:`plan_partitions` over the same rows in memory. If Lance read a pushed
literal differently and dropped a row, the selections would differ.
"""

from __future__ import annotations

import os
import tempfile

import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from planning_helpers import field
from planning_strategies import Example, examples, predicates
from test_property_pruning import build_manifest

from lance_sql.errors import NotFoundError, PlanningError
from lance_sql.planning import manifest_scan
from lance_sql.planning.manifest_scan import plan_manifest, table_versions
from lance_sql.planning.namespace_scan import plan_scan, plan_scan_at
from lance_sql.planning.passes import prepare
from lance_sql.planning.planner import plan_partitions
from lance_sql.spec.partition_field import PartitionField, Transform
from lance_sql.spec.predicates import Predicate, to_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.namespace.spec import PartitionSpec

EXAMPLES = max(int(os.environ.get("LANCE_SQL_HYPOTHESIS_EXAMPLES", "500")) // 8, 30)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Example, Predicate]:
    ex = draw(examples())
    return ex, draw(predicates(ex))


def _same_plans(a, b) -> None:
    assert a.selected.column("object_id").to_pylist() == b.selected.column("object_id").to_pylist()
    assert [to_sql(r) for r in a.residuals] == [to_sql(r) for r in b.residuals]
    assert a.report == b.report


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(cases())
def test_pushed_selection_equals_in_memory(case: tuple[Example, Predicate]) -> None:
    ex, raw = case
    try:
        pred = prepare(raw, ex.schema)
    except PlanningError:
        return
    manifest, _ = build_manifest(ex)
    expected = plan_partitions(pred, ex.specs, ex.schema, manifest)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            ds = lance.write_dataset(manifest, os.path.join(tmp, "m"))
        except (ValueError, OSError, pa.ArrowException, TypeError):
            return  # a type Lance cannot store (then no namespace can use it)
        before = manifest_scan.PUSHDOWN_FALLBACKS[0]
        got = plan_manifest(ds, pred, ex.specs, ex.schema)
        # Lance really ran the pushed filter (no silent fallback to reading every row)
        assert manifest_scan.PUSHDOWN_FALLBACKS[0] == before, expected.manifest_filter.to_sql()
    _same_plans(got, expected)


SCHEMA = pa.schema([field("ts", pa.timestamp("us"), 0), field("k", pa.int64(), 1)])


def _namespace(tmp_path) -> PartitionedNamespace:
    ns = PartitionedNamespace.create(
        tmp_path / "ns", SCHEMA, [{"source": "ts", "transform": t} for t in ("year", "month")]
    )
    ts = pa.array([0, 40 * 86_400 * 10**6, 400 * 86_400 * 10**6], pa.timestamp("us"))
    ns.append(pa.table({"ts": ts, "k": pa.array([1, 2, 3], pa.int64())}))
    ns.add_spec(
        [
            {"source": "ts", "transform": "year"},
            {"source": "k", "transform": "bucket", "num_buckets": 4},
        ]
    )
    ns.append(pa.table({"ts": ts, "k": pa.array([4, 5, 6], pa.int64())}))
    return ns


@pytest.mark.parametrize(
    "sql",
    [
        "ts >= TIMESTAMP '1970-02-01 00:00:00'",
        "ts < '1970-01-20' OR k = 5",
        "k IN (1, 4, 6)",
        "abs(murmur3(k)) % 4 = 1",
        "year(ts) = 1971",
        "x_is_not_a_function(k) = 1",
    ],
)
def test_plan_scan_at_root_equals_plan_scan_on_open_namespace(tmp_path, sql: str) -> None:
    ns = _namespace(tmp_path)
    try:
        want = plan_scan(ns, sql)
    except PlanningError:
        with pytest.raises(PlanningError, match="x_is_not_a_function"):
            plan_scan_at(ns.root, sql)
        return
    got = plan_scan_at(ns.root, sql)
    assert got.partitions == want.partitions
    assert got.total_partitions == want.total_partitions == 6
    assert got.manifest_version == ns.manifest_version
    assert got.manifest_filter == want.manifest_filter
    assert [(s.spec_version, s.selected, s.total) for s in got.specs] == [
        (s.spec_version, s.selected, s.total) for s in want.specs
    ]
    assert got.filter_sql == want.filter_sql


def test_plan_scan_at_reads_a_pinned_version(tmp_path) -> None:
    ns = _namespace(tmp_path)
    old = PartitionedNamespace.open(ns.root, version=2)
    got = plan_scan_at(ns.root, "k >= 0", version=2)
    assert got.manifest_version == 2
    assert got.total_partitions == len(old.tables()) < 6


def test_plan_scan_at_bad_filter_names_it(tmp_path) -> None:
    ns = _namespace(tmp_path)
    with pytest.raises(PlanningError, match="no_such_column"):
        plan_scan_at(ns.root, "no_such_column = 1")


def test_plan_scan_at_missing_namespace_names_the_path(tmp_path) -> None:
    with pytest.raises(NotFoundError, match="__manifest"):
        plan_scan_at(tmp_path / "nothing", "k = 1")


def test_missing_partition_column_is_refused(tmp_path) -> None:
    specs = {1: PartitionSpec(1, (PartitionField("kk", (1,), pa.int64(), Transform("identity")),))}
    rows = pa.table({"object_id": ["v1$a$dataset"], "object_type": ["table"]})
    ds = lance.write_dataset(rows, tmp_path / "m")
    with pytest.raises(PlanningError, match="partition_field_kk"):
        plan_manifest(ds, "k = 1", specs, SCHEMA)


def test_table_versions_cached_per_content(tmp_path) -> None:
    ns = _namespace(tmp_path)
    ds = manifest_scan.open_manifest(ns.root)
    first = table_versions(ds)
    assert sorted(first.tolist()) == [1, 1, 1, 2, 2, 2]
    again = table_versions(manifest_scan.open_manifest(ns.root))
    assert again is first  # same content: no second read
    ns.append(pa.table({"ts": pa.array([10**15], pa.timestamp("us")), "k": pa.array([9])}))
    changed = table_versions(manifest_scan.open_manifest(ns.root))
    assert changed is not first and len(changed) >= 6
