"""Property: whatever the spec and the rows, the namespace returns exactly the rows written."""

from __future__ import annotations

import datetime as dt
import tempfile
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lance_sql.tables.namespace.namespace import PartitionedNamespace

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("s", pa.utf8()),
        pa.field("d", pa.date32()),
        pa.field("f", pa.float64()),
    ]
)

FIELDS = [
    {"source": "k", "transform": "bucket", "num_buckets": 3},
    {"source": "s", "transform": "identity"},
    {"source": "s", "transform": "truncate", "width": 1},
    {"source": "d", "transform": "month"},
    {"source": "d", "transform": "year"},
    {"sources": ["s", "k"], "transform": "multi_bucket", "num_buckets": 2},
    {"source": "k", "transform": "truncate", "width": 10},
    {"field_id": "k_mod", "source": "k", "expression": "col0 % 4", "result_type": pa.int64()},
]

rows = st.lists(
    st.fixed_dictionaries(
        {
            "k": st.integers(-(2**40), 2**40),
            "s": st.one_of(st.none(), st.text(alphabet="abUS", max_size=3)),
            "d": st.one_of(st.none(), st.dates(dt.date(1990, 1, 1), dt.date(2030, 12, 31))),
            "f": st.one_of(st.none(), st.floats(allow_nan=False, width=64)),
        }
    ),
    min_size=0,
    max_size=40,
)


def _key(r: dict[str, Any]) -> tuple[Any, ...]:
    return tuple((v is None, v) for v in (r["k"], r["s"], r["d"], r["f"]))


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    spec=st.lists(st.sampled_from(FIELDS), min_size=1, max_size=3, unique_by=lambda f: str(f)),
    first=rows,
    second=rows,
)
def test_namespace_returns_exactly_the_rows_written(
    spec: list[dict[str, Any]], first: list[dict[str, Any]], second: list[dict[str, Any]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ns = PartitionedNamespace.create(f"{tmp}/ns", SCHEMA, spec)
        ns.append(pa.Table.from_pylist(first, schema=SCHEMA))
        ns.append(pa.Table.from_pylist(second, schema=SCHEMA))
        got = sorted(ns.to_table().to_pylist(), key=_key)
        assert got == sorted(first + second, key=_key)
        # Each partition table holds only rows of its own partition values.
        seen = 0
        for entry in ns.tables():
            part = ns.to_table(partitions=[entry])
            seen += part.num_rows
            assert part.num_rows > 0
        assert seen == len(first) + len(second)
        assert ns.count_rows(pc.field("k") >= 0) == sum(r["k"] >= 0 for r in first + second)
