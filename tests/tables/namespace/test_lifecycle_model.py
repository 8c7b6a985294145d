"""Model-based test of a namespace's life (issue #17): random sequences of append, dynamic
overwrite, overwrite-where, delete, update, merge, compact, expire, add_spec and a column
rename (older partition tables then map columns by field id) against a real namespace
and a plain Python model, compared after every step.

The model is a list of rows, each tagged with the spec version it was last written
under (dynamic overwrite only replaces partitions of the current spec). Filters and
SET expressions of the model are evaluated by DuckDB (an independent SQL engine);
the namespace is read back with ``ns.to_table()`` and with SQL through
``lance_sql.SessionContext().register_namespace``.
"""

from __future__ import annotations

import shutil
import tempfile
from datetime import timedelta
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import lance_sql
from lance_sql.tables.namespace.overwrite import RowsOutsideFilterError

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("region", pa.string()),
        pa.field("day", pa.int32()),
        pa.field("amount", pa.int64()),
    ]
)
COLS = SCHEMA.names
V1 = [{"field_id": "region", "source": "region", "transform": {"type": "identity"}}]
LATER_SPECS = [
    [
        {"field_id": "region", "source": "region", "transform": {"type": "identity"}},
        {"field_id": "day", "source": "day", "transform": {"type": "identity"}},
    ],
    [{"field_id": "id_t5", "source": "id", "transform": {"type": "truncate", "width": 5}}],
]

REGIONS = st.sampled_from(["a", "b", "c", None])
NAMED = st.sampled_from(["a", "b", "c"])
ROW = st.fixed_dictionaries(
    {
        "id": st.integers(0, 15),
        "region": REGIONS,
        "day": st.one_of(st.none(), st.integers(1, 3)),
        "amount": st.integers(-5, 5),
    }
)
ROWS = st.lists(ROW, min_size=0, max_size=8)
NUM = st.integers(0, 15)
FILTERS = st.one_of(
    st.sampled_from(
        [
            "region = 'a'",
            "region IN ('a', 'b')",
            "region IS NULL",
            "region IS NOT NULL",
            "NOT (region = 'b')",
            "day = 2",
            "day IS NULL",
            "amount > 0 OR region = 'c'",
            "id % 2 = 0",
            "TRUE",
            "FALSE",
        ]
    ),
    NUM.map(lambda n: f"id < {n}"),
    st.tuples(NUM, NAMED).map(lambda t: f"id >= {t[0]} AND region = '{t[1]}'"),
    st.tuples(NAMED, st.integers(1, 3)).map(lambda t: f"region = '{t[0]}' AND day = {t[1]}"),
)
SETS = st.sampled_from(
    [
        {"amount": "amount + 1"},
        {"region": "'b'"},
        {"day": "3"},
        {"region": "NULL", "amount": "amount * 2"},
        {"id": "id + 1"},
    ]
)


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist([{c: r[c] for c in COLS} for r in rows], schema=SCHEMA)


