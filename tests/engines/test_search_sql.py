"""``lance_search(table, column, query, k [, where])`` in SQL, against the Python search
and plain DataFusion over memory tables."""

from __future__ import annotations

from pathlib import Path

import datafusion
import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.planning.search_table import SearchError

DIM = 4
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("region", pa.string()),
        ("txt", pa.string()),
        ("emb", pa.list_(pa.float32(), DIM)),
    ]
)
SPEC = [{"field_id": "region", "source": "region", "transform": {"type": "identity"}}]
Q = [0.1, 0.2, 0.3, 0.4]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    d = tmp_path_factory.mktemp("search_sql")
    rng = np.random.default_rng(1)
    n = 1200
    v = rng.random((n, DIM), dtype=np.float32)
    t = pa.table(
        {
            "id": np.arange(n),
            "region": [f"r{i % 4}" for i in range(n)],
            "txt": [f"w{i % 5} x" for i in range(n)],
            "emb": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), DIM),
        },
        schema=SCHEMA,
    )
    ns = lance_sql.PartitionedNamespace.create(d / "ns", SCHEMA, SPEC)
    ns.append(t)
    ns.create_index("emb", "IVF_FLAT")
    ns.create_index("txt")
    lance.write_dataset(t, d / "one")
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("items", d / "ns")
    ctx.register_lance("one", d / "one")
    return ctx, ns, t, d


def _sorted(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: r["id"])


def test_lance_search_equals_python_search(setup: tuple) -> None:
    ctx, ns, _, d = setup
    got = ctx.sql(
        "SELECT * FROM lance_search('items', 'emb', [0.1, 0.2, 0.3, 0.4], 7, 'region = ''r1''')"
    ).to_arrow_table()
    want = ns.search("emb", Q, k=7, where="region = 'r1'")
    assert got.column_names == want.column_names
    assert got.to_pylist() == want.to_pylist()
    text = ctx.sql("SELECT id, _score FROM lance_search('items', 'txt', 'w3', 500)")
    assert _sorted(text.to_arrow_table()) == _sorted(ns.search("txt", "w3", k=500, columns=["id"]))
    one = ctx.sql("SELECT id, _distance FROM lance_search('one', 'emb', [0.1, 0.2, 0.3, 0.4], 3)")
    assert (
        one.to_arrow_table().to_pylist()
        == lance_sql.search(str(d / "one"), "emb", Q, k=3, columns=["id"]).to_pylist()
    )


def test_search_result_joins_and_aggregates_like_a_table(setup: tuple) -> None:
    ctx, ns, t, _ = setup
    query = (
        "SELECT s.region, count(*) AS n, min(s._distance) AS best, max(i.id) AS top "
        "FROM {s} s JOIN {i} i ON s.id = i.id WHERE s.id % 2 = 0 GROUP BY s.region ORDER BY 1"
    )
    got = ctx.sql(
        query.format(s="lance_search('items', 'emb', [0.1, 0.2, 0.3, 0.4], 40)", i="items")
    ).to_arrow_table()
    plain = datafusion.SessionContext()
    plain.from_arrow(ns.search("emb", Q, k=40), "s_mem")
    plain.from_arrow(t, "i_mem")
    want = plain.sql(query.format(s="s_mem", i="i_mem")).to_arrow_table()
    assert got.to_pylist() == want.to_pylist()
    assert got.num_rows > 0
    # a join of two namespaces next to the search (the storage-partitioned join pass)
    three = (
        "SELECT count(*) AS n, sum(i.id) AS s FROM {s} s JOIN {i} i ON s.id = i.id "
        "JOIN {i} j ON i.id = j.id AND i.region = j.region WHERE i.id % 3 = 0"
    )
    got = ctx.sql(
        three.format(s="lance_search('items', 'emb', [0.1, 0.2, 0.3, 0.4], 60)", i="items")
    ).to_arrow_table()
    plain.from_arrow(ns.search("emb", Q, k=60), "s60")
    assert (
        got.to_pylist() == plain.sql(three.format(s="s60", i="i_mem")).to_arrow_table().to_pylist()
    )


def test_explain_shows_partitions_and_index(setup: tuple) -> None:
    ctx, _, _, _ = setup
    plan = ctx.sql(
        "EXPLAIN SELECT id FROM lance_search('items', 'emb', [0.1, 0.2, 0.3, 0.4], 3, "
        "'region = ''r2''')"
    ).to_arrow_table()
    text = "\n".join(plan.column("plan").to_pylist())
    assert "partitions searched 1/4 (1 indexed, 0 flat)" in text
    assert "index emb_idx (IVF_FLAT)" in text
    plain = ctx.sql("EXPLAIN SELECT id FROM items WHERE region = 'r2'").to_arrow_table()
    assert "partitions searched" not in "\n".join(plain.column("plan").to_pylist())


