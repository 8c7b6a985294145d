"""Deterministic random tables for the differential corpus, and where they are written.

Every table exists three times with the same rows and the same Arrow schema:
a lance-sql partitioned namespace (or, for ``products``, a plain Lance dataset
written by pylance), and a DataFusion memory table in a plain
``datafusion.SessionContext``. Specs are chosen so that the usual join keys are
storage-partitioned-join compatible (bucket[16] x bucket[8] on customer keys,
bucket[16] x bucket[16] on order keys, identity x identity) and so that every
transform and spec evolution (``add_spec``) is exercised.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
from ai_columns import AI_NAMES, add_ai_columns, ai_schema

from lance_sql.tables.namespace.namespace import PartitionedNamespace

SEED = 20261123
EPOCH = dt.datetime(2024, 1, 1)
BIG = 10**18


def _bucket(field: str, n: int) -> dict[str, Any]:
    return {"source": field, "transform": "bucket", "num_buckets": n}


def _t(field: str, transform: str, **kw: Any) -> dict[str, Any]:
    return {"source": field, "transform": transform, **kw}


ORDERS_SCHEMA = pa.schema(
    [
        pa.field("order_id", pa.int64(), nullable=False),
        pa.field("customer_id", pa.int64()),
        pa.field("status", pa.string()),
        pa.field("amount", pa.float64()),
        pa.field("price", pa.decimal128(12, 2)),
        pa.field("qty", pa.int32()),
        pa.field("odate", pa.date32()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("big", pa.int64()),
        pa.field("flag", pa.bool_()),
        pa.field("code", pa.int16()),
    ]
)
CUSTOMERS_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("name", pa.string()),
        pa.field("nation", pa.string()),
        pa.field("segment", pa.string()),
        pa.field("score", pa.float64()),
        pa.field("created", pa.date32()),
        pa.field("tier", pa.int8()),
    ]
)
ITEMS_SCHEMA = pa.schema(
    [
        pa.field("item_id", pa.int64(), nullable=False),
        pa.field("order_id", pa.int64()),
        pa.field("sku", pa.string()),
        pa.field("qty", pa.int32()),
        pa.field("unit_price", pa.decimal128(10, 3)),
        pa.field("weight", pa.float32()),
    ]
)
EVENTS_SCHEMA = pa.schema(
    [
        pa.field("event_id", pa.int64(), nullable=False),
        pa.field("customer_id", pa.int64()),
        pa.field("ts", pa.timestamp("us")),
        pa.field("kind", pa.string()),
        pa.field("value", pa.float64()),
        pa.field("u", pa.uint32()),
    ]
)
PRODUCTS_SCHEMA = pa.schema(
    [
        pa.field("sku", pa.string(), nullable=False),
        pa.field("category", pa.string()),
        pa.field("list_price", pa.decimal128(10, 2)),
        pa.field("added", pa.timestamp("us")),
        pa.field("rating", pa.float64()),
    ]
)
SMALL_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("k", pa.int64()),
        pa.field("x", pa.int64()),
        pa.field("b", pa.bool_()),
        pa.field("c", pa.bool_()),
    ]
)
#: decimals wider than Python's default 28-digit Decimal context, decimal256 too (within
#: 38 digits, so that DuckDB, which has no decimal256, holds them exactly)
WIDE_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("customer_id", pa.int64()),
        pa.field("w4", pa.decimal128(38, 4)),
        pa.field("w0", pa.decimal128(38, 0)),
        pa.field("w6", pa.decimal256(50, 6)),
    ]
)
WIDE_4 = [
    Decimal(v)
    for v in (
        "12345678901234567890123456789012.3456",
        "12345678901234567890123456789012.3457",
        "-12345678901234567890123456789012.3455",
        "9999999999999999999999999999.9999",
        "10000000000000000000000000000.0000",
        "1.5000",
        "-0.0001",
    )
]
WIDE_0 = [
    Decimal(v)
    for v in (
        "1234567890123456789012345678901234",
        "1234567890123456789012345678901999",
        "1234567890123456789012345678902000",
        "-1234567890123456789012345678901001",
        "99999999999999999999999999999",
        "7",
    )
]
WIDE_6 = [
    Decimal(v)
    for v in (
        "1234567890123456789012345678901.456789",
        "1234567890123456789012345678901.456790",
        "-9876543210987654321098765432109.500000",
        "100000000000000000000000000000.000001",
        "0.000000",
        "-7.250000",
    )
]
T_SCHEMA = pa.schema([pa.field("x", pa.int64()), pa.field("y", pa.int64())])
#: ``s0`` / ``s1``: string-keyed namespaces bucketed differently in each of several spec
#: versions, with non-ASCII keys and zoned timestamps (a RIGHT JOIN of the two with a
#: WHERE on the null-supplying side was a reported wrong-results suspect)
S_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("c0", pa.string()),
        pa.field("c1", pa.float64()),
        pa.field("c2", pa.timestamp("us", tz="America/New_York")),
    ]
)
#: documents with AI-shaped columns (an embedding vector, a struct, a list of structs, a
#: map): selected and carried through queries and joins; predicates use the scalar ones
DOCS_SCHEMA = ai_schema(
    pa.schema(
        [
            pa.field("doc_id", pa.int64(), nullable=False),
            pa.field("customer_id", pa.int64()),
            pa.field("lang", pa.string()),
            pa.field("rank", pa.float64()),
        ]
    ),
    8,
)

STATUSES = ["open", "shipped", "done", "returned", "Open", ""]
NATIONS = ["DE", "FR", "US", "JP", "BR", "ab", "abc"]
SEGMENTS = ["AUTO", "BUILD", "FURN", "HOUSE", "MACH"]
KINDS = ["click", "view", "buy", "abandon"]
SKUS = [f"{p}{i:03d}" for p in ("ab", "ac", "bx", "zz") for i in range(25)]
#: string keys of s0 / s1: non-ASCII (2-, 3- and 4-byte UTF-8), empty, mixed case
S_KEYS = ["é", "日本", "日", "ß", "Ω", "a", "ab", "Z", "", "😀", "zz", "ée"]


def _maybe(rng: random.Random, value: Any, p: float = 0.08) -> Any:
    return None if rng.random() < p else value


def orders_rows(rng: random.Random, n: int, first_id: int) -> pa.Table:
    rows: dict[str, list[Any]] = {f.name: [] for f in ORDERS_SCHEMA}
    for i in range(first_id, first_id + n):
        rows["order_id"].append(i)
        rows["customer_id"].append(_maybe(rng, rng.randrange(0, 560)))
        rows["status"].append(_maybe(rng, rng.choice(STATUSES)))
        amount = rng.choice([rng.uniform(-100, 1000), 0.0, -0.0, 1e15, round(rng.random(), 2)])
        rows["amount"].append(_maybe(rng, amount))
        rows["price"].append(_maybe(rng, Decimal(rng.randrange(-99999, 9999999)) / 100))
        qty = rng.choice([rng.randrange(0, 50), 2**31 - 1, -(2**31), 0, 1, 127, 128, -129])
        rows["qty"].append(_maybe(rng, qty))
        rows["odate"].append(
            _maybe(rng, (EPOCH + dt.timedelta(days=rng.randrange(-400, 400))).date())
        )
        rows["ts"].append(
            _maybe(rng, EPOCH + dt.timedelta(seconds=rng.randrange(-86400 * 400, 86400 * 400)))
        )
        rows["big"].append(_maybe(rng, rng.choice([BIG - rng.randrange(1000), 9 * BIG, -BIG, 7])))
        rows["flag"].append(_maybe(rng, rng.random() < 0.5))
        rows["code"].append(_maybe(rng, rng.choice([-32768, 32767, 0, rng.randrange(-300, 300)])))
    return pa.table(rows, schema=ORDERS_SCHEMA)


def customers_rows(rng: random.Random, n: int) -> pa.Table:
    rows: dict[str, list[Any]] = {f.name: [] for f in CUSTOMERS_SCHEMA}
    for i in range(n):
        rows["id"].append(i)
        rows["name"].append(_maybe(rng, f"{rng.choice(['ab', 'Ab', 'cd', 'x'])}cust{i:04d}"))
        rows["nation"].append(_maybe(rng, rng.choice(NATIONS)))
        rows["segment"].append(_maybe(rng, rng.choice(SEGMENTS)))
        score = rng.choice([rng.uniform(-5, 5), 0.0, -0.0, float("nan"), 1e300, 2.5])
        rows["score"].append(_maybe(rng, score))
        rows["created"].append(
            _maybe(rng, dt.date(2020, 1, 1) + dt.timedelta(days=rng.randrange(1500)))
        )
        rows["tier"].append(_maybe(rng, rng.choice([-128, 127, 0, 1, 2, 3])))
    return pa.table(rows, schema=CUSTOMERS_SCHEMA)


def items_rows(rng: random.Random, n: int, first_id: int, max_order: int) -> pa.Table:
    rows: dict[str, list[Any]] = {f.name: [] for f in ITEMS_SCHEMA}
    for i in range(first_id, first_id + n):
        rows["item_id"].append(i)
        rows["order_id"].append(_maybe(rng, rng.randrange(0, max_order + 50), 0.03))
        rows["sku"].append(_maybe(rng, rng.choice(SKUS)))
        rows["qty"].append(_maybe(rng, rng.randrange(1, 20)))
        rows["unit_price"].append(_maybe(rng, Decimal(rng.randrange(0, 10**6)) / 1000))
        rows["weight"].append(_maybe(rng, rng.choice([0.5, 1.25, -0.0, 3.0, 1e-3])))
    return pa.table(rows, schema=ITEMS_SCHEMA)


def events_rows(rng: random.Random, n: int, first_id: int) -> pa.Table:
    rows: dict[str, list[Any]] = {f.name: [] for f in EVENTS_SCHEMA}
    for i in range(first_id, first_id + n):
        rows["event_id"].append(i)
        rows["customer_id"].append(_maybe(rng, rng.randrange(0, 520)))
        seconds = rng.randrange(0, 86400 * 8)
        rows["ts"].append(
            _maybe(rng, EPOCH + dt.timedelta(seconds=seconds, microseconds=rng.randrange(10**6)))
        )
        rows["kind"].append(_maybe(rng, rng.choice(KINDS)))
        rows["value"].append(_maybe(rng, rng.choice([rng.uniform(0, 10), 0.0, -0.0, -1.5])))
        rows["u"].append(_maybe(rng, rng.choice([0, 1, 2**32 - 1, rng.randrange(1000)])))
    return pa.table(rows, schema=EVENTS_SCHEMA)


def products_rows(rng: random.Random) -> pa.Table:
    rows: dict[str, list[Any]] = {f.name: [] for f in PRODUCTS_SCHEMA}
    for sku in SKUS:
        rows["sku"].append(sku)
        rows["category"].append(_maybe(rng, rng.choice(["tools", "toys", "food"])))
        rows["list_price"].append(_maybe(rng, Decimal(rng.randrange(100, 100000)) / 100))
        rows["added"].append(_maybe(rng, EPOCH + dt.timedelta(hours=rng.randrange(24 * 90))))
        rows["rating"].append(_maybe(rng, rng.choice([1.0, 2.5, 4.75, 5.0])))
    return pa.table(rows, schema=PRODUCTS_SCHEMA)


def docs_rows(rng: random.Random, n: int, first_id: int) -> pa.Table:
    rows: dict[str, list[Any]] = {"doc_id": [], "customer_id": [], "lang": [], "rank": []}
    for i in range(first_id, first_id + n):
        rows["doc_id"].append(i)
        rows["customer_id"].append(_maybe(rng, rng.randrange(0, 520)))
        rows["lang"].append(_maybe(rng, rng.choice(["en", "de", "fr", "ja"])))
        rows["rank"].append(_maybe(rng, rng.choice([0.5, 1.0, 2.25, -0.0, 10.0])))
    return add_ai_columns(pa.table(rows, schema=pa.schema(list(DOCS_SCHEMA)[:4])), 8, first_id)


def small_rows() -> tuple[pa.Table, pa.Table]:
    """``a_ns`` / ``b_ns``: the issue #15 repros, plus NULL keys and NULL booleans."""
    a = {
        "id": [1, 2, 3, 4, None],
        "k": [10, 20, 30, None, 10],
        "x": [1, 2, 3, 1, None],
        "b": [True, False, None, True, True],
        "c": [True, False, True, None, False],
    }
    b = {
        "id": [1, 2, 5, 6, 7],
        "k": [10, 20, 50, None, 10],
        "x": [1, 2, 1, 2, None],
        "b": [True, None, False, True, True],
        "c": [False, True, True, True, None],
    }
    return pa.table(a, schema=SMALL_SCHEMA), pa.table(b, schema=SMALL_SCHEMA)


