"""Differential property tests of column-bounds skipping: never a wrong row.

1. Algebra (many examples, in memory): random rows (NULLs, NaN, -0.0, infinities,
   extremes, long strings) give bounds through their stored JSON form; random
   predicates (=, <, <=, >, >=, !=, IN, NOT IN, IS [NOT] NULL, LIKE 'p%', AND, OR,
   NOT) are prepared by the planner; whenever the bounds claim a skip, DataFusion
   over the same rows must find no matching row.
2. End to end (fewer examples): a namespace lives through appends, deletes and
   dynamic overwrites; after each step random queries through
   ``lance_sql.SessionContext`` must return exactly what DataFusion returns over
   the same rows in memory.

Examples: ``LANCE_SQL_HYPOTHESIS_EXAMPLES`` scales both (default 300 / 15); the
``slow`` tests run 20x more.
"""

from __future__ import annotations

import datetime
import math
import os
import shutil
import tempfile
from decimal import Decimal
from typing import Any

import datafusion
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_sql
from lance_sql.planning.bounds_skipping import compile_skip
from lance_sql.planning.planner import to_predicate
from lance_sql.tables.namespace import bounds as tb
from lance_sql.tables.namespace.namespace import PartitionedNamespace

EXAMPLES = int(os.environ.get("LANCE_SQL_HYPOTHESIS_EXAMPLES", "300"))
FID = b"lance:field_id"
UTC = datetime.timezone.utc

TYPES = {
    "k": pa.int64(),
    "i": pa.int32(),
    "f": pa.float64(),
    "s": pa.string(),
    "d": pa.date32(),
    "ts": pa.timestamp("us", tz="UTC"),
    "dec": pa.decimal128(9, 2),
    "f32": pa.float32(),
    "u64": pa.uint64(),
    "tny": pa.timestamp("ns", tz="America/New_York"),
}
SCHEMA = pa.schema(
    [pa.field(n, t, metadata={FID: str(i).encode()}) for i, (n, t) in enumerate(TYPES.items())]
)
PLAIN = pa.schema([(n, t) for n, t in TYPES.items()])
SPEC = [{"field_id": "k", "source": "k", "transform": {"type": "identity"}}]

NAN = float("nan")
POOLS: dict[str, list[Any]] = {
    "k": [0, 1, 2, 3],
    "i": [-(2**31), -7, -1, 0, 1, 2, 5, 9, 2**31 - 1],
    "f": [-math.inf, -1e300, -1.5, -0.0, 0.0, 0.5, 1.5, 2.0, 1e300, math.inf, NAN],
    "s": ["", "a", "ab", "b", "bz", "c", "é", "x" * 40, "x" * 40 + "a", "\U0001f600", "Z"],
    "d": [datetime.date(1970, 1, 1) + datetime.timedelta(days=n) for n in (-400, 0, 1, 59, 20000)],
    "ts": [
        datetime.datetime(2024, 3, 31, h, m, tzinfo=UTC)
        for h, m in ((0, 0), (0, 1), (1, 0), (23, 59))
    ],
    "dec": [Decimal(v) for v in ("-9999999.99", "-1.00", "0.00", "0.01", "1.25", "2.50", "99.99")],
    "f32": [-0.0, 0.0, float(np.float32(0.1)), 1.5, -3.0, math.inf, NAN, 3.4e38],
    "u64": [0, 1, 2**63 - 1, 2**63, 2**64 - 1],
    "tny": [  # around the 2024-03-10 DST change (07:00 UTC)
        datetime.datetime(2024, 3, 10, h, m, tzinfo=UTC)
        for h, m in ((6, 30), (7, 0), (7, 30), (8, 0))
    ],
}
# Literals also come from outside the pools (between and beyond the stored values).
EXTRA: dict[str, list[Any]] = {
    "k": [-1, 4],
    "i": [3, 10, -8, 2**31],
    "f": [1.0, 3.0, -2.0, 5e-324],
    "s": ["aa", "bb", "d", "x" * 33, "y", "\x00"],
    "d": [datetime.date(1970, 1, 3), datetime.date(2100, 1, 1)],
    "ts": [datetime.datetime(2024, 3, 31, 0, 0, 30, tzinfo=UTC)],
    "dec": [Decimal("1.26"), Decimal("100.00"), Decimal("1.251")],
    "f32": [0.1, 2.0, -1e39],
    "u64": [2, 2**63 + 1, 10],
    "tny": [datetime.datetime(2024, 3, 10, 6, 59, tzinfo=UTC)],
}


