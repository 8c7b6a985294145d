from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lance_sql.errors import PlanningError
from lance_sql.planning.namespace_scan import plan_scan
from lance_sql.planning.scan_plan import ScanPlan
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("s", pa.utf8())])


@pytest.fixture
def ns(tmp_path: Any) -> PartitionedNamespace:
    ns = PartitionedNamespace.create(
        str(tmp_path / "ns"), SCHEMA, [{"source": "k", "transform": "bucket", "num_buckets": 8}]
    )
    ns.append(pa.table({"k": range(100), "s": [str(i % 5) for i in range(100)]}, schema=SCHEMA))
    return ns


def _rows(plan: ScanPlan, ns: PartitionedNamespace) -> int:
    f = plan.filter_expression()
    return sum(b.num_rows for u in plan.scan_units(ns) for b in u.to_batches(None, f))


def test_plan_prunes_and_round_trips(ns: PartitionedNamespace) -> None:
    for flt in ("k = 3", pc.field("k") == 3):
        plan = plan_scan(ns, flt)
        assert len(plan.partitions) == 1 and plan.total_partitions == 8
        assert plan.specs[0].selected == 1 and plan.specs[0].total == 8
        assert "partition_field" in plan.specs[0].manifest_filter
        assert plan.partitions[0].values and plan.partitions[0].spec_version == 1
        assert ScanPlan.from_json(plan.to_json()) == plan
        assert _rows(plan, ns) == 1
        assert "1/8" in plan.explain()


def test_plan_without_filter_and_unprunable(ns: PartitionedNamespace) -> None:
    full = plan_scan(ns)
    assert len(full.partitions) == 8 and full.filter_sql is None
    assert _rows(full, ns) == 100
    strings = plan_scan(ns, "s = '1'")
    assert len(strings.partitions) == 8 and _rows(strings, ns) == 20


def test_bad_inputs_name_the_culprit(ns: PartitionedNamespace) -> None:
    with pytest.raises(PlanningError, match="nosuch"):
        plan_scan(ns, "nosuch = 1")
    with pytest.raises(PlanningError, match="format"):
        ScanPlan.from_json('{"format": "x"}')
    with pytest.raises(PlanningError, match="scan plan: not valid JSON"):
        ScanPlan.from_json("{")
    with pytest.raises(PlanningError, match=r"scan plan: expected format .*, got 'list'"):
        ScanPlan.from_dict([])  # type: ignore[arg-type]


def test_per_spec_version_reports_round_trip(ns: PartitionedNamespace) -> None:
    ns.add_spec([{"source": "s", "transform": "identity"}])
    ns.append(pa.table({"k": range(10), "s": [str(i % 2) for i in range(10)]}, schema=SCHEMA))
    full = plan_scan(ns)
    assert [(s.spec_version, s.selected, s.total, s.manifest_filter) for s in full.specs] == [
        (1, 8, 8, "TRUE"),
        (2, 2, 2, "TRUE"),
    ]
    plan = plan_scan(ns, "s = '1' AND k >= 0")
    v1, v2 = plan.specs
    assert (v1.selected, v1.total, v1.manifest_filter) == (8, 8, "TRUE")
    assert (v2.selected, v2.total) == (1, 2) and "partition_field_s = '1'" in v2.manifest_filter
    assert v2.fully_matching == 0  # k >= 0 is not proven by an identity field on s
    assert plan_scan(ns, "s = '1'").specs[1].fully_matching == 1
    for p in (full, plan):
        assert ScanPlan.from_json(p.to_json()) == p
    text = plan.explain()
    assert "v1: 8/8 selected" in text and "v2: 1/2 selected (0 without re-check)" in text
    # plans serialised before the field existed still load
    old = plan.to_dict()
    for s in old["specs"]:
        del s["fully_matching"]
    assert ScanPlan.from_dict(old).specs[1].fully_matching == 0