@pytest.mark.parametrize(
    ("sql", "match"),
    [
        ("SELECT * FROM lance_search('nope', 'emb', [1, 2, 3, 4], 3)", "register_lance"),
        ("SELECT * FROM lance_search('items', 'emb', [1, 2], 3)", "holds 4"),
        ("SELECT * FROM lance_search('items', 'emb', [1, 2, 3, 4])", "got 3 arguments"),
        ("SELECT * FROM lance_search('items', 'nope', [1, 2, 3, 4], 3)", "no such column"),
        ("SELECT * FROM lance_search('items', 'emb', [1, 2, 3, 4], 3, {'nprobe': 2})", "nprobes"),
        (
            "SELECT * FROM lance_search('items', 'emb', [1, 2, 3, 4], 3, NULL, {'nprobes': 'x'})",
            "an integer",
        ),
        ("SELECT * FROM lance_search('items', 'emb', [1, 2, 3, 4], 3, 5)", "where is a string"),
        (
            "SELECT * FROM lance_hybrid_search('items', 'emb', [1, 2, 3, 4], 'txt', 'w1')",
            "got 5 arguments",
        ),
        (
            "SELECT * FROM lance_hybrid_search('items', 'emb', [1, 2, 3, 4], 'txt', 'w1', 3, "
            "NULL, {'rrf': 3})",
            "rrf_k",
        ),
    ],
)
def test_typed_errors(setup: tuple, sql: str, match: str) -> None:
    ctx, _, _, _ = setup
    with pytest.raises(SearchError, match=match):
        ctx.sql(sql).to_arrow_table()


def test_lance_search_sees_later_writes(tmp_path: Path) -> None:
    ns = lance_sql.PartitionedNamespace.create(tmp_path / "ns", SCHEMA, SPEC)

    def row(i: int, v: float) -> pa.Table:
        emb = pa.array([[v] * DIM], SCHEMA.field("emb").type)
        return pa.table({"id": [i], "region": ["r0"], "txt": ["a"], "emb": emb}, schema=SCHEMA)

    ns.append(row(1, 0.9))
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", tmp_path / "ns")
    sql = "SELECT id FROM lance_search('t', 'emb', [0.1, 0.1, 0.1, 0.1], 1)"
    assert ctx.sql(sql).to_arrow_table().column("id").to_pylist() == [1]
    ns.append(row(2, 0.1))
    assert ctx.sql(sql).to_arrow_table().column("id").to_pylist() == [2]