def _sql_literal(col: str, v: Any) -> str:
    if v is None:
        return "NULL"
    if col == "f32":
        if math.isnan(v):
            return "CAST('NaN' AS REAL)"
        if math.isinf(v):
            return f"CAST('{'-' if v < 0 else ''}inf' AS REAL)"
        return repr(v) if abs(v) > 1e38 or v == 0.1 else f"CAST({v!r} AS REAL)"
    if col == "u64":
        return f"CAST({v} AS BIGINT UNSIGNED)" if v >= 2**63 else str(v)
    if col == "f":
        if math.isnan(v):
            return "CAST('NaN' AS DOUBLE)"
        if math.isinf(v):
            return f"CAST('{'-' if v < 0 else ''}inf' AS DOUBLE)"
        return repr(v)
    if col == "s":
        return "'" + v.replace("'", "''") + "'"
    if col == "d":
        return f"DATE '{v.isoformat()}'"
    if col == "tny":  # an instant, written with its offset
        return f"TIMESTAMP '{v.strftime('%Y-%m-%dT%H:%M:%S')}+00:00'"
    if col == "ts":
        return f"TIMESTAMP '{v.strftime('%Y-%m-%dT%H:%M:%S')}Z'"
    if col == "dec":
        return f"CAST('{v}' AS DECIMAL(9, 2))"
    return str(v)


def values(col: str, nulls: bool = True) -> st.SearchStrategy[Any]:
    pool = st.sampled_from(POOLS[col])
    return st.one_of(st.none(), pool) if nulls else pool


def literals(col: str) -> st.SearchStrategy[Any]:
    return st.sampled_from(POOLS[col] + EXTRA[col])


ROW = st.fixed_dictionaries({c: values(c, nulls=c != "k") for c in TYPES})
COLS = st.sampled_from([c for c in TYPES])


@st.composite
def leaves(draw: Any) -> str:
    col = draw(COLS)
    form = draw(st.sampled_from(["cmp", "cmp", "cmp", "in", "notin", "null", "notnull", "like"]))
    if form == "cmp":
        op = draw(st.sampled_from(["=", "<", "<=", ">", ">=", "<>"]))
        return f"{col} {op} {_sql_literal(col, draw(literals(col)))}"
    if form in ("in", "notin"):
        vals = draw(st.lists(st.one_of(literals(col), st.just(None)), min_size=1, max_size=3))
        if col in ("f", "f32") and any(v is not None and math.isnan(v) for v in vals):
            vals = [v for v in vals if v is None or not math.isnan(v)] or [0.5]
        text = ", ".join(_sql_literal(col, v) for v in vals)
        return f"{col} {'NOT ' if form == 'notin' else ''}IN ({text})"
    if form == "null":
        return f"{col} IS NULL"
    if form == "notnull":
        return f"{col} IS NOT NULL"
    prefix = draw(st.sampled_from(["a", "b", "x" * 35, "é", "", "c"]))
    return f"s LIKE '{prefix}%'"


def predicates(depth: int = 2) -> st.SearchStrategy[str]:
    if depth == 0:
        return leaves()
    sub = predicates(depth - 1)
    return st.one_of(
        leaves(),
        st.tuples(sub, sub).map(lambda t: f"({t[0]}) AND ({t[1]})"),
        st.tuples(sub, sub).map(lambda t: f"({t[0]}) OR ({t[1]})"),
        sub.map(lambda p: f"NOT ({p})"),
    )


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=PLAIN)


def _datafusion(
    rows: list[dict[str, Any]], where: str, what: str = "*", *, optimize: bool = True
) -> pa.Table:
    """``SELECT what FROM rows WHERE where`` by DataFusion; ``optimize=False`` runs no
    logical optimizer pass: DataFusion 55's simplifier folds ``x IN (NULL) AND x NOT IN
    (NULL)`` to FALSE (SQL: NULL), so ``NOT (...)`` keeps rows SQL drops."""
    config = datafusion.SessionConfig()
    if not optimize:
        config = config.set("datafusion.optimizer.max_passes", "0")
    ctx = datafusion.SessionContext(config)
    batches = _table(rows).to_batches() or [pa.RecordBatch.from_pylist([], schema=PLAIN)]
    ctx.register_record_batches("t", [batches])
    return ctx.sql(f"SELECT {what} FROM t WHERE {where}").to_arrow_table()


def _key(row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(repr(row[c]) for c in TYPES)


# ----------------------------------------------------------------------- 1. algebra


def _check_algebra(rows: list[dict[str, Any]], where: str) -> bool:
    try:
        pred = to_predicate(where, SCHEMA)
    except Exception:
        return False
    test = compile_skip(pred)
    if test is None:
        return False
    b = tb.from_json(tb.to_json(tb.table_bounds(_table(rows), SCHEMA, 1, None, "l")))
    assert b is not None
    if not test(b):
        return False
    # The planner reads the text with SQL semantics: the oracle is DataFusion unoptimized.
    n = _datafusion(rows, where, "count(*) AS n", optimize=False).column("n")[0].as_py()
    assert n == 0, f"bounds skipped a table where {where} matches {n} row(s): {rows}"
    return True


def _algebra(rows: list[dict[str, Any]], where: str) -> None:
    _check_algebra(rows, where)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(ROW, min_size=0, max_size=6), predicates())
