"""Queries of one shape with new literals answer as plain DataFusion does.

A service asks the same query shapes with new literals (a point lookup with a
new key). What lance-sql computes once per shape and reuses for a new literal
(the pushed filter's float-rewrite decision and its stubbed schema,
:class:`~lance_sql.tables.lance_scanner._PreparedFilters`) must give exactly
what is computed from scratch, and every answer must equal plain DataFusion's
over the same rows in memory, for literals that are NULL, NaN, -0.0, strings
with quotes, timestamps, and literals whose type changes DataFusion's coercion.
"""

from __future__ import annotations

import datetime as dt
import math
import random
from collections.abc import Callable

import datafusion
import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyarrow.substrait import serialize_expressions

import lance_sql
from lance_sql.tables.lance_scanner import _float_semantics, _PreparedFilters
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.scan import stubbed_schema

UTC = dt.timezone.utc
DAYS = [dt.date(2024, 1, 1) + dt.timedelta(days=i) for i in range(6)]
WORDS = ["a", "it's", "''", 'say "hi"', "b%", "", "x\\y"]
FLOATS = [0.0, -0.0, 1.5, -2.25, float("nan"), float("inf"), 3.0]


def table(n: int = 120) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "day": pa.array([DAYS[i % len(DAYS)] for i in range(n)], pa.date32()),
            "x": pa.array(
                [None if i % 11 == 0 else FLOATS[i % len(FLOATS)] for i in range(n)], pa.float64()
            ),
            "y": pa.array([FLOATS[(i * 3) % len(FLOATS)] for i in range(n)], pa.float64()),
            "s": pa.array([None if i % 13 == 0 else WORDS[i % len(WORDS)] for i in range(n)]),
            "ts": pa.array(
                [dt.datetime(2024, 1, 1, i % 24, tzinfo=UTC) for i in range(n)],
                pa.timestamp("us", tz="UTC"),
            ),
            "k": pa.array([i % 7 for i in range(n)], pa.int32()),
        }
    )


def sql_literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):
        if math.isnan(value):
            return "'NaN'::double"
        if math.isinf(value):
            return "'Infinity'::double" if value > 0 else "'-Infinity'::double"
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.strftime('%Y-%m-%dT%H:%M:%S')}Z'"
    if isinstance(value, dt.date):
        return f"DATE '{value}'"
    return str(value)


#: query shapes and the literals each is asked with (some change the literal's type:
#: ``k = 1.5`` compares as a float, ``id = '3'`` as a string cast)
SHAPES: list[tuple[str, list[object]]] = [
    ("SELECT id, x, s FROM {t} WHERE id = {v}", [0, 7, 119, 500, -1, None, 2.5, "3"]),
    ("SELECT count(*) AS n, sum(y) AS s FROM {t} WHERE day = {v}", [*DAYS, None]),
    ("SELECT id FROM {t} WHERE x = {v}", [*FLOATS, None, 1, "1.5"]),
    ("SELECT id FROM {t} WHERE x < {v}", [*FLOATS, 2]),
    ("SELECT id FROM {t} WHERE x > y AND id > {v}", [0, 50, None]),
    ("SELECT id FROM {t} WHERE s = {v}", [*WORDS, None]),
    (
        "SELECT id FROM {t} WHERE ts = {v}",
        [dt.datetime(2024, 1, 1, h, tzinfo=UTC) for h in (0, 5, 23)],
    ),
    ("SELECT id FROM {t} WHERE k = {v} AND day >= {w}", [0, 3, 1.5, 6]),
    ("SELECT id FROM {t} WHERE k IN ({v}, 4)", [1, 2, None]),
]


def sorted_rows(t: pa.Table) -> list[tuple[object, ...]]:
    def key(v: object) -> tuple[int, str]:
        return (v is None, repr(v))

    return sorted((tuple(r.values()) for r in t.to_pylist()), key=lambda r: [key(v) for v in r])


def same(a: list[tuple[object, ...]], b: list[tuple[object, ...]]) -> bool:
    def eq(x: object, y: object) -> bool:
        if isinstance(x, float) and isinstance(y, float):
            return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-12)
        return x == y

    return len(a) == len(b) and all(
        len(r) == len(s) and all(eq(x, y) for x, y in zip(r, s, strict=True))
        for r, s in zip(a, b, strict=True)
    )


@pytest.fixture(scope="module")
def contexts(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, object]:
    base = tmp_path_factory.mktemp("rebound")
    data = table()
    ns = PartitionedNamespace.create(
        str(base / "ns"), data.schema, [{"source": "day", "transform": "identity"}]
    )
    ns.append(data)
    ns.create_scalar_index("id", "BTREE")
    lance.write_dataset(data, str(base / "one.lance"))
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("ns", str(base / "ns"))
    ctx.register_lance("one", str(base / "one.lance"))
    plain = datafusion.SessionContext()
    plain.register_record_batches("mem", [data.to_batches()])
    return ctx, plain


