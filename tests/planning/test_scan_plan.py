from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lance_sql.errors import PlanningError
from lance_sql.planning.scan_plan import ScanPlan, plan_scan
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
    f = plan.filter_expression(ns.schema)
    return sum(b.num_rows for u in plan.scan_units(ns) for b in u.to_batches(None, f))


def test_plan_prunes_and_round_trips(ns: PartitionedNamespace) -> None:
    for flt in ("k = 3", pc.field("k") == 3):
        plan = plan_scan(ns, flt)
        assert len(plan.partitions) == 1 and plan.total_partitions == 8
        assert plan.specs[0].selected == 1 and plan.specs[0].total == 8
        assert "partition_field" in plan.specs[0].manifest_filter
        assert plan.partitions[0].values and plan.partitions[0].spec_version == 1
        assert ScanPlan.from_json(plan.to_json()) == plan
        assert ScanPlan.from_arrow(plan.to_arrow()) == plan
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
    with pytest.raises(PlanningError, match="scan_plan"):
        ScanPlan.from_arrow(pa.table({"a": [1]}))
