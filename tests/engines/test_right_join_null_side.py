"""A RIGHT JOIN of two bucketed namespaces with a WHERE on the null-supplying side.

``nullif(a.c0, 'é') < '日本'`` rejects NULL, so the RIGHT JOIN keeps only matched
rows: DuckDB and a Python brute force agree, and so does DataFusion's own INNER JOIN
form. Plain DataFusion 55 answers more rows for the RIGHT JOIN (apache/datafusion#21246:
its physical filter pushdown moves the WHERE through a projection holding ``a.c0``
and ``b.c0`` onto the ``FilterExec`` over ``b``, so NULL-extended rows survive).
lance-sql's storage-partitioned join names the two sides' columns apart and answers
right; without it lance-sql makes the join inner, as the WHERE allows, before DataFusion
plans it (engines/datafusion/outer_join_elimination.py). A WHERE that padded rows can pass
keeps the outer join, and with it DataFusion's error where its pushdown misfires (README).
The same shape over the Parquet batches of the original report runs when the shared
repro folder sits beside the clone.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path
from typing import Any

import datafusion
import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lance_sql

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("c0", pa.string()),
        pa.field("c2", pa.timestamp("us", tz="America/New_York")),
    ]
)
QUERY = (
    "SELECT count(*), count(t.y), min(t.x), max(t.x) FROM (SELECT a.id AS x, b.c0 AS y "
    "FROM n1 a RIGHT JOIN n0 b ON a.c0 = b.c0 AND a.c2 < b.c2 "
    "WHERE (nullif(a.c0, 'é') < '日本')) t WHERE t.x IS NOT NULL OR t.y IS NOT NULL"
)
ROWS_QUERY = (
    "SELECT a.id AS x, b.c0 AS y FROM n1 a RIGHT JOIN n0 b ON a.c0 = b.c0 AND a.c2 < b.c2 "
    "WHERE nullif(a.c0, 'é') < '日本'"
)
SPEC_N0 = [
    [{"source": "c0", "transform": "bucket", "num_buckets": 12}],
    [
        {"source": "c0", "transform": "bucket", "num_buckets": 3},
        {"source": "c0", "transform": "identity"},
    ],
]
SPEC_N1 = [
    [{"source": "c0", "transform": "bucket", "num_buckets": 12}],
    [{"source": "c0", "transform": "bucket", "num_buckets": 6}],
    [{"source": "c0", "transform": "bucket", "num_buckets": 3}],
]
T0 = dt.datetime(2024, 3, 10, 6, tzinfo=dt.timezone.utc)  # the DST change in New York


def _batch(rows: list[tuple[int, str | None, int]]) -> pa.Table:
    ids, keys, hours = zip(*rows, strict=True)
    stamps = [T0 + dt.timedelta(hours=h) for h in hours]
    return pa.table({"id": ids, "c0": keys, "c2": stamps}, schema=SCHEMA)


#: the minimized data: one batch per spec version. b's 'ß' matches no a row with an
#: earlier c2, so the RIGHT JOIN extends it with NULLs and the WHERE must drop it;
#: plain DataFusion tests the WHERE on b.c0 instead and keeps it
N1 = [_batch([(1, "ab", 0)]), _batch([(2, "é", 0)]), _batch([(3, "ß", 5)])]
N0 = [
    _batch([(10, "ab", 1), (11, "é", 1)]),
    _batch([(12, "ß", 1), (13, "日本", 9), (14, None, 1)]),
]


def _write(root: Path, specs: list[Any], batches: list[pa.Table]) -> str:
    ns = lance_sql.PartitionedNamespace.create(str(root), batches[0].schema, specs[0])
    for i, batch in enumerate(batches):
        if 0 < i < len(specs):
            ns.add_spec(specs[i])
        ns.append(batch)
    return str(root)


def _duck(tables: dict[str, pa.Table], sql: str) -> Counter[tuple[Any, ...]]:
    con = duckdb.connect()
    for name, table in tables.items():
        con.register(name, table)
    return Counter(con.sql(sql).fetchall())


def _lance(uris: dict[str, str], sql: str, *, spj: bool) -> Counter[tuple[Any, ...]]:
    ctx = lance_sql.SessionContext(spj=spj)
    for name, uri in uris.items():
        ctx.register_namespace(name, uri)
    table = ctx.sql(sql).to_arrow_table()
    return Counter(zip(*(c.to_pylist() for c in table.columns), strict=True))


@pytest.fixture(scope="module")
def minimal(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("right_join")
    return {"n0": _write(root / "n0", SPEC_N0, N0), "n1": _write(root / "n1", SPEC_N1, N1)}


def _tables() -> dict[str, pa.Table]:
    return {"n0": pa.concat_tables(N0), "n1": pa.concat_tables(N1)}


def test_minimal_right_join_where_on_null_side_defaults(minimal: dict[str, str]) -> None:
    want = _duck(_tables(), ROWS_QUERY)
    assert want == Counter({(1, "ab"): 1})  # brute force: only a matched, non-NULL a.c0
    assert _lance(minimal, ROWS_QUERY, spj=True) == want
    assert _lance(minimal, QUERY, spj=True) == _duck(_tables(), QUERY)


@pytest.mark.parametrize("spj", [True, False], ids=["spj", "no-spj"])
@pytest.mark.parametrize(
    "sql",
    [
        ROWS_QUERY,
        QUERY,
        # the same join written from the other side, and as a FULL JOIN
        "SELECT a.id AS x, b.c0 AS y FROM n0 b LEFT JOIN n1 a ON a.c0 = b.c0 AND a.c2 < b.c2 "
        "WHERE nullif(a.c0, 'é') < '日本'",
        "SELECT a.id AS x, b.c0 AS y, b.id AS z FROM n1 a FULL JOIN n0 b "
        "ON a.c0 = b.c0 AND a.c2 < b.c2 WHERE upper(a.c0) >= 'A'",
        "SELECT a.id AS x, b.c0 AS y FROM n1 a FULL JOIN n0 b ON a.c0 = b.c0 AND a.c2 < b.c2 "
        "WHERE left(a.c0, 1) <> 'z' AND NOT (b.id IS NULL)",
        # not NULL-rejecting: the RIGHT JOIN must stay (padded rows pass the WHERE)
        "SELECT a.id AS x, b.c0 AS y FROM n1 a RIGHT JOIN n0 b ON a.c0 = b.c0 AND a.c2 < b.c2 "
        "WHERE a.c0 IS NULL OR nullif(a.c0, 'é') < '日本'",
    ],
)
def test_outer_join_where_on_padded_side(minimal: dict[str, str], sql: str, spj: bool) -> None:
    """With SPJ or without (lance-sql makes such joins inner), DuckDB's rows."""
    assert _lance(minimal, sql, spj=spj) == _duck(_tables(), sql)