def t_rows(rng: random.Random) -> pa.Table:
    xs = [_maybe(rng, rng.randrange(40)) for _ in range(300)]
    ys = [_maybe(rng, rng.randrange(4)) for _ in range(300)]
    return pa.table({"x": xs, "y": ys}, schema=T_SCHEMA)


def s_rows(rng: random.Random, n: int, first_id: int) -> pa.Table:
    rows: dict[str, list[Any]] = {f.name: [] for f in S_SCHEMA}
    for i in range(first_id, first_id + n):
        rows["id"].append(i)
        rows["c0"].append(_maybe(rng, rng.choice(S_KEYS)))
        rows["c1"].append(_maybe(rng, rng.choice([rng.uniform(-5, 5), 0.0, -0.0, 1.5])))
        # a DST change (2024-03-10) inside the range
        at = dt.datetime(2024, 3, 9, tzinfo=dt.timezone.utc) + dt.timedelta(hours=rng.randrange(72))
        rows["c2"].append(_maybe(rng, at))
    return pa.table(rows, schema=S_SCHEMA)


def wide_rows(rng: random.Random, n: int, first_id: int) -> pa.Table:
    rows: dict[str, list[Any]] = {f.name: [] for f in WIDE_SCHEMA}
    for i in range(first_id, first_id + n):
        rows["id"].append(i)
        rows["customer_id"].append(_maybe(rng, rng.randrange(0, 520)))
        rows["w4"].append(_maybe(rng, rng.choice(WIDE_4)))
        rows["w0"].append(_maybe(rng, rng.choice(WIDE_0)))
        rows["w6"].append(_maybe(rng, rng.choice(WIDE_6)))
    return pa.table(rows, schema=WIDE_SCHEMA)


