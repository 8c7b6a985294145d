"""Build specs, partitions tables and rows for SPJ tests from plain Python data (no I/O)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

import udfs
from lance_sql.planning.joins.plan import JoinPlan
from lance_sql.spec.partition_field import PartitionField, Transform
from lance_sql.spec.transforms import transform_class
from lance_sql.tables.namespace.spec import PartitionSpec


def schema(**columns: pa.DataType) -> pa.Schema:
    """A namespace schema; field ids follow the argument order (0, 1, ...)."""
    return pa.schema(
        [
            pa.field(name, t, metadata={"lance:field_id": str(i)})
            for i, (name, t) in enumerate(columns.items())
        ]
    )


def field(
    sch: pa.Schema,
    sources: str | Sequence[str],
    kind: str,
    param: int | None = None,
    *,
    field_id: str | None = None,
    expression: str | None = None,
    result_type: pa.DataType | None = None,
) -> PartitionField:
    names = [sources] if isinstance(sources, str) else list(sources)
    ids = tuple(sch.names.index(n) for n in names)
    types = [sch.field(n).type for n in names]
    if kind == "expression":
        fid = field_id or f"{'_'.join(names)}_expr"
        return PartitionField(fid, ids, result_type, None, expression)
    t = Transform(
        kind,
        param if kind in ("bucket", "multi_bucket") else None,
        param if kind == "truncate" else None,
    )
    suffix = "" if kind == "identity" else f"_{kind}{'' if param is None else param}"
    fid = field_id or f"{'_'.join(names)}{suffix}"
    return PartitionField(fid, ids, transform_class(t).result_type_of(t, types), t)


def specs(*versions: Sequence[PartitionField]) -> dict[int, PartitionSpec]:
    return {i + 1: PartitionSpec(i + 1, tuple(fs)) for i, fs in enumerate(versions)}


def partition_values(
    sch: pa.Schema, spec: PartitionSpec, rows: list[dict[str, Any]]
) -> list[tuple[Any, ...]]:
    """Every row's partition values under ``spec`` (computed with udfs, like a writer)."""
    if not rows:
        return []
    cols = []
    for f in spec.fields:
        src = [
            pa.array([r.get(sch.names[s]) for r in rows], sch.field(s).type) for s in f.source_ids
        ]
        if f.transform is not None:
            cols.append(udfs.apply_transform(f.transform, src).to_pylist())
        else:
            cols.append(udfs.evaluate_expression(f.expression, src, f.result_type).to_pylist())
    return list(zip(*cols, strict=True))


def layout(
    sch: pa.Schema,
    spec_map: dict[int, PartitionSpec],
    rows: list[dict[str, Any]],
    versions: list[int],
) -> tuple[pa.Table, dict[str, list[dict[str, Any]]]]:
    """Write rows (row i under spec ``versions[i]``) into partitions.

    Returns the partitions table (as ``PartitionedNamespace.partitions()`` shapes
    it) and the rows of each partition by object_id.
    """
    by_part: dict[tuple[int, tuple], list[dict[str, Any]]] = {}
    for v in sorted(set(versions)):
        mine = [r for r, rv in zip(rows, versions, strict=True) if rv == v]
        for r, vals in zip(mine, partition_values(sch, spec_map[v], mine), strict=True):
            by_part.setdefault((v, vals), []).append(r)
    return partitions_table(spec_map, list(by_part)), {
        _oid(i, v): by_part[(v, vals)] for i, (v, vals) in enumerate(by_part)
    }


def _oid(i: int, v: int) -> str:
    return f"v{v}$p{i:05d}$dataset"


def partitions_table(
    spec_map: dict[int, PartitionSpec], parts: list[tuple[int, tuple]]
) -> pa.Table:
    """A partitions table for (spec version, values) pairs, one row each."""
    all_fields: dict[str, PartitionField] = {}
    for v in sorted(spec_map):
        for f in spec_map[v].fields:
            all_fields.setdefault(f.field_id, f)
    cols: dict[str, Any] = {
        "object_id": pa.array([_oid(i, v) for i, (v, _) in enumerate(parts)], pa.string()),
        "location": pa.array(
            [f"{i:08x}_{_oid(i, v)}" for i, (v, _) in enumerate(parts)], pa.string()
        ),
        "spec_version": pa.array([v for v, _ in parts], pa.int32()),
        "read_version": pa.array([1] * len(parts), pa.uint64()),
        "read_branch": pa.array([None] * len(parts), pa.string()),
        "read_tag": pa.array([None] * len(parts), pa.string()),
    }
    for fid, f in all_fields.items():
        values = []
        for v, vals in parts:
            ids = [g.field_id for g in spec_map[v].fields]
            values.append(vals[ids.index(fid)] if fid in ids else None)
        cols[f"partition_field_{fid}"] = pa.array(values, f.result_type)
    return pa.table(cols)


def _eq(a: Any, b: Any) -> bool:
    return a is not None and b is not None and a == b


def reference_join(
    left: list[dict[str, Any]],
    right: list[dict[str, Any]],
    on: Sequence[tuple[str, str]],
    how: str,
) -> Counter:
    """The join by SQL equality (NULL never matches), as a multiset of (lid, rid) rows."""
    out: Counter = Counter()
    matched_right: set[int] = set()
    for lrow in left:
        hits = [r for r in right if all(_eq(lrow[a], r[b]) for a, b in on)]
        for r in hits:
            matched_right.add(r["rid"])
        if how in ("inner", "left", "full", "right"):
            for r in hits:
                out[(lrow["lid"], r["rid"])] += 1
            if not hits and how in ("left", "full"):
                out[(lrow["lid"], None)] += 1
        elif (how == "semi" and hits) or (how == "anti" and not hits):
            out[(lrow["lid"], None)] += 1
    for r in right:
        hit = r["rid"] in matched_right
        keep = (how in ("right", "full", "right_anti") and not hit) or (how == "right_semi" and hit)
        if keep:
            out[(None, r["rid"])] += 1
    return out


def grouped_join(
    plan: JoinPlan,
    left_rows: dict[str, list[dict[str, Any]]],
    right_rows: dict[str, list[dict[str, Any]]],
) -> Counter:
    """Join group by group (each group on its own) and add the results up."""
    out: Counter = Counter()
    for g in plan.groups:
        lr = [r for p in g.left for r in left_rows[p.object_id]]
        rr = [r for p in g.right for r in right_rows[p.object_id]]
        out += reference_join(lr, rr, plan.on, plan.how)
    return out


def assert_partitions_once(plan: JoinPlan) -> None:
    """Each partition is in at most one group per side (else rows would repeat)."""
    for side in ("left", "right"):
        seen = Counter(p.object_id for g in plan.groups for p in getattr(g, side))
        dup = [k for k, n in seen.items() if n > 1]
        assert not dup, f"{side} partitions in several groups: {dup}"
