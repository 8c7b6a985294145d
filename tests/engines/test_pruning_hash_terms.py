"""``murmur3(k) % N`` and ``murmur3_multi`` written in SQL prune bucketed namespaces.

DataFusion renames each ``murmur3`` call for its argument types
(``__lance_murmur3__int64``) and widens it (``CAST(... AS BIGINT) % 16``)
before the transform-term pass sees the filter; the bucket transform must still
recognise its own term. Rows are compared with the same query over an in-memory
table in DataFusion and with a brute force over ``udfs.murmur3``.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import lance_sql
import udfs
from lance_sql.engines.datafusion.provider import capture_scans
from lance_sql.tables.namespace.namespace import PartitionedNamespace


@pytest.fixture(scope="module")
def bucketed(tmp_path_factory: pytest.TempPathFactory) -> tuple[lance_sql.SessionContext, pa.Table]:
    rows = pa.table(
        {
            "id": pa.array([*range(-300, 300), None, -(2**63), 2**63 - 1], pa.int64()),
            "v": pa.array([f"s{i % 37}" for i in range(603)]),
        }
    )
    base = tmp_path_factory.mktemp("hash_terms")
    one = PartitionedNamespace.create(str(base / "one"), rows.schema, "bucket(16, id)")
    one.append(rows)
    multi = PartitionedNamespace.create(str(base / "multi"), rows.schema, "bucket(8, id, v)")
    multi.append(rows)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("one", str(base / "one"))
    ctx.register_namespace("multi", str(base / "multi"))
    ctx.register_record_batches("mem", [rows.to_batches()])
    return ctx, rows


def _reads(run: Any) -> list[str]:
    with capture_scans() as records:
        run()
    found = [re.search(r"partition_tables=\d+/\d+", r.plan.description) for r in records]
    return [m.group(0) for m in found if m]


def _sorted_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(
        (tuple(r.values()) for r in table.to_pylist()), key=lambda r: (r[0] is None, r[0], r[1])
    )


def _hashes(rows: pa.Table, *columns: str) -> np.ndarray:
    cols = [rows.column(c).combine_chunks() for c in columns]
    h = udfs.murmur3(cols[0]) if len(cols) == 1 else udfs.murmur3_multi(cols)
    return np.array([np.nan if x is None else x for x in h.to_pylist()], dtype=np.float64)


# "one" has 17 partition tables: 16 buckets and the NULL id
CASES = [
    # (table, WHERE, partition tables read, brute force over the hashes)
    ("one", "murmur3(id) % 16 = 3", "1/17", lambda h: np.fmod(h, 16) == 3),
    ("one", "murmur3(id) % 16 = -3", "1/17", lambda h: np.fmod(h, 16) == -3),
    ("one", "murmur3(id) % 16 IN (3, -3)", "1/17", lambda h: np.abs(np.fmod(h, 16)) == 3),
    ("one", "abs(murmur3(id)) % 16 = 5", "1/17", lambda h: np.fmod(np.abs(h), 16) == 5),
    ("one", "murmur3(id) % 8 = 1", "2/17", lambda h: np.fmod(h, 8) == 1),
    ("one", "murmur3(id) = 1392991556", "1/17", lambda h: h == 1392991556),
    ("multi", "abs(murmur3_multi(id, v)) % 8 = 2", "1/8", lambda h: np.fmod(np.abs(h), 8) == 2),
    ("multi", "murmur3_multi(id, v) % 8 = 6", "1/8", lambda h: np.fmod(h, 8) == 6),
]


@pytest.mark.parametrize(("table", "where", "reads", "brute"), CASES)
def test_hash_terms_in_sql_prune_to_their_buckets(
    bucketed: tuple[lance_sql.SessionContext, pa.Table],
    table: str,
    where: str,
    reads: str,
    brute: Any,
) -> None:
    ctx, rows = bucketed
    sql = f"SELECT id, v FROM {table} WHERE {where}"
    assert _reads(lambda: ctx.sql(sql).collect()) == [f"partition_tables={reads}"]
    got = _sorted_rows(ctx.sql(sql).to_arrow_table())
    assert got == _sorted_rows(ctx.sql(f"SELECT id, v FROM mem WHERE {where}").to_arrow_table())
    hashed = _hashes(rows, "id") if table == "one" else _hashes(rows, "id", "v")
    want = rows.filter(pa.array(brute(hashed)))
    assert got == _sorted_rows(want)
    assert got, "the case selects some rows"