def build_tables() -> dict[str, list[pa.Table]]:
    """Each table as the list of batches appended in order (one append each)."""
    rng = random.Random(SEED)
    a, b = small_rows()
    return {
        "orders": [orders_rows(rng, 1500, 0), orders_rows(rng, 1500, 1500)],
        "customers": [customers_rows(rng, 500)],
        "items": [items_rows(rng, 2000, 0, 3000), items_rows(rng, 2000, 2000, 3000)],
        "events": [events_rows(rng, 1200, 0), events_rows(rng, 1200, 1200)],
        "products": [products_rows(rng)],
        "docs": [docs_rows(rng, 300, 0), docs_rows(rng, 300, 300)],
        "a_ns": [a],
        "b_ns": [b],
        "t": [t_rows(rng)],
        "wide": [wide_rows(rng, 150, 0), wide_rows(rng, 150, 150)],
        "s0": [s_rows(rng, 20, 0), s_rows(rng, 20, 20), s_rows(rng, 20, 40)],
        "s1": [s_rows(rng, 20, 100), s_rows(rng, 25, 120), s_rows(rng, 20, 145)],
    }


#: namespace name -> (schema, [spec v1, v2, ...]): v(i+1) is added before batch i, so
#: batch i is written under spec version min(i + 1, number of specs)
NAMESPACES: dict[str, tuple[pa.Schema, list[list[dict[str, Any]]]]] = {
    "orders": (
        ORDERS_SCHEMA,
        [[_bucket("customer_id", 16)], [_bucket("customer_id", 4), _t("odate", "year")]],
    ),
    "customers": (CUSTOMERS_SCHEMA, [[_bucket("id", 8)]]),
    "items": (
        ITEMS_SCHEMA,
        [[_bucket("order_id", 16)], [_bucket("order_id", 4), _t("sku", "truncate", width=1)]],
    ),
    "events": (
        EVENTS_SCHEMA,
        [[_t("ts", "day"), _t("kind", "identity")], [_t("ts", "year"), _t("kind", "identity")]],
    ),
    "a_ns": (SMALL_SCHEMA, [[_t("k", "identity")]]),
    "b_ns": (SMALL_SCHEMA, [[_t("k", "identity")]]),
    "t": (T_SCHEMA, [[_bucket("x", 4)]]),
    "wide": (
        WIDE_SCHEMA,
        [
            [_t("w4", "identity"), _t("w0", "truncate", width=1000)],
            [_bucket("w6", 4), _t("w6", "truncate", width=1000000), _t("w0", "identity")],
        ],
    ),
    "s0": (
        S_SCHEMA,
        [
            [_bucket("c0", 12), _t("c0", "truncate", width=2), _bucket("c0", 4)],
            [_bucket("c0", 3), _t("c0", "identity")],
        ],
    ),
    "s1": (
        S_SCHEMA,
        [
            [_bucket("c0", 12)],
            [_bucket("c0", 6), _bucket("c0", 1)],
            [_bucket("c0", 3), _bucket("c0", 16)],
        ],
    ),
    "docs": (
        DOCS_SCHEMA,
        [[_bucket("customer_id", 8)], [_bucket("customer_id", 8), _t("lang", "identity")]],
    ),
}
#: plain Lance datasets (pylance ``write_dataset``), registered with ``register_lance``
DATASETS = ("products",)
#: namespaces with AI-shaped columns -> their scalar-only twin (same rows, specs and
#: writes, the AI columns left out): a filter on scalar columns reads the same tables
SCALAR_TWINS = {"docs": "docs_scalar"}


