"""The planner API end to end: appendix D, evolution, residuals, reports, pylance pushdown."""

from __future__ import annotations

import datetime as dt

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from planning_helpers import field

from lance_sql.errors import PlanningError
from lance_sql.planning.planner import plan_partitions
from lance_sql.spec.partition_field import PartitionField, Transform
from lance_sql.spec.predicates import TRUE, to_sql
from lance_sql.tables.namespace.spec import PartitionSpec

SCHEMA = pa.schema(
    [
        field("id", pa.int64(), 0),
        field("event_date", pa.date32(), 1),
        field("country", pa.string(), 2),
    ]
)
SPECS = {
    1: PartitionSpec(1, (PartitionField("event_date", (1,), pa.date32(), Transform("identity")),)),
    2: PartitionSpec(
        2,
        (
            PartitionField("event_year", (1,), pa.int32(), Transform("year")),
            PartitionField("country", (2,), pa.string(), Transform("identity")),
        ),
    ),
}
D = dt.date
MANIFEST = pa.table(
    {
        "object_id": [
            "v1",
            "v1$k7m2n9p4q8r5s3t6",
            "v1$k7m2n9p4q8r5s3t6$dataset",
            "v1$w1x2y3z4a5b6c7d8$dataset",
            "v2",
            "v2$e9f0g1h2i3j4k5l6$m7n8o9p0q1r2s3t4$dataset",
            "v2$e9f0g1h2i3j4k5l6$aaaaaaaaaaaaaaaa$dataset",
            "v2$bbbbbbbbbbbbbbbb$cccccccccccccccc$dataset",
        ],
        "object_type": [
            "namespace",
            "namespace",
            "table",
            "table",
            "namespace",
            "table",
            "table",
            "table",
        ],
        "location": [
            None,
            None,
            "b4a3c2d1_v1$k7m2n9p4q8r5s3t6$dataset",
            "x",
            None,
            "aabbccdd",
            "y",
            "z",
        ],
        "read_version": pa.array([None, None, 5, 1, None, 3, 1, 1], pa.uint64()),
        "partition_field_event_date": pa.array(
            [None, D(2025, 12, 10), D(2025, 12, 10), D(2025, 12, 11), None, None, None, None]
        ),
        "partition_field_event_year": pa.array(
            [None, None, None, None, None, 2025, 2025, 2024], pa.int32()
        ),
        "partition_field_country": [None, None, None, None, None, "US", "FR", "US"],
    }
)


def selected(plan) -> list[str]:
    return plan.selected.column("object_id").to_pylist()


def test_appendix_d() -> None:
    plan = plan_partitions("event_date = '2025-12-10' AND country = 'US'", SPECS, SCHEMA, MANIFEST)
    assert selected(plan) == [
        "v1$k7m2n9p4q8r5s3t6$dataset",
        "v2$e9f0g1h2i3j4k5l6$m7n8o9p0q1r2s3t4$dataset",
    ]
    assert plan.selected.column("location").to_pylist()[0] == "b4a3c2d1_v1$k7m2n9p4q8r5s3t6$dataset"
    assert plan.manifest_filter.to_sql() == (
        "object_type = 'table' AND ("
        "(starts_with(object_id, 'v1$') AND partition_field_event_date = DATE '2025-12-10')"
        " OR (starts_with(object_id, 'v2$') AND partition_field_event_year = 2025"
        " AND partition_field_country = 'US')"
        " OR NOT (starts_with(object_id, 'v1$') OR starts_with(object_id, 'v2$')))"
    )
    # v1 proves the date but not the country; v2 proves the country but not the date
    assert [to_sql(r) for r in plan.residuals] == [
        "country = 'US'",
        "event_date = DATE '2025-12-10'",
    ]
    report = plan.report
    assert (report.selected, report.total) == (2, 5)
    assert [(s.spec_id, s.selected, s.total) for s in report.specs] == [(1, 1, 2), (2, 1, 3)]
    assert "v2: 1/3 selected" in str(report)


def test_residual_is_true_where_the_partition_proves_the_filter() -> None:
    plan = plan_partitions(
        "event_date >= DATE '2025-12-11' OR country = 'FR'", SPECS, SCHEMA, MANIFEST
    )
    assert selected(plan) == [
        "v1$k7m2n9p4q8r5s3t6$dataset",  # v1 has no country field: the OR keeps all of v1
        "v1$w1x2y3z4a5b6c7d8$dataset",
        "v2$e9f0g1h2i3j4k5l6$m7n8o9p0q1r2s3t4$dataset",
        "v2$e9f0g1h2i3j4k5l6$aaaaaaaaaaaaaaaa$dataset",
    ]
    residuals = [r == TRUE for r in plan.residuals]
    # 2025-12-11 >= 2025-12-11 for every row; country = 'FR' for every row
    assert residuals == [False, True, False, True]
    assert [s.fully_matching for s in plan.report.specs] == [1, 1]


def test_no_filter_and_filters_on_other_columns_keep_everything() -> None:
    for f in (None, "id = 5", "id + 1 = 2"):
        plan = plan_partitions(f, SPECS, SCHEMA, MANIFEST)
        assert len(selected(plan)) == 5