def test_a_claimed_skip_never_hides_a_row(rows: list[dict[str, Any]], where: str) -> None:
    _algebra(rows, where)


def test_skips_do_happen() -> None:
    rows = [{**{c: POOLS[c][1] for c in TYPES}, "i": 5}, {**{c: POOLS[c][2] for c in TYPES}}]
    assert _check_algebra(rows, "i = 9")
    assert _check_algebra(rows, "s > 'zz' OR d < DATE '1900-01-01'")
    assert _check_algebra(rows, "NOT (f <= 1e300)")


@pytest.mark.slow
@settings(max_examples=EXAMPLES * 20, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(ROW, min_size=0, max_size=6), predicates())
def test_a_claimed_skip_never_hides_a_row_slow(rows: list[dict[str, Any]], where: str) -> None:
    _algebra(rows, where)


# -------------------------------------------------------------------- 2. end to end

DELETES = st.sampled_from(["i = 5", "i < 0", "s = 'a'", "s IS NULL", "k = 1", "i > 1 AND k = 2"])
UPDATES = st.tuples(
    st.sampled_from(
        [
            ("i", "i / 2"),  # no overflow (i + 1000 would refuse i = 2147483647)
            ("s", "'zz'"),
            ("f", "CAST('NaN' AS DOUBLE)"),
            ("d", "DATE '2200-01-01'"),
            ("dec", "CAST('-5.55' AS DECIMAL(9, 2))"),
        ]
    ),
    DELETES,
)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(ROW, min_size=1, max_size=5)),
        st.tuples(st.just("delete"), DELETES),
        st.tuples(st.just("overwrite"), st.lists(ROW, min_size=1, max_size=4)),
        st.tuples(st.just("update"), UPDATES),
        st.tuples(st.just("compact"), st.none()),
    ),
    min_size=0,
    max_size=3,
)


_SQL_TYPES = {
    "k": "BIGINT",
    "i": "INT",
    "f": "DOUBLE",
    "s": "VARCHAR",
    "d": "DATE",
    "ts": "TIMESTAMP",
    "dec": "DECIMAL(9, 2)",
    "f32": "REAL",
    "u64": "BIGINT UNSIGNED",
    "tny": "TIMESTAMP",
}


def _namespace_rows(ctx: Any, where: str) -> list[dict[str, Any]]:
    return ctx.sql(f"SELECT * FROM t WHERE {where}").to_arrow_table().to_pylist()


def _run_story(
    first: list[dict[str, Any]], steps: list[tuple[str, Any]], queries: list[str]
) -> None:
    root = tempfile.mkdtemp(prefix="lance-sql-bounds-")
    try:
        ns = PartitionedNamespace.create(root, PLAIN, SPEC)
        model = list(first)
        ns.append(_table(first))
        for kind, arg in [("none", None), *steps]:
            if kind == "append":
                ns.append(_table(arg))
                model += arg
            elif kind == "delete":
                ns.delete(arg)
                model = _datafusion(model, f"({arg}) IS NOT TRUE").to_pylist()
            elif kind == "update":
                (col, expr), where = arg
                ns.update({col: expr}, where=where)
                items = ", ".join(
                    f"CASE WHEN ({where}) IS TRUE THEN CAST({expr} AS {_SQL_TYPES[c]}) ELSE {c} END"
                    f" AS {c}"
                    if c == col
                    else c
                    for c in TYPES
                )
                model = _datafusion(model, "TRUE", items).to_pylist()
            elif kind == "compact":
                ns.compact()
            elif kind == "overwrite":
                ns.overwrite(_table(arg), partitions="dynamic")
                written = {r["k"] for r in arg}
                model = [r for r in model if r["k"] not in written] + list(arg)
            ctx = lance_sql.SessionContext()
            ctx.register_namespace("t", root)
            for where in queries:
                got = sorted(_key(r) for r in _namespace_rows(ctx, where))
                want = sorted(_key(r) for r in _datafusion(model, where).to_pylist())
                assert got == want, f"after {kind}: WHERE {where}"
    finally:
        shutil.rmtree(root, ignore_errors=True)


E2E = max(3, EXAMPLES // 20)
QUERIES = st.lists(predicates(1), min_size=1, max_size=3)


@settings(max_examples=E2E, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(ROW, min_size=1, max_size=8), STEPS, st.lists(predicates(1), min_size=1, max_size=3)
)
def test_namespace_with_bounds_returns_exactly_the_matching_rows(
    first: list[dict[str, Any]], steps: list[tuple[str, Any]], queries: list[str]
) -> None:
    _run_story(first, steps, queries)


@pytest.mark.slow
@settings(max_examples=E2E * 20, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(ROW, min_size=1, max_size=8), STEPS, st.lists(predicates(1), min_size=1, max_size=3)
)
def test_namespace_with_bounds_returns_exactly_the_matching_rows_slow(
    first: list[dict[str, Any]], steps: list[tuple[str, Any]], queries: list[str]
) -> None:
    _run_story(first, steps, queries)