def test_explain_describes_the_search_without_running_it(
    setup: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table function only prunes and routes while planning; the top-k runs on execution."""
    from lance_sql.planning.search_table import TableCall

    ctx, _, _, _ = setup
    calls: list[int] = []
    run = TableCall.run
    monkeypatch.setattr(TableCall, "run", lambda self, q: (calls.append(1), run(self, q))[1])
    sql = (
        "SELECT id FROM lance_hybrid_search('items', 'emb', [0.1, 0.2, 0.3, 0.4], 'txt', 'w2', 4, "
        "'region IN (''r1'', ''r3'')')"
    )
    text = "\n".join(ctx.sql(f"EXPLAIN {sql}").to_arrow_table().column("plan").to_pylist())
    assert calls == []
    assert "hybrid search on emb k=4: partitions searched 4/4 (4 indexed, 0 flat)" in text
    assert "index txt_idx (INVERTED)" in text
    assert "index emb_idx (IVF_FLAT)" in text
    assert "searched when executed" in text
    got = ctx.sql(sql).to_arrow_table()
    assert calls
    assert got.num_rows == 4


def _brute_ids(t: pa.Table, region: str | None, k: int) -> list[int]:
    keep = [i for i, r in enumerate(t["region"].to_pylist()) if region in (None, r)]
    vecs = np.array([t["emb"][i].as_py() for i in keep], dtype=np.float32)
    d = ((vecs - np.array(Q, np.float32)) ** 2).sum(1)
    return [t["id"][keep[i]].as_py() for i in np.argsort(d, kind="stable")[:k]]


def test_named_options_struct(setup: tuple) -> None:
    ctx, ns, t, _ = setup
    vec = "[0.1, 0.2, 0.3, 0.4]"
    exact = ctx.sql(
        f"SELECT id FROM lance_search('items', 'emb', {vec}, 9, 'region = ''r0''', "
        "{'use_index': false, 'nprobes': 3})"
    ).to_arrow_table()
    assert exact.column("id").to_pylist() == _brute_ids(t, "r0", 9)
    everywhere = ctx.sql(
        f"SELECT id FROM lance_search('items', 'emb', {vec}, 12, {{'use_index': false}})"
    ).to_arrow_table()
    assert everywhere.column("id").to_pylist() == _brute_ids(t, None, 12)
    for opts, kw in (
        ("{'prefilter': false}", {"prefilter": False}),
        ("{'nprobes': 2, 'refine_factor': 3}", {"nprobes": 2, "refine_factor": 3}),
        ("{'metric': 'cosine', 'use_index': false}", {"metric": "cosine", "use_index": False}),
    ):
        got = ctx.sql(
            f"SELECT * FROM lance_search('items', 'emb', {vec}, 6, 'region <> ''r1''', {opts})"
        ).to_arrow_table()
        want = ns.search("emb", Q, k=6, where="region <> 'r1'", **kw)
        assert got.to_pylist() == want.to_pylist()
        assert set(got.column("region").to_pylist()) <= {"r0", "r2", "r3"}


def test_hybrid_search_in_sql(setup: tuple) -> None:
    """lance_hybrid_search fuses the exact vector list (numpy) and the term-match text list."""
    ctx, ns, t, _ = setup
    k = 8
    got = ctx.sql(
        "SELECT * FROM lance_hybrid_search('items', 'emb', [0.1, 0.2, 0.3, 0.4], 'txt', 'w1', "
        f"{k}, 'region = ''r1''', {{'use_index': false, 'rrf_k': 30}})"
    ).to_arrow_table()
    want = ns.search(
        vector=("emb", Q), text=("txt", "w1"), k=k, where="region = 'r1'", use_index=False, rrf_k=30
    )
    assert got.column_names == [*SCHEMA.names, "_distance", "_score", "_hybrid_score"]
    assert got.to_pylist() == want.to_pylist()
    vec = ns.search("emb", Q, k=k, where="region = 'r1'", use_index=False, columns=["id"])
    assert vec.column("id").to_pylist() == _brute_ids(t, "r1", k)
    txt = ns.search("txt", "w1", k=k, where="region = 'r1'", columns=["id", "txt"])
    assert all("w1" in s.split() for s in txt.column("txt").to_pylist())
    fused: dict[int, float] = {}
    for ranked in (vec.column("id").to_pylist(), txt.column("id").to_pylist()):
        for r, i in enumerate(ranked):
            fused[i] = fused.get(i, 0.0) + 1 / (30 + r + 1)
    best = sorted(fused, key=lambda i: -fused[i])[:k]
    assert sorted(got.column("id").to_pylist()) == sorted(best)
    ids = got.column("id").to_pylist()
    np.testing.assert_allclose(got.column("_hybrid_score").to_numpy(), [fused[i] for i in ids])
    joined = ctx.sql(
        "SELECT count(*) AS n FROM lance_hybrid_search('items', 'emb', [0.1, 0.2, 0.3, 0.4], "
        "'txt', 'w1', 8) h JOIN items i ON h.id = i.id WHERE h._score IS NOT NULL"
    ).to_arrow_table()
    assert 0 < joined.column("n")[0].as_py() <= 8


def test_filters_over_a_search_table_equal_plain_datafusion(setup: tuple) -> None:
    """Filters DataFusion pushes into the search table run with SQL semantics (NULL scores)."""
    ctx, ns, _, _ = setup
    call = (
        "lance_hybrid_search('items', 'emb', [0.1, 0.2, 0.3, 0.4], 'txt', 'w4', 30, NULL, "
        "{'use_index': false})"
    )
    plain = datafusion.SessionContext()
    plain.from_arrow(ns.search(vector=("emb", Q), text=("txt", "w4"), k=30, use_index=False), "h")
    for where in (
        "_distance NOT IN (1.0, 2.0)",
        "NOT (_score IN (0.5))",
        "_score > 0 OR _distance < 0.05",
        "region IN ('r1', 'r2') AND _hybrid_score > 0.01",
    ):
        sql = "SELECT id, _distance, _score FROM {t} WHERE " + where + " ORDER BY id"
        got = ctx.sql(sql.format(t=call)).to_arrow_table()
        want = plain.sql(sql.format(t="h")).to_arrow_table()
        assert got.to_pylist() == want.to_pylist(), where
    count = ctx.sql(f"SELECT count(*) AS n FROM {call}").to_arrow_table()
    assert count.column("n")[0].as_py() == 30
