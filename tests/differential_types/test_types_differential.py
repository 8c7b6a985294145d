"""DuckDB-backed differential test: zoned timestamps, decimals and floats (issue #16).

Namespaces (identity / hour / day / month / year / truncate / bucket specs, two
spec versions for time) are written once per module; hypothesis then draws
predicates. Each predicate runs through ``lance_sql.SessionContext`` (pruning,
pushed filters, Lance scans) and ``lance_sql.plan_scan``, and is checked against
an oracle over the same Arrow rows:

- DuckDB where its semantics equal DataFusion's: instants compared as
  ``epoch_us(ts)``, ``date_part`` in the column's zone (``SET TimeZone``),
  integer and decimal literals against decimals, floats (both treat -0.0 = 0.0
  and NaN as equal to NaN and larger than every number);
- a plain DataFusion memory table where DuckDB differs *by design*: a float
  literal against a decimal column (DataFusion rounds the float into
  Decimal(30,15), DuckDB compares as DOUBLE) and ``TIMESTAMP '...'`` literals on
  zoned columns (DataFusion reads the naive literal as local time in the column's
  zone, DuckDB as UTC/session time).

``plan_scan`` must keep every partition holding a matching row.
The default run draws 520 predicates (4 tests x 130); ``-m slow`` draws 2,500 (2 x 1,250).
"""

from __future__ import annotations

import datetime as dt
import decimal
import zoneinfo
from pathlib import Path
from typing import Any

import datafusion
import duckdb
import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_sql

UTC = dt.timezone.utc
ZONES = ("UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe")
OPS = ("=", "!=", "<", "<=", ">", ">=")
_FAST = settings(
    max_examples=130, deadline=None, suppress_health_check=list(HealthCheck), database=None
)
_SLOW = settings(
    max_examples=1250, deadline=None, suppress_health_check=list(HealthCheck), database=None
)


def _instants() -> list[dt.datetime]:
    """DST changes both ways in every zone used, pre-1970 values, odd microseconds."""
    base = [
        dt.datetime(2025, 3, 30, 0, 30, tzinfo=UTC),  # Paris spring forward at 01:00Z
        dt.datetime(2025, 3, 30, 1, 0, tzinfo=UTC),
        dt.datetime(2025, 10, 26, 0, 0, tzinfo=UTC),  # Paris fall back: 02:00 local twice
        dt.datetime(2025, 10, 26, 0, 59, 59, 999999, tzinfo=UTC),
        dt.datetime(2025, 10, 26, 1, 0, tzinfo=UTC),
        dt.datetime(2025, 3, 9, 6, 59, tzinfo=UTC),  # New York spring forward at 07:00Z
        dt.datetime(2025, 3, 9, 7, 0, tzinfo=UTC),
        dt.datetime(2025, 11, 2, 5, 30, tzinfo=UTC),  # New York fall back: 01:30 local twice
        dt.datetime(2025, 11, 2, 6, 30, tzinfo=UTC),
        dt.datetime(2025, 4, 5, 14, 45, tzinfo=UTC),  # Lord Howe: 30-minute DST change
        dt.datetime(2025, 4, 5, 15, 15, tzinfo=UTC),
        dt.datetime(2025, 10, 4, 15, 45, tzinfo=UTC),
        dt.datetime(2025, 12, 31, 18, 30, tzinfo=UTC),  # Kolkata new year at 18:30Z
        dt.datetime(2025, 12, 31, 18, 29, 59, tzinfo=UTC),
        dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        dt.datetime(1965, 6, 15, 12, 0, tzinfo=UTC),
        dt.datetime(1900, 1, 1, 0, 0, tzinfo=UTC),
        dt.datetime(1970, 1, 1, 0, 0, tzinfo=UTC),
        dt.datetime(2024, 2, 29, 23, 0, tzinfo=UTC),
    ]
    return base


_DECIMALS = [
    "12.30",
    "1.00",
    "5.55",
    "-0.01",
    "0.00",
    "-12.30",
    "99999999.99",
    "-99999999.99",
    "0.10",
    "7.49",
    "7.50",
    "-7.50",
    "100.00",
    "1.25",
]
_FLOATS = [0.0, -0.0, float("nan"), float("inf"), float("-inf"), 1.5, -1.5, 1e-300, None, 12.3]


def _memory(tables: dict[str, pa.Table]) -> datafusion.SessionContext:
    ctx = datafusion.SessionContext()
    for name, table in tables.items():
        ctx.from_arrow(table, name)
    return ctx


