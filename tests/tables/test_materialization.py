"""Early vs late materialization chosen from a sampled selectivity (never changes rows)."""

from __future__ import annotations

import datafusion
import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_sql
from lance_sql.tables import materialization as M

ROWS = 100_000


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> lance.LanceDataset:
    rng = np.random.default_rng(7)
    k = np.arange(ROWS, dtype=np.int64)
    x = rng.random(ROWS)
    x[::97] = np.nan
    table = pa.table(
        {
            "k": k,
            "x": pa.array(x, mask=(k % 89 == 0)),
            "s": pa.array([f"w{i % 1000}" for i in range(ROWS)]),
            "d": pa.array((k % 365).astype(np.int32)).cast(pa.date32()),
        }
    )
    uri = str(tmp_path_factory.mktemp("mat") / "t.lance")
    return lance.write_dataset(table, uri, max_rows_per_file=30_000)


@pytest.fixture(autouse=True)
def _fresh() -> None:
    M.clear()


def test_unselective_filter_reads_early(ds: lance.LanceDataset) -> None:
    assert M.late_materialization(ds, None, ["k", "s"], pc.field("x") > 0.3) is False


def test_selective_filter_keeps_lances_default(ds: lance.LanceDataset) -> None:
    assert M.late_materialization(ds, None, ["k", "s"], pc.field("k") == 12345) is None


def test_nothing_to_fetch_later_or_no_filter(ds: lance.LanceDataset) -> None:
    assert M.late_materialization(ds, None, ["x"], pc.field("x") > 0.3) is None
    assert M.late_materialization(ds, None, ["k"], None) is None


def test_small_scans_are_not_sampled(ds: lance.LanceDataset) -> None:
    one = ds.get_fragments()[-1:]  # 10,000 rows
    assert M.late_materialization(ds, one, ["k", "s"], pc.field("x") > 0.3) is None


def test_positional_references(ds: lance.LanceDataset) -> None:
    # namespace readers translate filters to field positions of the partition table
    assert M.late_materialization(ds, None, ["k", "s"], pc.field(1) > 0.3) is False
    assert M.late_materialization(ds, None, ["k", "s"], pc.field(0) == 5) is None


def test_nested_references_are_not_sampled(ds: lance.LanceDataset) -> None:
    assert M.late_materialization(ds, None, ["k"], pc.field("x", "y") == 1) is None


def test_spread_of_matches(ds: lance.LanceDataset) -> None:
    frags = ds.get_fragments()
    scattered = pc.field("d") == pa.scalar(3, pa.int32()).cast(pa.date32())  # 1 row in 365
    assert M.estimate_spread(frags, ["d"], scattered) == 1.0  # every 1024-row slice has one
    clustered = pc.field("k") < 20_000  # 20% of the rows, all at the start
    assert M.estimate_spread(frags, ["k"], clustered) == 0.25  # 2 of 8 slices
    assert M.late_materialization(ds, None, ["s"], clustered) is None  # take few pages late
    assert M.late_materialization(ds, None, ["s"], scattered) is False


@pytest.mark.parametrize(
    "where",
    [
        "x > 0.3",
        "x > 0.3 OR s = 'w7'",
        "NOT (x > 0.3)",
        "x IS NULL OR x <> x",
        "k = 12345",
        "d >= DATE '1970-03-01'",
        "s LIKE 'w1%' AND x < 0.9",
    ],
)
def test_same_rows_as_datafusion(ds: lance.LanceDataset, where: str) -> None:
    query = f"SELECT k, x, s, d FROM t WHERE {where} ORDER BY k"
    ctx = lance_sql.SessionContext()
    ctx.register_lance("t", ds.uri)
    got = ctx.sql(query).to_arrow_table()
    ref = datafusion.SessionContext()
    ref.register_record_batches("t", [ds.to_table().to_batches()])
    want = ref.sql(query).to_arrow_table()
    assert _canon(got) == _canon(want)


def _canon(t: pa.Table) -> list[tuple[object, ...]]:
    """Rows with floats as text (NaN equals NaN), in query order."""
    cols = [pc.cast(c, pa.string()) if pa.types.is_floating(c.type) else c for c in t.columns]
    return list(zip(*(c.to_pylist() for c in cols), strict=True))


def test_a_small_unit_decides_without_sampling_or_caching(
    ds: lance.LanceDataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scan unit below ``MIN_ROWS`` keeps Lance's default without reading its fragments'
    metadata again per query, and leaves no estimate per filter (a service's point
    lookups, each a new filter, would otherwise fill the cache); same rows as pyarrow."""
    from lance_sql.tables.fragments_unit import LanceFragmentsUnit

    last = ds.get_fragments()[-1]  # 10,000 rows
    unit = LanceFragmentsUnit(ds, [last.fragment_id])
    sampled: list[object] = []
    monkeypatch.setattr(M, "estimate_spread", lambda *a: sampled.append(a))
    ref = last.to_table(columns=["k", "s"])
    for k in (90_000, 95_555, 99_999, -1):
        batches = list(unit.to_batches(["k", "s"], pc.field("k") == k))
        got = pa.Table.from_batches(batches, ref.schema)
        assert got.equals(ref.filter(pc.field("k") == k))
    assert sampled == [] and len(M._cache) == 0
    reads: list[int] = []
    monkeypatch.setattr(type(last), "metadata", property(lambda f: reads.append(1)))
    list(unit.to_batches(["k", "s"], pc.field("k") == 91_000))
    assert reads == []  # the stored row count was read once, with the first query
