"""Search over namespaces against numpy brute force and plain DataFusion filters.

Exact mode (tables without a vector index, or ``use_index=False``) must
return the brute-force k nearest rows among the rows the ``where`` filter
selects (computed by plain DataFusion over the namespace's rows), with the
same distances; an indexed search (prefilter) must never return a row
outside ``where``. Full text equals a plain term match.
"""

from __future__ import annotations

import re
from pathlib import Path

import datafusion
import numpy as np
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.planning.search_table import SearchError

DIM = 8
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("region", pa.string()),
        ("g", pa.int64()),
        ("txt", pa.string()),
        ("emb", pa.list_(pa.float32(), DIM)),
    ]
)
SPEC = [{"field_id": "region", "source": "region", "transform": {"type": "identity"}}]
WORDS = ["red", "blue", "green", "apple", "sky", "car", "tree"]


def _rows(rng: np.random.Generator, start: int, n: int, regions: list[str]) -> pa.Table:
    v = rng.random((n, DIM), dtype=np.float32)
    nulls = rng.random(n) < 0.1
    vectors = [None if z else list(map(float, x)) for z, x in zip(nulls, v, strict=True)]
    emb = pa.array(vectors, SCHEMA[4].type)
    return pa.table(
        {
            "id": np.arange(start, start + n),
            "region": [regions[i % len(regions)] for i in range(n)],
            "g": rng.integers(0, 10, n),
            "txt": [" ".join(rng.choice(WORDS, 3)) for _ in range(n)],
            "emb": emb,
        },
        schema=SCHEMA,
    )


def _namespace(tmp_path: Path, seed: int, index: bool = True) -> lance_sql.PartitionedNamespace:
    """Two spec versions, NULL vectors, deletions, small unindexed and appended-after tables."""
    rng = np.random.default_rng(seed)
    ns = lance_sql.PartitionedNamespace.create(tmp_path / f"ns{seed}", SCHEMA, SPEC)
    ns.append(_rows(rng, 0, 1200, ["a", "b", "c"]))
    ns.append(_rows(rng, 5000, 40, ["tiny"]))  # under min_rows: no vector index
    if index:
        ns.create_index("emb", "IVF_FLAT")
        ns.create_index("txt", "INVERTED")
    ns.append(_rows(rng, 10000, 300, ["a", "d"]))  # appended after the index
    ns.add_spec([{"source": "g", "transform": "identity"}])
    ns.append(_rows(rng, 20000, 600, ["b", "e"]))  # spec v2 tables
    ns.delete("id % 7 = 3")
    return ns


def _all_rows(ns: lance_sql.PartitionedNamespace) -> pa.Table:
    return ns.to_table(["id", "region", "g", "txt", "emb"])


def _matching_ids(rows: pa.Table, where: str | None) -> set[int]:
    ctx = datafusion.SessionContext()
    ctx.from_arrow(rows.select(["id", "region", "g", "txt"]), "t")
    sql = "SELECT id FROM t" + ("" if where is None else f" WHERE {where}")
    return set(ctx.sql(sql).to_arrow_table().column("id").to_pylist())


def _brute(rows: pa.Table, where: str | None, q: np.ndarray, k: int) -> tuple[list, np.ndarray]:
    keep = _matching_ids(rows, where)
    ids = rows.column("id").to_numpy()
    emb = rows.column("emb")
    sel = [i for i in range(rows.num_rows) if ids[i] in keep and emb[i].is_valid]
    vecs = np.array([emb[i].as_py() for i in sel], dtype=np.float32).reshape(-1, DIM)
    d = ((vecs - q) ** 2).sum(1) if sel else np.zeros(0)
    order = np.argsort(d, kind="stable")[:k]
    return [int(ids[sel[i]]) for i in order], d[order]


def _check_exact(got: pa.Table, rows: pa.Table, where: str | None, q: np.ndarray, k: int) -> None:
    want_ids, want_d = _brute(rows, where, q, k)
    assert got.num_rows == len(want_ids)
    np.testing.assert_allclose(got.column("_distance").to_numpy(), want_d, rtol=1e-5, atol=1e-6)
    # each returned row is at its own true distance, so ties aside the rows are the same
    by_id = {int(i): j for j, i in enumerate(rows.column("id").to_pylist())}
    pairs = zip(got.column("id").to_pylist(), got.column("_distance").to_pylist(), strict=True)
    for i, dist in pairs:
        true = ((np.array(rows.column("emb")[by_id[i]].as_py()) - q) ** 2).sum()
        assert abs(true - dist) <= 1e-5 * max(1.0, true), (i, true, dist)
    assert set(got.column("id").to_pylist()) <= _matching_ids(rows, where)


