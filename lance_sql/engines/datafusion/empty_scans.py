"""Scans whose pushed filter DataFusion folded to a FALSE or NULL literal read nothing.

For ``WHERE s = 'a' AND s = 'b' AND x > 0`` DataFusion's optimizer folds the
contradiction and hands the table scan ``full_filters=[x > 0, Boolean(false)]``.
datafusion-python 55 builds the pushed filter for a Python (pyarrow-dataset)
table by AND-ing the conjuncts in Python, and a bare ``pa.BooleanScalar`` has
no ``&`` with a pyarrow Expression: the query failed with a raw ``TypeError``
before any lance-sql code ran, where DataFusion over memory tables returns no
rows. A conjunct that is FALSE or NULL means the scan passes no row, so this
pass replaces such a scan, in the query's Substrait plan, by an empty relation
with the same columns (a ``VirtualTable`` with no rows); everything above it
(aggregates over no rows, outer joins) then runs as DataFusion runs it.
"""

from __future__ import annotations

from typing import Any

from substrait import algebra_pb2, plan_pb2

from lance_sql.engines.datafusion import substrait_plan as sp


def _preorder(plan: Any) -> list[Any]:
    out = [plan]
    for child in plan.inputs():
        out.extend(_preorder(child))
    return out


def _is_false_or_null(expr: Any) -> bool:
    v = expr.to_variant()
    if type(v).__name__ != "Literal":
        return False
    if v.data_type() == "Null":
        return True
    return v.data_type() == "Boolean" and v.value_bool() is not True


def empty_scan_indexes(logical: Any) -> list[int]:
    """Pre-order positions (among TableScans) of scans with a FALSE/NULL pushed conjunct."""
    out = []
    scans = [n.to_variant() for n in _preorder(logical)]
    scans = [v for v in scans if type(v).__name__ == "TableScan"]
    for i, scan in enumerate(scans):
        if any(_is_false_or_null(f) for f in scan.filters()):
            out.append(i)
    return out


def empty_scans(plan: plan_pb2.Plan, indexes: list[int]) -> int:
    """Replace the named-table reads at ``indexes`` (pre-order) by empty relations; how many."""
    reads = [r for r in sp.walk(sp.root_rel(plan)) if sp.table_name(r) is not None]
    done = 0
    for i in indexes:
        if i >= len(reads):
            continue
        read = reads[i].read
        kept = algebra_pb2.ReadRel()
        fields = None
        if read.HasField("projection"):
            fields = [item.field for item in read.projection.select.struct_items]
        kept.base_schema.CopyFrom(sp.project_named_struct(read.base_schema, fields))
        kept.common.CopyFrom(read.common)
        kept.virtual_table.SetInParent()
        read.CopyFrom(kept)
        done += 1
    return done


__all__ = ["empty_scan_indexes", "empty_scans"]
