"""Partition specs as Iceberg-style text, and warnings about cyclic time fields."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from lance_sql.errors import SpecError
from lance_sql.spec.transforms.spec_text import (
    parse_spec_text,
    spec_fields,
    time_partition_warnings,
)
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SCHEMA = pa.schema(
    [
        pa.field("customer_id", pa.int64(), nullable=False),
        pa.field("ts", pa.timestamp("us", "UTC")),
        pa.field("s", pa.utf8()),
        pa.field("c", pa.int32()),
    ]
)


def test_iceberg_forms() -> None:
    text = "bucket(16, customer_id), year(ts), month(ts), day(ts), truncate(4, s), identity(c)"
    assert parse_spec_text(text) == [
        {"source": "customer_id", "transform": "bucket", "num_buckets": 16},
        {"source": "ts", "transform": "year"},
        {"source": "ts", "transform": "month"},
        {"source": "ts", "transform": "day"},
        {"source": "s", "transform": "truncate", "width": 4},
        {"source": "c", "transform": "identity"},
    ]


def test_shorthands_and_argument_orders() -> None:
    assert [f["transform"] for f in parse_spec_text("days(ts)")] == ["year", "month", "day"]
    assert [f["transform"] for f in parse_spec_text("months(ts)")] == ["year", "month"]
    assert [f["transform"] for f in parse_spec_text("hours(ts)")] == [
        "year",
        "month",
        "day",
        "hour",
    ]
    assert parse_spec_text("years(ts)") == [{"source": "ts", "transform": "year"}]
    assert parse_spec_text("c, truncate(s, 2), bucket(customer_id, 8)") == [
        {"source": "c", "transform": "identity"},
        {"source": "s", "transform": "truncate", "width": 2},
        {"source": "customer_id", "transform": "bucket", "num_buckets": 8},
    ]
    assert parse_spec_text("bucket(4, customer_id, s)") == [
        {"sources": ["customer_id", "s"], "transform": "multi_bucket", "num_buckets": 4}
    ]
    assert parse_spec_text('"Odd Name"') == [{"source": "Odd Name", "transform": "identity"}]


@pytest.mark.parametrize(
    "text, match",
    [
        ("", "empty"),
        ("weeks(ts)", "unknown partition transform 'weeks'"),
        ("bucket(customer_id)", "bucket"),
        ("bucket(0, customer_id)", "positive integer"),
        ("truncate(4, s, c)", "truncate"),
        ("days(ts, c)", "one column"),
        ("year(1)", "column name"),
        ("c + 1", "not a partition transform"),
        ("bucket(16, customer_id", "cannot parse"),
        ("c FROM t", "not a list"),
    ],
)
def test_bad_text_is_refused(text: str, match: str) -> None:
    with pytest.raises(SpecError, match=match):
        parse_spec_text(text)


def test_spec_fields_passes_json_through() -> None:
    assert spec_fields('[{"source": "c", "transform": "identity"}]') == [
        {"source": "c", "transform": "identity"}
    ]
    assert spec_fields('{"id": 1, "fields": []}') == '{"id": 1, "fields": []}'
    assert spec_fields("c") == [{"source": "c", "transform": "identity"}]


def test_create_with_days_text_prunes_a_day(tmp_path: Path) -> None:
    from lance_sql.planning.namespace_scan import plan_scan

    ns = PartitionedNamespace.create(
        str(tmp_path / "ns"), SCHEMA, spec_fields("days(ts), bucket(4, c)")
    )
    assert [(f.field_id, f.transform.type) for f in ns.current_spec.fields] == [
        ("ts_year", "year"),
        ("ts_month", "month"),
        ("ts_day", "day"),
        ("c_bucket_4", "bucket"),
    ]
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    ts = [start + dt.timedelta(days=d) for d in range(60)]  # Jan 3 and Feb 3 both present
    ns.append(
        pa.table(
            {"customer_id": list(range(60)), "ts": ts, "s": ["x"] * 60, "c": [1] * 60},
            schema=SCHEMA,
        )
    )
    plan = plan_scan(
        ns,
        "ts >= TIMESTAMP '2026-01-03 00:00:00+00:00' "
        "AND ts < TIMESTAMP '2026-01-04 00:00:00+00:00'",
    )
    assert len(plan.partitions) == 1 and plan.total_partitions == 60
    assert time_partition_warnings(ns.current_spec, ns.schema) == []


def test_warnings_flag_cyclic_fields_alone(tmp_path: Path) -> None:
    (day_alone,) = time_partition_warnings("day(ts), bucket(16, customer_id)")
    assert "day(ts), the day of month, without year(ts) and month(ts)" in day_alone
    assert "days(ts)" in day_alone
    (month_alone,) = time_partition_warnings("month(ts)")
    assert "without year(ts)" in month_alone and "months(ts)" in month_alone
    (hour,) = time_partition_warnings("year(ts), month(ts), hour(ts)")
    assert "without day(ts)" in hour
    assert time_partition_warnings("days(ts)") == []
    assert time_partition_warnings("hours(ts)") == []
    assert time_partition_warnings("year(ts)") == []
    assert time_partition_warnings([{"source": "ts", "transform": "day"}]) != []
    ns = PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, spec_fields("day(ts)"))
    (msg,) = time_partition_warnings(ns.current_spec, ns.schema)
    assert "'ts_day' is day(ts)" in msg


def test_create_takes_the_text_itself(tmp_path: Path) -> None:
    ns = PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, "hours(ts), c")
    assert [f.transform.type for f in ns.current_spec.fields] == [
        "year",
        "month",
        "day",
        "hour",
        "identity",
    ]
    with pytest.raises(SpecError, match="unknown partition transform 'weeks'"):
        PartitionedNamespace.create(str(tmp_path / "bad"), SCHEMA, "weeks(ts)")
