"""Cheap partition opens (issue #18 item 2): cached units and datasets stay exactly right.

Partition tables are opened once per pinned version (process-wide cache),
opened concurrently, and a namespace table reuses its scan units across
queries; chains prefetch the next partition scans. Every answer here is
checked against the rows written (pyarrow over the source table).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lance_sql import SessionContext
from lance_sql.tables.chain import PREFETCH_UNITS
from lance_sql.tables.namespace import reader
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("day", pa.int32()),
        pa.field("x", pa.float64()),
    ]
)
DAYS = 40


def _rows(n: int, offset: int = 0) -> pa.Table:
    ids = list(range(offset, offset + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "day": pa.array([i % DAYS for i in ids], pa.int32()),
            "x": pa.array([(i % 97) / 4 for i in ids], pa.float64()),
        },
        schema=SCHEMA,
    )


@pytest.fixture
def days(tmp_path: Path) -> tuple[PartitionedNamespace, pa.Table]:
    ns = PartitionedNamespace.create(
        str(tmp_path / "days"), SCHEMA, [{"source": "day", "transform": "identity"}]
    )
    data = _rows(2000)
    ns.append(data)
    return ns, data


def _expected(data: pa.Table) -> dict[str, object]:
    return {
        "n": data.num_rows,
        "s": pc.sum(data["x"]).as_py(),
        "hit": data.filter(pc.field("id") == 1234)["x"].to_pylist(),
    }


def _answers(ctx: SessionContext, name: str = "ns") -> dict[str, object]:
    n = ctx.sql(f"SELECT count(*) AS n FROM {name}").to_pylist()[0]["n"]
    s = ctx.sql(f"SELECT sum(x) AS s FROM {name}").to_pylist()[0]["s"]
    hit = [r["x"] for r in ctx.sql(f"SELECT x FROM {name} WHERE id = 1234").to_pylist()]
    return {"n": n, "s": s, "hit": hit}


def _close(a: dict[str, object], b: dict[str, object]) -> bool:
    return a["n"] == b["n"] and a["hit"] == b["hit"] and abs(a["s"] - b["s"]) < 1e-6  # type: ignore[operator]


def test_repeated_queries_reuse_units_and_open_nothing_again(days) -> None:
    ns, data = days
    ctx = SessionContext()
    table = ctx.register_namespace("ns", ns.root)
    assert _close(_answers(ctx), _expected(data))
    misses = reader._OPENED.misses
    plan1 = table.plan(None)
    plan2 = table.plan(pc.field("id") != 5)  # prunes nothing (id = 5 is skipped by bounds)
    assert [u.units for u in plan1.units] == [u.units for u in plan2.units]  # the same unit objects
    assert _close(_answers(ctx), _expected(data))
    assert reader._OPENED.misses == misses
    # a new context (a re-registration) opens no partition table again either
    ctx2 = SessionContext()
    ctx2.register_namespace("ns", ns.root)
    assert _close(_answers(ctx2), _expected(data))
    assert reader._OPENED.misses == misses


def test_writes_are_seen_and_untouched_partitions_keep_their_units(days) -> None:
    ns, data = days
    ctx = SessionContext()
    table = ctx.register_namespace("ns", ns.root)
    assert _close(_answers(ctx), _expected(data))
    before = {u.entry.object_id: u for c in table.plan(None).units for u in c.units}
    more = _rows(30, offset=5000).filter(pc.field("day") < 3)  # touches 3 partitions
    ns.append(more)
    data = pa.concat_tables([data, more])
    assert _close(_answers(ctx), _expected(data))
    after = {u.entry.object_id: u for c in table.plan(None).units for u in c.units}
    kept = [oid for oid in after if after[oid] is before.get(oid)]
    assert len(after) == DAYS and len(kept) == DAYS - 3
    ns.delete(pc.field("id") < 500)
    data = data.filter(pc.field("id") >= 500)
    assert _close(_answers(ctx), _expected(data))


def test_pinned_registration_keeps_reading_its_version(days) -> None:
    ns, data = days
    version = ns.manifest_version
    ctx = SessionContext()
    ctx.register_namespace("latest", ns.root)
    ctx.register_namespace("pinned", ns.root, version=version)
    ns.append(_rows(100, offset=9000))
    ns.delete(pc.field("id") == 1234)
    assert _close(_answers(ctx, "pinned"), _expected(data))
    got = _answers(ctx, "latest")
    assert got["n"] == data.num_rows + 100 - 1 and got["hit"] == []


def test_count_star_without_filter_reads_no_pages_and_counts_deletions(days) -> None:
    ns, data = days
    ns.delete(pc.field("x") > 20.0)
    expected = data.filter(~(pc.field("x") > 20.0)).num_rows
    ctx = SessionContext()
    table = ctx.register_namespace("ns", ns.root)
    ctx.sql("SELECT count(*) FROM ns").collect()
    table.metrics.reset()
    assert ctx.sql("SELECT count(*) AS n FROM ns").to_pylist()[0]["n"] == expected
    assert table.metrics.rows_read == 0
    # with a filter the rows are read and filtered (in Lance)
    n = ctx.sql("SELECT count(*) AS n FROM ns WHERE x < 1.0").to_pylist()[0]["n"]
    assert n == data.filter(pc.field("x") < 1.0).num_rows
    assert table.metrics.rows_read > 0


def test_limit_over_many_partitions_stops_early(days) -> None:
    ns, data = days
    ctx = SessionContext()
    table = ctx.register_namespace("ns", ns.root)
    ctx.sql("SELECT * FROM ns LIMIT 3").collect()
    table.metrics.reset()
    assert ctx.sql("SELECT * FROM ns LIMIT 3").to_arrow_table().num_rows == 3
    # at most a few of the 40 partition tables are started: per DataFusion partition the
    # current one and PREFETCH_UNITS ahead, plus those started while the stream is pulled
    # on before the limit ends it (a race: 1-10 in 300 runs, 9-10 in 7 of them)
    assert table.metrics.scans_started <= 2 * (1 + PREFETCH_UNITS + 3)
    assert table.metrics.rows_read < data.num_rows // 2


def test_eight_threads_on_one_context(days) -> None:
    ns, data = days
    ctx = SessionContext()
    ctx.register_namespace("ns", ns.root)
    expected = _expected(data)
    by_day = {d: pc.sum(data.filter(pc.field("day") == d)["x"]).as_py() for d in range(0, DAYS, 7)}
    barrier = threading.Barrier(8)

    def worker(k: int) -> int:
        barrier.wait()
        for i in range(6):
            if (k + i) % 2:
                assert _close(_answers(ctx), expected)
            else:
                d = (7 * (k + i)) % DAYS // 7 * 7
                got = ctx.sql(f"SELECT sum(x) AS s FROM ns WHERE day = {d}").to_pylist()[0]["s"]
                assert abs(got - by_day[d]) < 1e-9
        return k

    with ThreadPoolExecutor(8) as pool:
        assert sorted(pool.map(worker, range(8))) == list(range(8))


@pytest.mark.parametrize("position", [1, -1])
def test_a_damaged_table_read_ahead_fails_typed_naming_it(days, position: int) -> None:
    import glob
    import re

    from lance_sql.errors import FormatError

    ns, _ = days
    entry = ns.tables()[position]  # not the first of its chain: read ahead on the pool
    with open(glob.glob(f"{entry.uri}/data/*.lance")[0], "r+b") as f:
        f.truncate(100)
    ctx = SessionContext()
    ctx.register_namespace("ns", ns.root)
    with pytest.raises(FormatError, match=re.escape(f"partition table '{entry.object_id}'")):
        ctx.sql("SELECT sum(x) FROM ns").collect()
    # count(*) needs no page and still answers
    assert ctx.sql("SELECT count(*) AS n FROM ns").to_pylist()[0]["n"] == 2000