WHERES = [None, "region = 'a'", "g > 4", "region IN ('b', 'tiny') AND g < 7", "region = 'zz'"]


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_modes_equal_brute_force(tmp_path: Path, seed: int) -> None:
    ns = _namespace(tmp_path, seed)
    plain = _namespace(tmp_path, seed + 100, index=False)
    rng = np.random.default_rng(seed + 7)
    for nsx, opts in ((ns, {"use_index": False}), (plain, {})):
        rows = _all_rows(nsx)
        for where in WHERES:
            for k in (1, 10, 100):
                q = rng.random(DIM, dtype=np.float32)
                got = nsx.search("emb", q, k=k, where=where, **opts)
                _check_exact(got, rows, where, q, k)
                report = nsx.search("emb", q, k=k, where=where, explain=True, **opts)
                assert report.indexed == 0


def test_k_larger_than_matching_rows_returns_them_all(tmp_path: Path) -> None:
    ns = _namespace(tmp_path, 3)
    rows = _all_rows(ns)
    q = np.full(DIM, 0.5, np.float32)
    got = ns.search("emb", q, k=100_000, where="region = 'tiny'", use_index=False)
    _check_exact(got, rows, "region = 'tiny'", q, 100_000)
    tiny = rows.filter(pa.compute.equal(rows.column("region"), "tiny"))
    assert got.num_rows == tiny.column("emb").drop_null().__len__() > 0


def test_prefilter_never_returns_rows_outside_where_with_indexes(tmp_path: Path) -> None:
    ns = _namespace(tmp_path, 4)
    rows = _all_rows(ns)
    rng = np.random.default_rng(4)
    for where in WHERES[1:]:
        ok = _matching_ids(rows, where)
        for _ in range(3):
            q = rng.random(DIM, dtype=np.float32)
            got = ns.search("emb", q, k=20, where=where)
            assert set(got.column("id").to_pylist()) <= ok
            post = ns.search("emb", q, k=20, where=where, prefilter=False)
            assert set(post.column("id").to_pylist()) <= ok
            assert post.num_rows <= 20


def test_indexed_search_reports_pruning_and_routes(tmp_path: Path) -> None:
    ns = _namespace(tmp_path, 5)
    q = np.zeros(DIM, np.float32)
    rep = ns.search("emb", q, k=5, where="region = 'a'", explain=True)
    assert rep.total == len(ns.tables())
    assert 0 < rep.searched < rep.total
    assert rep.indexed == rep.searched  # region 'a' tables hold 400+ rows: indexed
    assert all(t.filter.startswith("proven by partition values") for t in rep.tables)
    inside = ns.search("emb", q, k=5, where="region = 'a' AND g > 4", explain=True)
    assert inside.searched == rep.searched
    assert all(t.filter == "prefilter in Lance" for t in inside.tables)
    tiny = ns.search("emb", q, k=5, where="region = 'tiny'", explain=True)
    assert [t.mode for t in tiny.tables] == ["flat"]  # 40 rows: under min_rows
    assert "partitions searched 1/" in tiny.explain()


def test_renamed_filter_column_is_applied_exactly(tmp_path: Path) -> None:
    ns = _namespace(tmp_path, 6)
    ns.rename_column("g", "grp")
    rows = _all_rows_renamed = ns.to_table(["id", "region", "grp", "txt", "emb"])
    rows = _all_rows_renamed.rename_columns(["id", "region", "g", "txt", "emb"])
    q = np.full(DIM, 0.3, np.float32)
    got = ns.search("emb", q, k=15, where="grp >= 5")
    _check_exact(got, rows, "g >= 5", q, 15)
    rep = ns.search("emb", q, k=15, where="grp >= 5", explain=True)
    assert any("renamed" in t.filter for t in rep.tables)


def _term_ids(rows: pa.Table, term: str, where: str | None) -> set[int]:
    keep = _matching_ids(rows, where)
    out = set()
    for i, t in zip(rows.column("id").to_pylist(), rows.column("txt").to_pylist(), strict=True):
        if t is not None and term in re.findall(r"\w+", t.lower()) and i in keep:
            out.add(i)
    return out


def test_full_text_equals_term_match(tmp_path: Path) -> None:
    ns = _namespace(tmp_path, 7)
    rows = _all_rows(ns)
    for where in (None, "region = 'b'", "g < 3"):
        for term in ("apple", "sky"):
            got = ns.search("txt", term, k=100_000, where=where)
            assert set(got.column("id").to_pylist()) == _term_ids(rows, term, where)
            scores = got.column("_score").to_numpy()
            assert (np.diff(scores) <= 1e-6).all()  # best first
            top = ns.search("txt", term, k=5, where=where)
            assert top.num_rows == 5
            assert set(top.column("id").to_pylist()) <= _term_ids(rows, term, where)


