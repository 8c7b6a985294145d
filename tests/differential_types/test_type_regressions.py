"""Regressions of issue #16 (time zones, literals, floats): each failed before its fix."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import datafusion
import lance
import pyarrow as pa
import pytest

import lance_sql
import udfs
from lance_sql.spec.arrow_json import data_type_from_json, data_type_to_json

UTC = dt.timezone.utc


def _rows(ctx: datafusion.SessionContext, sql: str) -> list[dict]:
    return ctx.sql(sql).to_arrow_table().to_pylist()


def _value(partition: object, column: str) -> object:
    return dict(partition.values)[column]  # type: ignore[attr-defined]


def _memory(table: pa.Table, name: str = "m") -> datafusion.SessionContext:
    ctx = datafusion.SessionContext()
    ctx.from_arrow(table, name)
    return ctx


# ------------------------------------------------------------------ time zones


def test_zone_round_trips_through_schema_json() -> None:
    t = pa.timestamp("us", "America/New_York")
    obj = data_type_to_json(t)
    assert obj == {"type": "timestamp", "unit": "us", "timezone": "America/New_York"}
    assert data_type_from_json(json.loads(json.dumps(obj))) == t
    assert data_type_from_json({"type": "timestamp"}) == pa.timestamp("us")


def test_identity_keeps_both_instants_of_the_fall_back_hour(tmp_path: Path) -> None:
    tz = "Europe/Paris"
    schema = pa.schema([("t", pa.timestamp("us", tz)), ("v", pa.int64())])
    ns = lance_sql.PartitionedNamespace.create(
        str(tmp_path / "ns"),
        schema,
        [{"field_id": "tp", "source": "t", "transform": {"type": "identity"}}],
    )
    instants = [dt.datetime(2025, 10, 25, 23, tzinfo=UTC) + dt.timedelta(hours=h) for h in range(4)]
    ns.append(pa.table({"t": pa.array(instants, schema.field("t").type), "v": [1, 2, 3, 4]}))
    assert len(ns.partitions()) == 4  # 00:00Z and 01:00Z are both 02:00 local
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("n", str(tmp_path / "ns"))
    got = _rows(ctx, "SELECT v FROM n WHERE t = '2025-10-26T01:00:00Z'")
    assert got == [{"v": 3}]
    pairs = _rows(ctx, "SELECT a.v AS x, b.v AS y FROM n a JOIN n b ON a.t = b.t ORDER BY x")
    assert [(r["x"], r["y"]) for r in pairs] == [(1, 1), (2, 2), (3, 3), (4, 4)]


def test_zoned_timestamp_literals_match_datafusion(tmp_path: Path) -> None:
    tz = "America/New_York"
    schema = pa.schema([("ts", pa.timestamp("us", tz)), ("v", pa.int64())])
    ns = lance_sql.PartitionedNamespace.create(
        str(tmp_path / "ns"),
        schema,
        [{"field_id": "h", "source": "ts", "transform": {"type": "hour"}}],
    )
    data = pa.table(
        {
            "ts": pa.array(
                [
                    dt.datetime(2025, 3, 1, 10, 30, tzinfo=UTC),
                    dt.datetime(2025, 3, 9, 7, tzinfo=UTC),
                ],
                schema.field("ts").type,
            ),
            "v": [1, 2],
        }
    )
    ns.append(data)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("n", str(tmp_path / "ns"))
    mem = _memory(data)
    assert str(_rows(ctx, "SELECT ts FROM n WHERE v = 1")[0]["ts"].time()) == "05:30:00"
    for where in (
        "ts = TIMESTAMP '2025-03-01 05:30:00'",
        "ts = TIMESTAMP '2025-03-01T10:30:00Z'",
        "ts = '2025-03-01 05:30:00'",
        "ts = '2025-03-01T10:30:00Z'",
        "date_part('hour', ts) = 5",
        "date_part('hour', ts) = 3",
        "ts >= '2025-03-09T03:00:00-04:00'",
    ):
        want = sorted(r["v"] for r in _rows(mem, f"SELECT v FROM m WHERE {where}"))
        got = sorted(r["v"] for r in _rows(ctx, f"SELECT v FROM n WHERE {where}"))
        assert got == want, where
        kept = {_value(p, "partition_field_h") for p in lance_sql.plan_scan(ns, where).partitions}
        assert {5 if v == 1 else 3 for v in want} <= kept, where


# -------------------------------------------------------------------- literals


@pytest.fixture
def decimal_ns(tmp_path: Path) -> tuple[lance_sql.PartitionedNamespace, pa.Table]:
    schema = pa.schema([("c0", pa.decimal128(10, 2)), ("s", pa.string())])
    ns = lance_sql.PartitionedNamespace.create(
        str(tmp_path / "dec"),
        schema,
        [{"field_id": "c0p", "source": "c0", "transform": {"type": "identity"}}],
    )
    values = [decimal.Decimal(v) for v in ("12.30", "1.00", "5.55")]
    data = pa.table({"c0": pa.array(values, schema.field("c0").type), "s": ["a", "b", "c"]})
    ns.append(data)
    return ns, data


def test_float_literal_against_decimal_identity_keeps_its_partition(decimal_ns) -> None:
    ns, _ = decimal_ns
    plan = lance_sql.plan_scan(ns, "c0 = 12.30")
    assert [_value(p, "partition_field_c0p") for p in plan.partitions] == [decimal.Decimal("12.30")]
    assert len(lance_sql.plan_scan(ns, "c0 >= 5.55").partitions) == 2
    assert len(lance_sql.plan_scan(ns, "c0 = 12.301").partitions) == 0


def test_float_literal_against_decimal_in_sql(decimal_ns) -> None:
    ns, data = decimal_ns
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("n", ns.root)
    mem = _memory(data, "n")
    for sql in (
        "SELECT a.s FROM n a JOIN n b ON a.c0 = b.c0 WHERE a.c0 = 12.30",
        "SELECT s FROM n WHERE c0 >= 12.30 AND s LIKE 'a%'",
        "SELECT s FROM n WHERE c0 < 5.551 ORDER BY s",
        "SELECT s FROM n WHERE c0 IN (1.0, 12.3) ORDER BY s",
    ):
        assert _rows(ctx, sql) == _rows(mem, sql), sql


def test_decimal_truncate_is_the_derived_expression() -> None:
    t = pa.decimal128(10, 2)
    values = ["1.25", "-1.25", "12.34", "-7.50", "99.99", "100.00", "-250.01", "0.00"]
    arr = pa.array([decimal.Decimal(v) for v in values] + [None], t)
    for width in (1, 5, 100):
        got = udfs.truncate(arr, width)
        want = _memory(pa.table({"col0": arr}), "x").sql(
            f"SELECT arrow_cast(col0 - (col0 % {width}), 'Decimal128(10, 2)') AS v FROM x"
        )
        assert got.to_pylist() == want.to_arrow_table().column("v").to_pylist(), width
    assert udfs.truncate(pa.array([decimal.Decimal("1.25")], t), 100).to_pylist() == [
        decimal.Decimal("0.00")
    ]


# ---------------------------------------------------------------------- floats

_FLOATS = pa.table(
    {
        "id": pa.array([0, 1, 2, 3], pa.int64()),
        "f1": pa.array([0.0, float("nan"), 1.0, None], pa.float64()),
        "f2": pa.array([-0.0, float("nan"), float("nan"), 2.0], pa.float64()),
    }
)
_FLOAT_QUERIES = (
    "f2 = f1",
    "f2 < f1",
    "f2 > f1",
    "f2 <= f1",
    "f2 != f1",
    "NOT (f2 >= f1)",
    "f2 > 1e300",
    "f1 = 'NaN'::double",
)


def _float_ids(ctx: datafusion.SessionContext, table: str, where: str) -> list[int]:
    return sorted(r["id"] for r in _rows(ctx, f"SELECT id FROM {table} WHERE {where}"))


def test_float_columns_compare_as_sql_on_register_lance(tmp_path: Path) -> None:
    lance.write_dataset(_FLOATS, str(tmp_path / "f.lance"))
    ctx = lance_sql.SessionContext()
    ctx.register_lance("f", str(tmp_path / "f.lance"))
    mem = _memory(_FLOATS, "f")
    assert _float_ids(ctx, "f", "f2 = f1") == [0, 1]
    assert _float_ids(ctx, "f", "f2 < f1") == []
    for where in _FLOAT_QUERIES:
        assert _float_ids(ctx, "f", where) == _float_ids(mem, "f", where), where


def test_float_columns_compare_as_sql_on_namespaces(tmp_path: Path) -> None:
    ns = lance_sql.PartitionedNamespace.create(
        str(tmp_path / "fns"),
        _FLOATS.schema,
        [{"field_id": "b", "source": "id", "transform": {"type": "bucket", "num_buckets": 2}}],
    )
    ns.append(_FLOATS)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("f", str(tmp_path / "fns"))
    mem = _memory(_FLOATS, "f")
    assert _float_ids(ctx, "f", "f2 = f1") == [0, 1]
    assert _float_ids(ctx, "f", "f2 < f1") == []
    for where in _FLOAT_QUERIES:
        assert _float_ids(ctx, "f", where) == _float_ids(mem, "f", where), where


def test_float_fallback_path_has_sql_semantics() -> None:
    import pyarrow.compute as pc

    from lance_sql.tables.scan import with_sql_semantics

    t = _FLOATS
    mem = _memory(t, "f")
    cases = {
        "f2 = f1": pc.field("f2") == pc.field("f1"),
        "f2 > f1": pc.field("f2") > pc.field("f1"),
        "f2 > 1.5": pc.field("f2") > 1.5,
        "f1 = 'NaN'::double": pc.field("f1") == float("nan"),
        "NOT (f2 < f1)": ~(pc.field("f2") < pc.field("f1")),
    }
    for sql, expr in cases.items():
        got = sorted(t.filter(with_sql_semantics(expr, t.schema)).column("id").to_pylist())
        assert got == _float_ids(mem, "f", sql), sql
