"""A view's aggregate read twice in one query runs once, with plain DataFusion's answer.

TPC-H q15 reads its view ``revenue0`` twice (and its maximum in a scalar
subquery); :mod:`lance_sql.engines.datafusion.shared_aggregates` runs the
repeated aggregate once. Checked against plain DataFusion over the same rows
in memory, for a Lance dataset and a partitioned namespace, with the rows the
Lance scans read counted (one scan's worth, not two).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import datafusion
import lance
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace

N = 3000


def lineitem() -> pa.Table:
    return pa.table(
        {
            "k": pa.array([i % 97 for i in range(N)], pa.int64()),
            "price": pa.array([float((i * 7) % 113) for i in range(N)], pa.float64()),
            "qty": pa.array([(i * 13) % 50 for i in range(N)], pa.int64()),
            "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 40) for i in range(N)]),
        }
    )


SUPPLIER = pa.table({"s": pa.array(range(100), pa.int64()), "name": [f"s{i}" for i in range(100)]})

VIEW = (
    "CREATE VIEW rev AS SELECT k, sum(qty) AS total FROM li "
    "WHERE day >= DATE '2024-01-05' AND day < DATE '2024-01-30' GROUP BY k"
)
QUERIES = [  # q15's shape, then others that read the view twice
    "SELECT s, name, total FROM sup, rev WHERE s = k AND total = (SELECT max(total) FROM rev) "
    "ORDER BY s",
    "SELECT a.k, a.total, b.total AS t2 FROM rev a JOIN rev b ON a.k = b.k + 1 ORDER BY a.k",
    "SELECT count(*) AS n FROM rev WHERE total > (SELECT avg(total) FROM rev)",
]


def expected(sql: str) -> list[dict[str, object]]:
    plain = datafusion.SessionContext()
    plain.register_record_batches("li", [lineitem().to_batches()])
    plain.register_record_batches("sup", [SUPPLIER.to_batches()])
    plain.sql(VIEW).collect()
    return plain.sql(sql).to_arrow_table().to_pylist()


@pytest.fixture(params=["dataset", "namespace"])
def ctx(request: pytest.FixtureRequest, tmp_path: Path) -> lance_sql.SessionContext:
    ctx = lance_sql.SessionContext()
    if request.param == "dataset":
        lance.write_dataset(lineitem(), str(tmp_path / "li.lance"))
        ctx.register_lance("li", str(tmp_path / "li.lance"))
    else:
        data = lineitem()
        spec = [{"source": "k", "transform": {"type": "bucket", "num_buckets": 4}}]
        ns = PartitionedNamespace.create(str(tmp_path / "ns"), data.schema, spec)
        ns.append(data)
        ctx.register_namespace("li", str(tmp_path / "ns"))
    lance.write_dataset(SUPPLIER, str(tmp_path / "sup.lance"))
    ctx.register_lance("sup", str(tmp_path / "sup.lance"))
    ctx.sql(VIEW).collect()
    return ctx


def rows_read(ctx: lance_sql.SessionContext) -> int:
    if "li" in ctx.registered_namespaces():
        return ctx.registered_namespaces()["li"].metrics.rows_read
    return ctx.lance_table("li").metrics.rows_read


@pytest.mark.parametrize("sql", QUERIES)
def test_a_view_read_twice_is_aggregated_once_with_the_same_answer(
    ctx: lance_sql.SessionContext, sql: str
) -> None:
    before = rows_read(ctx)
    assert ctx.sql("SELECT * FROM rev").to_arrow_table().num_rows == 97
    once = rows_read(ctx) - before
    assert once > 0
    got = ctx.sql(sql).to_arrow_table()
    assert got.to_pylist() == expected(sql)
    assert rows_read(ctx) - before == 2 * once  # the view once, the query once
    assert not [t for t in ctx.catalog().schema().names() if t.startswith("__lance_shared")]


def test_volatile_aggregates_are_not_shared(tmp_path: Path) -> None:
    lance.write_dataset(lineitem(), str(tmp_path / "li.lance"))
    ctx = lance_sql.SessionContext()
    ctx.register_lance("li", str(tmp_path / "li.lance"))
    ctx.sql("CREATE VIEW r AS SELECT k, sum(qty * random()) AS t FROM li GROUP BY k").collect()
    before = ctx.lance_table("li").metrics.rows_read
    ctx.sql("SELECT count(*) FROM r a JOIN r b ON a.k = b.k AND a.t >= b.t").collect()
    assert ctx.lance_table("li").metrics.rows_read - before == 2 * N  # read twice
