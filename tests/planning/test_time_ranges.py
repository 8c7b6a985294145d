"""Time ranges through several time fields, time zones and DST changes."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from planning_helpers import SCHEMA, pfield, project

from lance_sql.planning.arrow_expr import evaluate
from lance_sql.planning.planner import plan_partitions
from lance_sql.planning.sql_filter import parse_filter
from lance_sql.spec.time_ranges import offset_bounds
from lance_sql.spec.transforms import apply_field
from lance_sql.tables.namespace.spec import PartitionSpec

Y, M, D, H = (f"partition_field_{k}" for k in "ymdh")


def chain(source: str, depth: int) -> list:
    return [pfield(source, kind, name=kind[0]) for kind in ("year", "month", "day", "hour")[:depth]]


def test_range_through_year_month_day_is_a_tuple_comparison() -> None:
    inclusive, strict = project(chain("d", 3), "d >= DATE '2025-12-10'")
    assert inclusive == f"{Y} > 2025 OR ({Y} = 2025 AND ({M} > 12 OR ({M} = 12 AND {D} >= 10)))"
    # a date is exactly one (y, m, d) partition: strict says the same thing
    assert strict == f"{Y} > 2025 OR ({Y} = 2025 AND ({M} > 12 OR ({M} = 12 AND {D} > 9)))"
    inclusive, strict = project(chain("d", 2), "d < DATE '2025-03-01'")
    assert inclusive == f"{Y} < 2025 OR ({Y} = 2025 AND {M} <= 2)"
    assert strict == f"{Y} < 2025 OR ({Y} = 2025 AND {M} < 3)"


def test_range_with_month_but_no_year_does_not_prune() -> None:
    month_day = [pfield("d", "month", name="m"), pfield("d", "day", name="d")]
    assert project(month_day, "d >= DATE '2025-12-10'") == ("TRUE", "FALSE")


def test_naive_timestamp_ranges_use_the_neighbouring_instant() -> None:
    inclusive, strict = project(chain("ts", 4), "ts > TIMESTAMP '2025-12-31 23:59:59.999999'")
    assert inclusive == (
        f"{Y} > 2026 OR ({Y} = 2026 AND ({M} > 1 OR ({M} = 1"
        f" AND ({D} > 1 OR ({D} = 1 AND {H} >= 0)))))"
    )
    assert strict == (
        f"{Y} > 2025 OR ({Y} = 2025 AND ({M} > 12 OR ({M} = 12"
        f" AND ({D} > 31 OR ({D} = 31 AND {H} > 23)))))"
    )
    assert project(chain("ts", 1), "ts < TIMESTAMP '2025-01-01 00:00:00'") == (
        f"{Y} <= 2024",
        f"{Y} < 2025",
    )


def test_zone_offset_bounds() -> None:
    lo, hi = offset_bounds("Europe/Paris")
    assert lo <= 0 and hi >= 2 * 3600 * 10**6  # CET/CEST and historic double summer time
    assert offset_bounds("+05:30") == (19_800_000_000, 19_800_000_000)
    assert offset_bounds(None) == (0, 0)
    assert offset_bounds("Not/AZone") is None


def test_zoned_range_is_widened_and_zone_unknown_prunes_nothing() -> None:
    inclusive, strict = project(chain("tz", 1), "tz >= '2025-01-01 00:00:00'")
    assert inclusive == f"{Y} >= 2024"  # local midnight minus the zone's widest offset margin
    assert strict == f"{Y} > 2025"


def _partitions(fields, values: pa.Array) -> dict[tuple, list[int]]:
    cols = [apply_field(f, [values]).to_pylist() for f in fields]
    out: dict[tuple, list[int]] = {}
    for i in range(len(values)):
        out.setdefault(tuple(c[i] for c in cols), []).append(i)
    return out


@pytest.mark.parametrize("source", ["tz", "ny"])
def test_dst_changes_never_lose_rows(source: str) -> None:
    """Every instant across both DST changes of 2025, every 15 minutes, every range bound."""
    start = {"tz": dt.datetime(2025, 3, 29, 20), "ny": dt.datetime(2025, 3, 8, 22)}[source]
    fall = {"tz": dt.datetime(2025, 10, 25, 20), "ny": dt.datetime(2025, 11, 1, 22)}[source]
    step = dt.timedelta(minutes=15)
    instants = [start + i * step for i in range(4 * 14)] + [fall + i * step for i in range(4 * 14)]
    t = SCHEMA.field(source).type
    epoch = dt.datetime(1970, 1, 1)
    values = pa.array(
        [(x - epoch) // dt.timedelta(microseconds=1) for x in instants], pa.int64()
    ).cast(t)
    rows = pa.table({source: values}).cast(pa.schema([SCHEMA.field(source)]))
    fields = chain(source, 4)
    spec = PartitionSpec(1, tuple(fields))
    parts = _partitions(fields, values)
    ids = {key: f"v1${i}$dataset" for i, key in enumerate(parts)}
    manifest = pa.table(
        {
            "object_id": list(ids.values()),
            "object_type": ["table"] * len(ids),
            **{
                f.column_name: pa.array([k[j] for k in ids], pa.int32())
                for j, f in enumerate(fields)
            },
        }
    )
    for bound in instants[::3]:
        text = bound.isoformat() + "Z"
        for op in ("<", "<=", ">", ">=", "="):
            sql = f"{source} {op} '{text}'"
            pred = parse_filter(sql, SCHEMA)
            truth = pc.fill_null(evaluate(pred, rows), False).to_pylist()
            plan = plan_partitions(pred, {1: spec}, SCHEMA, manifest)
            selected = set(plan.selected.column("object_id").to_pylist())
            for key, members in parts.items():
                if any(truth[i] for i in members):
                    assert ids[key] in selected, f"{sql}: lost partition {key}"
            for oid, residual in zip(
                plan.selected.column("object_id").to_pylist(), plan.residuals, strict=True
            ):
                key = next(k for k, v in ids.items() if v == oid)
                sub = rows.take(parts[key])
                got = pc.fill_null(evaluate(residual, sub), False).to_pylist()
                assert got == [truth[i] for i in parts[key]], f"{sql}: residual of {key}"
    # the fall-back hour 02:00-02:59 local happens twice: one partition, both instants
    hours = [k for k in parts if k[1] in (10, 11) and k[3] in (1, 2)]
    assert hours


def test_local_fields_are_computed_in_the_column_zone() -> None:
    # 2025-10-26T00:30Z is 02:30 CEST; 01:30Z is 02:30 CET (after the fall back)
    inc_a, _ = project(chain("tz", 4), "tz = '2025-10-26T00:30:00Z'")
    inc_b, _ = project(chain("tz", 4), "tz = '2025-10-26T01:30:00Z'")
    expected = f"{Y} = 2025 AND {M} = 10 AND {D} = 26 AND partition_field_h = 2"
    assert inc_a == inc_b == expected


def test_date_trunc_and_cast_to_date_terms() -> None:
    fields = chain("ts", 3)
    inclusive, strict = project(fields, "date_trunc('day', ts) = TIMESTAMP '2025-12-10 00:00:00'")
    assert inclusive == strict == f"{Y} = 2025 AND {M} = 12 AND {D} = 10"
    assert (
        project(fields, "date_trunc('day', ts) = TIMESTAMP '2025-12-10 00:00:01'") == ("FALSE",) * 2
    )
    inclusive, strict = project(fields, "CAST(ts AS DATE) >= DATE '2025-12-10'")
    assert inclusive == f"{Y} > 2025 OR ({Y} = 2025 AND ({M} > 12 OR ({M} = 12 AND {D} >= 10)))"
    assert strict == inclusive
    inclusive, strict = project(chain("ts", 1), "date_trunc('month', ts) < TIMESTAMP '2025-03-01'")
    assert (inclusive, strict) == (f"{Y} <= 2025", f"{Y} < 2025")
    # zoned: '=' maps to the local tuple; ranges only through the source (never strict)
    inclusive, strict = project(
        chain("tz", 3), "date_trunc('day', tz) = '2025-12-10T00:00:00+01:00'"
    )
    assert inclusive == f"{Y} = 2025 AND {M} = 12 AND {D} = 10" and strict == "FALSE"