@pytest.mark.parametrize(
    ("sql", "made"),
    [
        (ROWS_QUERY, ["RIGHT JOIN -> INNER JOIN"]),
        (
            "SELECT a.id AS x, b.c0 AS y FROM n0 b LEFT JOIN n1 a ON a.c0 = b.c0 "
            "WHERE upper(a.c0) >= 'A'",
            ["LEFT JOIN -> INNER JOIN"],
        ),
        # padded rows pass the WHERE: the join stays outer and nothing is reported
        (
            "SELECT a.id AS x, b.c0 AS y FROM n1 a RIGHT JOIN n0 b ON a.c0 = b.c0 "
            "WHERE a.c0 IS NULL OR nullif(a.c0, 'é') < '日本'",
            [],
        ),
        (
            "SELECT a.id AS x, b.c0 AS y FROM n1 a RIGHT JOIN n0 b ON a.c0 = b.c0 "
            "WHERE a.id = 1 OR b.c0 LIKE 'a%'",
            [],
        ),
    ],
)
def test_outer_join_elimination_is_reported(
    minimal: dict[str, str], sql: str, made: list[str]
) -> None:
    """The pass lists the joins it made inner in ``lance_rewrite()`` and EXPLAIN."""
    ctx = lance_sql.SessionContext(spj=False)
    for name, uri in minimal.items():
        ctx.register_namespace(name, uri)
    assert ctx.sql(sql).lance_rewrite().outer_joins == made
    explain = "\n".join(ctx.sql(f"EXPLAIN {sql}").to_pydict()["plan"])
    lines = [f"outer join made inner by the WHERE: {m}" for m in made]
    assert [x for x in explain.splitlines() if x.startswith("outer join")] == lines
    assert _lance(minimal, sql, spj=False) == _duck(_tables(), sql)


