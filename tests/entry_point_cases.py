"""Random namespaces for the entry-point selection tests (three spec versions each)."""

from __future__ import annotations

import datetime as dt
import decimal
import random
from dataclasses import dataclass

import datafusion
import pyarrow as pa

from lance_sql import SessionContext
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64()),
        pa.field("d", pa.date32()),
        pa.field("s", pa.string()),
        pa.field("x", pa.int32()),
        pa.field("m", pa.decimal128(38, 4)),
    ]
)
KS = [-9, -4, -1, 0, 1, 3, 7, 12, 25]
DS = [dt.date(2025, 1, 1) + dt.timedelta(days=n) for n in (-40, -1, 0, 1, 2, 30, 31, 59, 365)]
SS = ["", "a", "ab", "abc", "b", "ba", "bcd", "zz"]
XS = [-2, 0, 1, 5]
#: more digits than Python's default 28-digit decimal context holds
MS = [
    decimal.Decimal(v)
    for v in (
        "12345678901234567890123456789012.3456",
        "12345678901234567890123456789012.3457",
        "-12345678901234567890123456789012.3455",
        "9999999999999999999999999999.9999",
        "0.0999",
        "0.1000",
    )
]
POOLS = {"k": KS, "d": DS, "s": SS, "x": XS, "m": MS}
FIELDS = [
    {"source": "k", "transform": "identity"},
    {"source": "k", "transform": "bucket", "num_buckets": 4},
    {"source": "k", "transform": "truncate", "width": 5},
    {"source": "d", "transform": "day"},
    {"source": "d", "transform": "month"},
    {"source": "s", "transform": "identity"},
    {"source": "s", "transform": "truncate", "width": 1},
    {"source": "s", "transform": "bucket", "num_buckets": 3},
    {"source": "m", "transform": "identity"},
    {"source": "m", "transform": "truncate", "width": 1000},
    {"source": "m", "transform": "bucket", "num_buckets": 3},
]


@dataclass
class Case:
    ns: PartitionedNamespace
    ctx: SessionContext
    plain: datafusion.SessionContext
    all_ids: frozenset[str]


def build_case(seed: int, root: str) -> Case:
    rng = random.Random(seed)
    specs = [rng.sample(FIELDS, rng.randint(1, 2)) for _ in range(3)]
    ns = PartitionedNamespace.create(root, SCHEMA, specs[0])
    for v, spec in enumerate(specs):
        if v:
            ns.add_spec(spec)
        n = rng.randint(20, 40)
        ns.append(
            pa.table(
                {
                    c: pa.array(
                        [None if rng.random() < 0.1 else rng.choice(POOLS[c]) for _ in range(n)],
                        SCHEMA.field(c).type,
                    )
                    for c in SCHEMA.names
                },
                schema=SCHEMA,
            )
        )
    ns = PartitionedNamespace.open(root)
    ctx = SessionContext()
    ctx.register_namespace("t", root)
    plain = datafusion.SessionContext()
    plain.register_record_batches("t", [ns.to_table().to_batches()])
    return Case(ns, ctx, plain, frozenset(e.object_id for e in ns.tables()))