def scalar_twin(table: Any) -> Any:
    """``table`` (a table or a schema) without the AI-shaped columns."""
    if isinstance(table, pa.Schema):
        return pa.schema([f for f in table if f.name not in AI_NAMES])
    return table.select([n for n in table.column_names if n not in AI_NAMES])


def _write(path: Path, schema: pa.Schema, specs: list[Any], batches: list[pa.Table]) -> str:
    ns = PartitionedNamespace.create(str(path), schema, specs[0])
    for i, batch in enumerate(batches):
        if 0 < i < len(specs):
            ns.add_spec(specs[i])
        ns.append(batch)
    return str(path)


def write_all(root: Path, tables: dict[str, list[pa.Table]]) -> dict[str, str]:
    """Write every table under ``root``; name -> namespace root or dataset uri."""
    out: dict[str, str] = {}
    for name, (schema, specs) in NAMESPACES.items():
        out[name] = _write(root / name, schema, specs, tables[name])
        if name in SCALAR_TWINS:
            twin = SCALAR_TWINS[name]
            out[twin] = _write(
                root / twin, scalar_twin(schema), specs, [scalar_twin(t) for t in tables[name]]
            )
    for name in DATASETS:
        uri = str(root / f"{name}.lance")
        lance.write_dataset(pa.concat_tables(tables[name]), uri, max_rows_per_file=40)
        out[name] = uri
    return out