def test_a_version_without_a_spec_is_never_pruned() -> None:
    extra = pa.concat_tables(
        [
            MANIFEST,
            pa.table({"object_id": ["v9$zz$dataset"], "object_type": ["table"]}).cast(
                pa.schema([MANIFEST.schema.field(0), MANIFEST.schema.field(1)])
            ),
        ],
        promote_options="default",
    )
    plan = plan_partitions("country = 'XX'", SPECS, SCHEMA, extra)
    assert selected(plan) == [
        "v1$k7m2n9p4q8r5s3t6$dataset",
        "v1$w1x2y3z4a5b6c7d8$dataset",
        "v9$zz$dataset",
    ]
    assert to_sql(plan.residuals[-1]) == "country = 'XX'"


def test_pyarrow_filter_input() -> None:
    expr = (pc.field("country") == "FR") & (
        pc.field("event_date") > pc.scalar(pa.scalar(0, pa.date32()))
    )
    plan = plan_partitions(expr, SPECS, SCHEMA, MANIFEST)
    assert selected(plan)[-1] == "v2$e9f0g1h2i3j4k5l6$aaaaaaaaaaaaaaaa$dataset"


def test_manifest_filter_is_accepted_by_pylance(tmp_path) -> None:
    uri = str(tmp_path / "__manifest")
    lance.write_dataset(MANIFEST, uri)
    ds = lance.dataset(uri)
    for sql in (
        "event_date = '2025-12-10' AND country = 'US'",
        "event_date >= DATE '2025-12-11' OR country NOT IN ('FR', 'DE')",
        "country LIKE 'U%' AND event_date IS NOT NULL",
    ):
        plan = plan_partitions(sql, SPECS, SCHEMA, MANIFEST)
        pushed = ds.to_table(filter=plan.manifest_filter.to_pyarrow())
        assert pushed.column("object_id").to_pylist() == selected(plan), sql


def test_manifest_rows_without_object_columns_are_refused() -> None:
    with pytest.raises(PlanningError, match="'object_type'"):
        plan_partitions(None, SPECS, SCHEMA, MANIFEST.drop_columns(["object_type"]))


def test_a_manifest_missing_a_partition_column_is_refused() -> None:
    """Treating the column as NULL would prune every v2 partition: refuse instead."""
    with pytest.raises(PlanningError, match="partition_field_country"):
        plan_partitions(
            "country = 'US'", SPECS, SCHEMA, MANIFEST.drop_columns(["partition_field_country"])
        )


def test_object_id_with_a_leading_zero_version_is_not_that_version() -> None:
    """``v01$...`` is not under spec v1 (layout.spec_version_of): not a partition table (#16)."""
    odd = pa.table(
        {
            "object_id": ["v01$zz$dataset"],
            "object_type": ["table"],
            "partition_field_event_date": pa.array([D(2025, 12, 11)]),
        }
    )
    rows = pa.concat_tables([MANIFEST, odd], promote_options="default")
    plan = plan_partitions("event_date >= DATE '2025-12-11'", SPECS, SCHEMA, rows)
    assert "v01$zz$dataset" not in selected(plan)
    assert plan.report.total == 5 and sum(s.total for s in plan.report.specs) == 5


def test_residuals_with_more_conjuncts_than_bits_in_a_word() -> None:
    """Proofs are a bool matrix, not bits of an int64: 70 conjuncts stay exact."""
    from lance_sql.spec.predicates import and_, conjuncts

    parts = [f"(id > {i} OR id < -{i})" for i in range(69)] + ["event_date >= DATE '2025-12-11'"]
    plan = plan_partitions(" AND ".join(parts), SPECS, SCHEMA, MANIFEST)
    every = conjuncts(plan.predicate)
    assert len(every) == 70
    by_id = dict(zip(selected(plan), plan.residuals, strict=True))
    kept = by_id["v1$w1x2y3z4a5b6c7d8$dataset"]  # proves only the date conjunct
    assert kept == and_(*(c for c in every if "event_date" not in to_sql(c)))
    assert by_id["v2$e9f0g1h2i3j4k5l6$m7n8o9p0q1r2s3t4$dataset"] == plan.predicate  # none
    assert plan.report.specs[0].fully_matching == 0


def test_plan_is_vectorised_over_many_partitions() -> None:
    """100,000 partitions plan in one pass (a per-partition Python loop took seconds)."""
    import time

    n = 100_000
    days = pa.array([D(2020, 1, 1) + dt.timedelta(days=i % 3000) for i in range(n)], pa.date32())
    rows = pa.table(
        {
            "object_id": pa.array([f"v1$p{i}$dataset" for i in range(n)]),
            "object_type": pa.array(["table"] * n),
            "partition_field_event_date": days,
        }
    )
    t0 = time.perf_counter()
    plan = plan_partitions(
        "event_date >= DATE '2020-01-01' AND id <> 3", {1: SPECS[1]}, SCHEMA, rows
    )
    assert plan.selected.num_rows == n
    assert len({id(r) for r in plan.residuals}) == 1  # one shared residual object
    assert to_sql(plan.residuals[0]) == "id <> 3"
    assert plan.report.specs[0].fully_matching == 0
    assert time.perf_counter() - t0 < 60  # generous: only guards against a per-row loop