def test_inner_join_only_where_the_schema_stays(tmp_path: Path) -> None:
    """A padded side with a NOT NULL column would change the output's nullability: the
    join stays outer (the answer and schema are plain DataFusion's)."""
    schema = pa.schema([pa.field("k", pa.string(), nullable=False), pa.field("v", pa.int64())])
    left = pa.table({"k": ["a", "b"], "v": [1, 2]}, schema=schema)
    right = pa.table({"k": ["a", "c"], "v": [3, 4]}, schema=schema)
    spec = [{"source": "k", "transform": "bucket", "num_buckets": 2}]
    uris = {
        "l": _write(tmp_path / "l", [spec], [left]),
        "r": _write(tmp_path / "r", [spec], [right]),
    }
    sql = "SELECT l.k, r.v FROM l RIGHT JOIN r ON l.k = r.k WHERE upper(l.k) = 'A'"
    plain = datafusion.SessionContext()
    plain.register_record_batches("l", [left.to_batches()])
    plain.register_record_batches("r", [right.to_batches()])
    want = plain.sql(sql).to_arrow_table()
    for spj in (True, False):
        ctx = lance_sql.SessionContext(spj=spj)
        for name, uri in uris.items():
            ctx.register_namespace(name, uri)
        got = ctx.sql(sql).to_arrow_table()
        assert got.schema == want.schema
        assert got.to_pylist() == want.to_pylist() == [{"k": "a", "v": 3}]


def _shared_repro() -> Path | None:
    """The shared repro folder beside the clone (CI), or beside a worktree's parent."""
    root = Path(__file__).parents[2]
    for base in (root / ".." / "shared", root / ".." / ".." / "shared"):
        folder = base / "repro" / "wrong-right-join"
        if (folder / "namespaces.json").is_file():
            return folder
    return None


def test_reported_parquet_batches_defaults_agree_with_duckdb(tmp_path: Path) -> None:
    folder = _shared_repro()
    if folder is None:
        pytest.skip("shared/repro/wrong-right-join is not beside this clone")
    meta = json.loads((folder / "namespaces.json").read_text())
    uris: dict[str, str] = {}
    tables: dict[str, pa.Table] = {}
    for name, m in meta.items():
        batches, versions = [], []
        for b in m["batches"]:
            batches.append(pq.read_table(folder / b["file"]))
            versions.append(b["spec_version"])
        ns = lance_sql.PartitionedNamespace.create(
            str(tmp_path / name), batches[0].schema, m["specs"][0]
        )
        have = 1
        for batch, version in zip(batches, versions, strict=True):
            while have < version:
                ns.add_spec(m["specs"][have])
                have += 1
            ns.append(batch)
        uris[name] = str(tmp_path / name)
        tables[name] = pa.concat_tables(batches)
    want = _duck(tables, QUERY)
    assert want == Counter({(77, 77, 55, 116): 1})  # a Python brute force agrees
    assert _lance(uris, QUERY, spj=True) == want
    inner = QUERY.replace("RIGHT JOIN", "JOIN")  # the WHERE rejects NULL: the same rows
    assert _lance(uris, inner, spj=False) == want
