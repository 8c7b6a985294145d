"""One spec dialect: text and JSON field dicts are two spellings of the same spec, in
Python (create, add_spec), SQL (PARTITIONED BY) and the CLI; Spark's and Iceberg's plural
time names mean the same calendar fields everywhere (docs/namespaces.md "Partition specs")."""

from __future__ import annotations

import pyarrow as pa
import pytest

import lance_sql
from lance_sql import PartitionedNamespace, SpecError

SCHEMA = pa.schema([("ts", pa.timestamp("us")), ("a", pa.int64()), ("b", pa.utf8())])


def _spec(ns: PartitionedNamespace, version: int = 1) -> list[dict]:
    return ns.specs[version].to_json()["fields"]


@pytest.mark.parametrize(
    ("text", "fields"),
    [
        ("days(ts)", [{"source": "ts", "transform": "days"}]),
        ("months(ts)", [{"source": "ts", "transform": {"type": "months"}}]),
        (
            "hours(ts), bucket(16, a)",
            [
                {"source": "ts", "transform": "hours"},
                {"source": "a", "transform": "bucket", "num_buckets": 16},
            ],
        ),
        (
            "years(ts), truncate(2, b)",
            [
                {"source": "ts", "transform": "years"},
                {"source": "b", "transform": "truncate", "width": 2},
            ],
        ),
        (
            "bucket(8, a, b)",
            [{"sources": ["a", "b"], "transform": "multi_bucket", "num_buckets": 8}],
        ),
    ],
)
def test_text_and_json_dicts_are_one_spec(tmp_path, text, fields):
    by_text = PartitionedNamespace.create(tmp_path / "t", SCHEMA, text)
    by_json = PartitionedNamespace.create(tmp_path / "j", SCHEMA, fields)
    import json

    by_json_text = PartitionedNamespace.create(tmp_path / "s", SCHEMA, json.dumps(fields))
    assert _spec(by_text) == _spec(by_json) == _spec(by_json_text)


def test_days_is_the_date_not_the_day_of_month(tmp_path):
    ns = PartitionedNamespace.create(
        tmp_path / "ns", SCHEMA, [{"source": "ts", "transform": "days"}]
    )
    assert [f["transform"]["type"] for f in _spec(ns)] == ["year", "month", "day"]
    day_only = PartitionedNamespace.create(tmp_path / "d", SCHEMA, "day(ts)")
    assert [f["transform"]["type"] for f in _spec(day_only)] == ["day"]


def test_a_plural_name_with_a_field_id_is_refused(tmp_path):
    with pytest.raises(SpecError, match="omit 'field_id'"):
        PartitionedNamespace.create(
            tmp_path / "ns", SCHEMA, [{"field_id": "d", "source": "ts", "transform": "days"}]
        )


def test_add_spec_takes_text(tmp_path):
    ns = PartitionedNamespace.create(tmp_path / "ns", SCHEMA, "identity(b)")
    ns.add_spec("days(ts), bucket(4, a)")
    other = PartitionedNamespace.create(tmp_path / "o", SCHEMA, "days(ts), bucket(4, a)")
    assert _spec(ns, 2) == _spec(other)


@pytest.mark.parametrize(
    "terms", ["days(ts), bucket(4, a)", "bucket(8, a, b)", "A, truncate(2, b)"]
)
def test_sql_partitioned_by_reads_the_same_text(tmp_path, terms):
    ctx = lance_sql.SessionContext()
    ctx.sql(
        f"CREATE TABLE t (ts TIMESTAMP, a BIGINT, b VARCHAR) PARTITIONED BY ({terms}) "
        f"LOCATION '{tmp_path / 'sql'}'"
    )
    by_sql = PartitionedNamespace.open(tmp_path / "sql")
    by_text = PartitionedNamespace.create(tmp_path / "py", SCHEMA, terms.replace("A,", "a,"))
    assert _spec(by_sql) == _spec(by_text)