class World:
    """The namespaces, their data and the oracles, built once per module."""

    def __init__(self, root: Path) -> None:
        self.ctx = lance_sql.SessionContext()
        self.duck = duckdb.connect()
        self.data: dict[str, pa.Table] = {}
        self.ns: dict[str, lance_sql.PartitionedNamespace] = {}
        self.ids_of: dict[str, dict[str, set[int]]] = {}  # name -> object_id -> ids
        instants = _instants()
        for zi, zone in enumerate(ZONES):
            t = pa.timestamp("us", zone)
            name = f"z{zi}"
            table = pa.table(
                {"id": pa.array(range(len(instants)), pa.int64()), "ts": pa.array(instants, t)}
            )
            half = len(instants) // 2
            time_fields = [
                {"field_id": "h", "source": "ts", "transform": {"type": "hour"}},
                {"field_id": "d", "source": "ts", "transform": {"type": "day"}},
            ]
            if zone in ("Europe/Paris", "America/New_York"):
                time_fields = [{"field_id": "i", "source": "ts", "transform": {"type": "identity"}}]
            ns = lance_sql.PartitionedNamespace.create(str(root / name), table.schema, time_fields)
            ns.append(table.slice(0, half))
            ns.add_spec(
                [
                    {"field_id": "y", "source": "ts", "transform": {"type": "year"}},
                    {"field_id": "m", "source": "ts", "transform": {"type": "month"}},
                ]
            )
            ns.append(table.slice(half))
            self._add(name, ns, table)
        dec = pa.decimal128(10, 2)
        table = pa.table(
            {
                "id": pa.array(range(len(_DECIMALS)), pa.int64()),
                "c0": pa.array([decimal.Decimal(v) for v in _DECIMALS], dec),
                "c1": pa.array([decimal.Decimal(v) for v in reversed(_DECIMALS)], dec),
            }
        )
        ns = lance_sql.PartitionedNamespace.create(
            str(root / "dec"),
            table.schema,
            [
                {"field_id": "c0i", "source": "c0", "transform": {"type": "identity"}},
                {"field_id": "c1t", "source": "c1", "transform": {"type": "truncate", "width": 5}},
            ],
        )
        ns.append(table)
        self._add("dec", ns, table)
        n = len(_FLOATS)
        table = pa.table(
            {
                "id": pa.array(range(n * n), pa.int64()),
                "f1": pa.array([_FLOATS[i // n] for i in range(n * n)], pa.float64()),
                "f2": pa.array([_FLOATS[i % n] for i in range(n * n)], pa.float64()),
            }
        )
        ns = lance_sql.PartitionedNamespace.create(
            str(root / "flt"),
            table.schema,
            [
                {
                    "field_id": "b",
                    "source": "id",
                    "transform": {"type": "bucket", "num_buckets": 3},
                },
                {"field_id": "fi", "source": "f1", "transform": {"type": "identity"}},
            ],
        )
        ns.append(table)
        self._add("flt", ns, table)
        lance.write_dataset(table, str(root / "flt.lance"))
        self.ctx.register_lance("flt_lance", str(root / "flt.lance"))
        self.data["flt_lance"] = table
        self.mem = _memory(self.data)
        for name, table in self.data.items():
            self.duck.register(name, table)

    def _add(self, name: str, ns: lance_sql.PartitionedNamespace, table: pa.Table) -> None:
        self.ns[name] = ns
        self.data[name] = table
        self.ctx.register_namespace(name, ns.root)
        ids: dict[str, set[int]] = {}
        for row in ns.partitions().to_pylist():
            uri = f"{ns.root}/{row['location']}"
            part = lance.dataset(uri, version=row["read_version"]).to_table(columns=["id"])
            ids[row["object_id"]] = set(part.column("id").to_pylist())
        self.ids_of[name] = ids

    # ------------------------------------------------------------------ checks
    def lance_ids(self, name: str, where: str) -> list[int]:
        out = self.ctx.sql(f"SELECT id FROM {name} WHERE {where}").to_arrow_table()
        return sorted(out.column("id").to_pylist())

    def datafusion_ids(self, name: str, where: str) -> list[int]:
        out = self.mem.sql(f"SELECT id FROM {name} WHERE {where}").to_arrow_table()
        return sorted(out.column("id").to_pylist())

    def duckdb_ids(self, name: str, where: str, zone: str = "UTC") -> list[int]:
        self.duck.execute(f"SET TimeZone = '{zone}'")
        rows = self.duck.execute(f"SELECT id FROM {name} WHERE {where}").fetchall()
        return sorted(r[0] for r in rows)

    def check(self, name: str, where: str, want: list[int]) -> None:
        got = self.lance_ids(name, where)
        assert got == want, f"{name}: WHERE {where}: lance-sql {got} != oracle {want}"
        if name in self.ns:
            plan = lance_sql.plan_scan(self.ns[name], where)
            kept: set[int] = set()
            for p in plan.partitions:
                kept |= self.ids_of[name][p.object_id]
            missing = set(want) - kept
            assert not missing, f"{name}: plan_scan({where!r}) pruned rows {sorted(missing)}"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return World(tmp_path_factory.mktemp("types_differential"))


def _iso(instant: dt.datetime) -> str:
    return instant.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_DELTAS = [dt.timedelta(0), dt.timedelta(microseconds=1), -dt.timedelta(microseconds=1)]
_DELTAS += [dt.timedelta(hours=1), -dt.timedelta(hours=1), dt.timedelta(minutes=30)]

time_case = st.tuples(
    st.integers(0, len(ZONES) - 1),
    st.sampled_from(OPS),
    st.sampled_from(_instants()),
    st.sampled_from(_DELTAS),
    st.sampled_from(["instant", "hour", "day", "month", "year", "naive"]),
)


def _run_time(world: World, case: tuple[int, str, dt.datetime, dt.timedelta, str]) -> None:
    zi, op, base, delta, kind = case
    zone, name = ZONES[zi], f"z{zi}"
    instant = base + delta
    if kind == "instant":
        us = (instant - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(microseconds=1)
        want = world.duckdb_ids(name, f"epoch_us(ts) {op} {us}")
        world.check(name, f"ts {op} '{_iso(instant)}'", want)
    elif kind == "naive":  # TIMESTAMP '...' is local time in the column's zone: DataFusion oracle
        text = instant.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S")
        where = f"ts {op} TIMESTAMP '{text}'"
        try:
            want = world.datafusion_ids(name, where)
        except Exception:  # a local time the zone skips: DataFusion refuses it too
            with pytest.raises(Exception):  # noqa: B017
                world.lance_ids(name, where)
            return
        world.check(name, where, want)
    else:
        local = instant.astimezone(zoneinfo.ZoneInfo(zone))
        value = getattr(local, kind)
        want = world.duckdb_ids(name, f"date_part('{kind}', ts) {op} {value}", zone)
        world.check(name, f"date_part('{kind}', ts) {op} {value}", want)


_DECIMAL_LITERALS = [*_DECIMALS, "12.3", "12.301", "7.5", "0", "-0.0", "1e2", "99999999.995"]

decimal_case = st.tuples(
    st.sampled_from(["c0", "c1"]),
    st.sampled_from(OPS),
    st.sampled_from(_DECIMAL_LITERALS),
    st.sampled_from(["int", "decimal", "float", "column"]),
)


def _run_decimal(world: World, case: tuple[str, str, str, str]) -> None:
    col, op, text, kind = case
    if kind == "column":
        where = f"c0 {op} c1"
        world.check("dec", where, world.duckdb_ids("dec", where))
    elif kind == "int":
        value = int(decimal.Decimal(text))
        world.check("dec", f"{col} {op} {value}", world.duckdb_ids("dec", f"{col} {op} {value}"))
    elif kind == "decimal":
        lit = f"CAST('{decimal.Decimal(text):f}' AS DECIMAL(12, 3))"
        world.check("dec", f"{col} {op} {lit}", world.duckdb_ids("dec", f"{col} {op} {lit}"))
    else:  # a float literal: DataFusion rounds it into Decimal(30,15), DuckDB compares doubles
        where = f"{col} {op} {text}"
        world.check("dec", where, world.datafusion_ids("dec", where))


_FLOAT_LITERALS = ["0.0", "-0.0", "'NaN'::double", "'inf'::double", "'-inf'::double", "1.5", "-1.5"]

float_case = st.tuples(
    st.sampled_from(["flt", "flt_lance"]),
    st.sampled_from(OPS),
    st.sampled_from(["f2", *_FLOAT_LITERALS]),
    st.booleans(),
)


def _run_float(world: World, case: tuple[str, str, str, bool]) -> None:
    name, op, rhs, negate = case
    where = f"f1 {op} {rhs}"
    if negate:
        where = f"NOT ({where})"
    world.check(name, where, world.duckdb_ids(name, where))


def test_duckdb_agrees_with_datafusion_on_floats(world: World) -> None:
    """The oracle itself: DuckDB's float comparisons are DataFusion's."""
    for op in OPS:
        for rhs in ["f2", *_FLOAT_LITERALS]:
            where = f"f1 {op} {rhs}"
            assert world.duckdb_ids("flt", where) == world.datafusion_ids("flt", where), where


@_FAST
@given(time_case)
def test_zoned_timestamps(world: World, case: Any) -> None:
    _run_time(world, case)


@_FAST
@given(time_case)
def test_zoned_timestamps_more(world: World, case: Any) -> None:
    _run_time(world, case)


@_FAST
@given(decimal_case)
def test_decimals(world: World, case: Any) -> None:
    _run_decimal(world, case)


@_FAST
@given(float_case)
def test_floats(world: World, case: Any) -> None:
    _run_float(world, case)


@pytest.mark.slow
@_SLOW
@given(st.one_of(time_case.map(lambda c: ("t", c)), decimal_case.map(lambda c: ("d", c))))
def test_many_types_slow(world: World, tagged: Any) -> None:
    kind, case = tagged
    (_run_time if kind == "t" else _run_decimal)(world, case)


@pytest.mark.slow
@_SLOW
@given(float_case)
def test_many_floats_slow(world: World, case: Any) -> None:
    _run_float(world, case)