def _sorted(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return sorted(
        (tuple(r[c] for c in COLS) for r in rows),
        key=lambda t: tuple((v is None, v if v is not None else 0) for v in t),
    )


def _matches(rows: list[dict[str, Any]], filter: str) -> list[bool]:
    """Per row: does ``filter`` evaluate to TRUE (DuckDB, the oracle)."""
    if not rows:
        return []
    t = _table(rows).append_column("__i", pa.array(range(len(rows)), pa.int64()))
    con = duckdb.connect()
    con.register("t", t)
    hit = {r[0] for r in con.execute(f"SELECT __i FROM t WHERE {filter}").fetchall()}
    return [i in hit for i in range(len(rows))]


def _set(rows: list[dict[str, Any]], exprs: dict[str, str]) -> list[dict[str, Any]]:
    if not rows:
        return []
    t = _table(rows).append_column("__i", pa.array(range(len(rows)), pa.int64()))
    con = duckdb.connect()
    con.register("t", t)
    select = ", ".join(f"CAST(({exprs.get(c, c)}) AS {_duck(c)}) AS {c}" for c in COLS)
    out = con.sql(f"SELECT {select} FROM t ORDER BY __i").to_arrow_table()
    return out.to_pylist()


def _duck(col: str) -> str:
    return {"id": "BIGINT", "region": "VARCHAR", "day": "INTEGER", "amount": "BIGINT"}[col]


def _key(spec: list[dict[str, Any]], row: dict[str, Any]) -> tuple[Any, ...]:
    out = []
    for f in spec:
        v = row[f["source"]]
        if f["transform"]["type"] == "truncate" and v is not None:
            w = f["transform"]["width"]
            v = v - (abs(v) % w) * (1 if v >= 0 else -1)
        out.append(v)
    return tuple(out)


class LifecycleMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="lifecycle-", dir=_TMP)
        self.ns = lance_sql.PartitionedNamespace.create(f"{self.dir}/ns", SCHEMA, V1)
        self.specs: list[list[dict[str, Any]]] = [V1]
        self.model: list[dict[str, Any]] = []
        self.amount = "amount"  # renamed back and forth (older tables then map by field id)
        self.ctx = lance_sql.SessionContext()  # each query reads the latest __manifest
        self.ctx.register_namespace("t", self.ns.root)

    def teardown(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def _n(self, text: str) -> str:
        """``text`` (a filter, expression or column) with the current name of ``amount``."""
        return text.replace("amount", self.amount)

    def _data(self, rows: list[dict[str, Any]]) -> pa.Table:
        return _table(rows).rename_columns([self._n(c) for c in COLS])

    @property
    def spec_id(self) -> int:
        return len(self.specs)

    def _tag(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**r, "_spec": self.spec_id} for r in rows]

    # -- operations ---------------------------------------------------------------------------
    @rule(rows=ROWS)
    def append(self, rows: list[dict[str, Any]]) -> None:
        self.ns.append(self._data(rows))
        self.model += self._tag(rows)

    @rule(rows=ROWS)
    def overwrite_dynamic(self, rows: list[dict[str, Any]]) -> None:
        self.ns.overwrite(self._data(rows), partitions="dynamic")
        spec = self.specs[-1]
        keys = {_key(spec, r) for r in rows}
        self.model = [
            r for r in self.model if not (r["_spec"] == self.spec_id and _key(spec, r) in keys)
        ] + self._tag(rows)

    @rule(rows=ROWS, where=FILTERS, stray=st.booleans())
    def overwrite_where(self, rows: list[dict[str, Any]], where: str, stray: bool) -> None:
        inside = [r for r, ok in zip(rows, _matches(rows, where), strict=True) if ok]
        outside = [r for r in rows if r not in inside]
        if stray and outside:
            before = self.ns.manifest_version
            with pytest.raises(RowsOutsideFilterError):
                self.ns.overwrite(self._data(rows), where=self._n(where))
            assert self.ns.refresh().manifest_version == before
            return
        self.ns.overwrite(self._data(inside), where=self._n(where))
        hit = _matches(self.model, where)
        self.model = [r for r, h in zip(self.model, hit, strict=True) if not h] + self._tag(inside)

    @rule(where=FILTERS)
    def delete(self, where: str) -> None:
        n = self.ns.delete(self._n(where))
        hit = _matches(self.model, where)
        assert n == sum(hit)
        self.model = [r for r, h in zip(self.model, hit, strict=True) if not h]

    @rule(exprs=SETS, where=st.one_of(st.none(), FILTERS))
    def update(self, exprs: dict[str, str], where: str | None) -> None:
        sets = {self._n(k): self._n(v) for k, v in exprs.items()}
        n = self.ns.update(sets, where=None if where is None else self._n(where))
        hit = _matches(self.model, where or "TRUE")
        changed = _set([r for r, h in zip(self.model, hit, strict=True) if h], exprs)
        assert n == len(changed)
        self.model = [r for r, h in zip(self.model, hit, strict=True) if not h] + self._tag(changed)

    @rule(
        source=st.lists(ROW, max_size=6, unique_by=lambda r: r["id"]),
        mode=st.sampled_from(["upsert", "update", "delete", "insert", "update_expr"]),
    )
    def merge(self, source: list[dict[str, Any]], mode: str) -> None:
        kwargs: dict[str, Any] = {
            "upsert": {"when_matched_update": True, "when_not_matched_insert": True},
            "update": {"when_matched_update": True},
            "delete": {"when_matched_delete": True},
            "insert": {"when_not_matched_insert": True},
            "update_expr": {
                "when_matched_update": {"amount": "target.amount + source.amount"},
                "when_matched_delete": "source.amount < -3",
            },
        }[mode]
        if mode == "update_expr":
            kwargs = {
                "when_matched_update": {self.amount: self._n("target.amount + source.amount")},
                "when_matched_delete": self._n("source.amount < -3"),
            }
        result = self.ns.merge(self._data(source), on=["id"], **kwargs)
        by_id = {r["id"]: r for r in source}
        kept, new = [], []
        matched: set[int] = set()
        updated = deleted = 0
        for r in self.model:
            s = by_id.get(r["id"])
            if s is None:
                kept.append(r)
                continue
            matched.add(r["id"])
            if mode == "delete" or (mode == "update_expr" and s["amount"] < -3):
                deleted += 1
            elif mode in ("upsert", "update"):
                new.append(dict(s))
                updated += 1
            elif mode == "update_expr":
                new.append({**r, "amount": r["amount"] + s["amount"]})
                updated += 1
            else:
                kept.append(r)
        if mode in ("upsert", "insert"):
            new += [s for s in source if s["id"] not in matched]
        assert (result.updated, result.deleted) == (updated, deleted)
        self.model = kept + self._tag(new)

    @rule(rows_per_fragment=st.sampled_from([2, 1000]))
    def compact(self, rows_per_fragment: int) -> None:
        self.ns.compact(target_rows_per_fragment=rows_per_fragment)

    @rule()
    def expire(self) -> None:
        self.ns.expire_versions(older_than=timedelta(0))

    @rule()
    def rename_amount(self) -> None:
        new = "amt" if self.amount == "amount" else "amount"
        self.ns.rename_column(self.amount, new)
        self.amount = new
        self.ctx = lance_sql.SessionContext()  # a registration keeps the names it saw
        self.ctx.register_namespace("t", self.ns.root)

    @precondition(lambda self: len(self.specs) <= len(LATER_SPECS))
    @rule()
    def add_spec(self) -> None:
        spec = LATER_SPECS[len(self.specs) - 1]
        self.ns.add_spec(spec)
        self.specs.append(spec)

    # -- checks -------------------------------------------------------------------------------
    @invariant()
    def same_rows(self) -> None:
        want = _sorted(self.model)
        got = self.ns.to_table()
        assert got.column_names == [self._n(c) for c in COLS]
        assert _sorted(got.rename_columns(COLS).to_pylist()) == want
        cols = ", ".join(self._n(c) for c in COLS)
        sql = self.ctx.sql(f"SELECT {cols} FROM t").to_arrow_table()
        assert _sorted(sql.rename_columns(COLS).to_pylist()) == want


_TMP = "/dev/shm" if shutil.disk_usage("/dev/shm").free > 1 << 30 else None
HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

TestLifecycle = LifecycleMachine.TestCase
TestLifecycle.settings = settings(
    max_examples=80, stateful_step_count=6, deadline=None, suppress_health_check=HEALTH
)


class _SlowMachine(LifecycleMachine):
    pass


TestLifecycleSlow = pytest.mark.slow(_SlowMachine.TestCase)
TestLifecycleSlow.settings = settings(
    max_examples=5000, stateful_step_count=10, deadline=None, suppress_health_check=HEALTH
)