@pytest.mark.parametrize("seed", [0, 1])
def test_random_literals_of_one_shape_equal_plain_datafusion(
    contexts: tuple[object, object], seed: int
) -> None:
    ctx, plain = contexts
    rng = random.Random(seed)
    asked = 0
    for shape, values in SHAPES:
        for v in rng.sample(values, len(values)) * 2:  # each literal new, then again
            w = DAYS[rng.randrange(len(DAYS))]
            for name in ("ns", "one"):
                sql = shape.format(t=name, v=sql_literal(v), w=sql_literal(w))
                ref = shape.format(t="mem", v=sql_literal(v), w=sql_literal(w))
                try:
                    want = sorted_rows(plain.sql(ref).to_arrow_table())  # type: ignore[attr-defined]
                except Exception:  # DataFusion refuses the literal: so must lance-sql
                    with pytest.raises(Exception):  # noqa: B017
                        ctx.sql(sql).to_arrow_table()  # type: ignore[attr-defined]
                    continue
                got = sorted_rows(ctx.sql(sql).to_arrow_table())  # type: ignore[attr-defined]
                assert same(got, want), (sql, got, want)
                asked += 1
    assert asked > 150


def _fresh_payload(f: pc.Expression, schema: pa.Schema) -> bytes:
    """The payload as computed for a filter never seen (no cache of any kind)."""
    return bytes(
        serialize_expressions([_float_semantics(f, schema)], ["my_filter"], stubbed_schema(schema))
    )


def outcome(fn: Callable[..., bytes], *args: object) -> object:
    """``fn``'s bytes, or the type of what it raised (Lance then gets no filter)."""
    try:
        return fn(*args)
    except Exception as exc:
        return type(exc)


def test_a_filter_of_a_known_shape_is_pushed_exactly_as_a_new_one() -> None:
    """The float rewrite is decided per shape: a new literal of a known shape gets the
    payload computed from scratch, byte for byte (column-column float comparisons are
    rewritten, column-literal ones never are, whatever the literal)."""
    schema = pa.schema(
        [
            ("id", pa.int64()),
            ("x", pa.float64()),
            ("y", pa.float32()),
            ("s", pa.string()),
            ("t", pa.time64("us")),  # stubbed in the payload's schema
            ("ts", pa.timestamp("us", tz="UTC")),
        ]
    )
    x, y, i, s, ts = (pc.field(n) for n in ("x", "y", "id", "s", "ts"))
    shapes = [
        lambda v: i == pc.scalar(pa.scalar(v, pa.int64())),
        lambda v: i == pc.scalar(pa.scalar(v % 2**31, pa.int32())),  # another shape: int32 literal
        lambda v: x == pc.scalar(pa.scalar(float(v), pa.float64())),
        lambda v: (x > y) & (i > pc.scalar(pa.scalar(v, pa.int64()))),  # rewritten
        lambda v: (x == y) | (x < pc.scalar(pa.scalar(v, pa.float64()))),
        lambda v: s == pc.scalar(str(v) + "'\"%"),
        lambda v: s.isin([str(v), "b"]),
        lambda v: ts == pc.scalar(pa.scalar(v * 1_000_000, pa.timestamp("us", tz="UTC"))),
        lambda v: i == pc.scalar(pa.scalar(None, pa.int64())),
        lambda v: pc.is_null(x) | (x != pc.scalar(math.nan)),
    ]
    values = [0, 1, -7, 2**40, 5]
    prepared = _PreparedFilters()
    for v in values * 2:
        for make in shapes:
            f = make(v)
            want = outcome(_fresh_payload, f, schema)
            assert outcome(prepared.payload, f, schema) == want
            assert outcome(prepared.payload, f, schema) == want  # the same object again
    # one decision per shape and schema, both answers present
    assert set(prepared._plain._items.values()) == {True, False}
    assert len(prepared._plain) == len(shapes) - 1  # a NULL int64 literal: the first shape


def test_a_schema_with_an_unhashable_type_is_prepared_too() -> None:
    """pylance's blob extension type cannot be hashed: such a schema is keyed by its bytes
    (the differential pruning run found the scan failing over a blob column)."""
    schema = pa.schema([("id", pa.int64()), lance.blob_field("payload")])
    with pytest.raises(TypeError):
        hash(schema)
    prepared = _PreparedFilters()
    for v in (1, 2, 1):
        f = pc.field("id") == pc.scalar(v)
        assert prepared.payload(f, schema) == _fresh_payload(f, schema)
