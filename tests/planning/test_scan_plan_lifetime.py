"""A ``ScanPlan`` is freed as soon as nothing refers to it, without waiting for Python's
cyclic collector: storage-partitioned join groups hold their in-memory sides in plans,
so a plan referring to itself kept ~12 MB per group alive after the query."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import lance_sql
from lance_sql.planning.namespace_scan import plan_scan
from lance_sql.planning.scan_plan import ScanPlan


@pytest.fixture
def no_cyclic_gc() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _freed_by_refcount(make: object) -> bool:
    ref = weakref.ref(make())  # type: ignore[operator]
    return ref() is None


def test_plans_are_freed_without_the_cyclic_collector(tmp_path: Path, no_cyclic_gc: None) -> None:
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    ns = lance_sql.PartitionedNamespace.create(str(tmp_path / "ns"), schema, "bucket(4, k)")
    ns.append(pa.table({"k": list(range(20)), "v": list(range(20))}, schema=schema))

    def planned() -> ScanPlan:
        plan = plan_scan(ns, "k = 3 AND v > 1")
        assert plan.filter_sql is not None  # the lazy text, computed
        return plan

    def unread() -> ScanPlan:
        return plan_scan(ns, "v > 1")  # filter_sql never asked for

    def of_units() -> ScanPlan:
        plan = ScanPlan.of_units([object()], "side")
        return plan.with_units([object()], lambda: "group")

    for make in (planned, unread, of_units):
        assert _freed_by_refcount(make), make.__name__