def test_hybrid_rrf(tmp_path: Path) -> None:
    ns = _namespace(tmp_path, 8)
    q = np.full(DIM, 0.5, np.float32)
    k = 10
    vec = ns.search("emb", q, k=k, with_row_ids=True)
    txt = ns.search("txt", "car", k=k, with_row_ids=True)
    got = ns.search(vector=("emb", q), text=("txt", "car"), k=k, with_row_ids=True)
    want: dict[tuple[int, int], float] = {}
    for t in (vec, txt):
        for r, key in enumerate(zip(t["_part"].to_pylist(), t["_rowid"].to_pylist(), strict=True)):
            want[key] = want.get(key, 0.0) + 1 / (60 + r + 1)
    best = sorted(want, key=lambda x: (-want[x], x))[:k]
    assert list(zip(got["_part"].to_pylist(), got["_rowid"].to_pylist(), strict=True)) == best
    assert got["_hybrid_score"].to_pylist() == [want[x] for x in best]


def test_single_dataset_search_and_errors(tmp_path: Path) -> None:
    import lance

    rng = np.random.default_rng(9)
    t = _rows(rng, 0, 500, ["a", "b"])
    ds = lance.write_dataset(t, tmp_path / "one")
    q = rng.random(DIM, dtype=np.float32)
    for target in (ds, str(tmp_path / "one")):
        got = lance_sql.search(target, "emb", q, k=7, where="g = 2")
        _check_exact(got, t, "g = 2", q, 7)
    with pytest.raises(SearchError, match="holds 8"):
        lance_sql.search(ds, "emb", [1.0, 2.0], k=3)
    with pytest.raises(SearchError, match="no such column"):
        lance_sql.search(ds, "nope", q)
    with pytest.raises(SearchError, match="INVERTED"):
        lance_sql.search(ds, "txt", "apple")


def test_remembered_plans_follow_new_snapshots(tmp_path: Path) -> None:
    """Plans are remembered per __manifest version: a write's rows are searched at once."""
    ns = _namespace(tmp_path, 10)
    q = np.full(DIM, 0.25, np.float32)
    for where in (None, "region = 'a'", "region = 'new'"):
        before = ns.search("emb", q, k=3, where=where, columns=["id"])
        assert 99999 not in before.column("id").to_pylist()
    row = _rows(np.random.default_rng(0), 99999, 1, ["new"])
    row = row.set_column(4, "emb", pa.array([[0.25] * DIM], SCHEMA.field("emb").type))
    ns.append(row)
    for where in (None, "region = 'new'"):
        after = ns.search("emb", q, k=3, where=where, columns=["id"])
        assert after.column("id").to_pylist()[0] == 99999
    reopened = lance_sql.PartitionedNamespace.open(ns.root)
    assert reopened.search("emb", q, k=1, columns=["id"]).column("id").to_pylist() == [99999]


def test_repeated_one_table_searches_stay_exact(tmp_path: Path) -> None:
    """A search of one partition table, repeated, runs a call prepared once per snapshot:
    every query is still exact, typed like the first, and a bad query still a typed error."""
    ns = _namespace(tmp_path, 11)
    rows = _all_rows(ns)
    rng = np.random.default_rng(11)
    for where in ("region = 'a'", "region = 'a' AND g > 4", "region = 'tiny'"):
        assert ns.search("emb", np.zeros(DIM, np.float32), where=where, explain=True).searched == 1
        first = None
        for _ in range(4):
            q = rng.random(DIM, dtype=np.float32)
            got = ns.search("emb", q, k=10, where=where, use_index=False, columns=["id"])
            _check_exact(got, rows, where, q, 10)
            first = first or got.schema
            assert got.schema == first and got.column_names == ["id", "_distance"]
            every = ns.search("emb", q, k=3, where=where, use_index=False)
            assert every.schema.names == [*SCHEMA.names, "_distance"]
            assert every.schema.field("id").type == pa.int64()
        with pytest.raises(SearchError, match="holds 8"):
            ns.search("emb", [1.0, 2.0], k=10, where=where, use_index=False, columns=["id"])
    for _ in range(2):
        for term in ("apple", "sky", "car"):
            got = ns.search("txt", term, k=100_000, where="region = 'a'", columns=["id"])
            assert set(got.column("id").to_pylist()) == _term_ids(rows, term, "region = 'a'")
            assert got.column_names == ["id", "_score"]


def test_repeated_one_table_search_with_a_filter_applied_outside_lance(tmp_path: Path) -> None:
    """One table whose filter column was renamed: ranked flat, filtered exactly, each time."""
    ns = _namespace(tmp_path, 12)
    ns.rename_column("g", "grp")
    rows = ns.to_table(["id", "region", "grp", "txt", "emb"])
    rows = rows.rename_columns(["id", "region", "g", "txt", "emb"])
    where = "region = 'a' AND grp > 4"
    rep = ns.search("emb", np.zeros(DIM, np.float32), where=where, explain=True)
    assert rep.searched == 1
    assert "outside Lance" in rep.tables[0].filter
    rng = np.random.default_rng(12)
    for _ in range(3):
        q = rng.random(DIM, dtype=np.float32)
        got = ns.search("emb", q, k=8, where=where, columns=["id"])
        _check_exact(got, rows, "region = 'a' AND g > 4", q, 8)
        assert got.column_names == ["id", "_distance"]
