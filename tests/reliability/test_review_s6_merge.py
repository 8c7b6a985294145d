"""Adversarial review (session 6): ``ns.merge`` / ``ns.update`` / deletes against DuckDB's
MERGE INTO, followed by queries that column bounds may prune (rows moving between
partitions and outside their table's old bounds, NULL keys, NULL-only columns).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

import duckdb
import pyarrow as pa
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import lance_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SPEC = [{"field_id": "k", "source": "k", "transform": {"type": "identity"}}]
SCHEMA = pa.schema([("k", pa.int64()), ("id", pa.int64()), ("x", pa.int64()), ("s", pa.string())])
LONG = "q" * 32

ROW = st.fixed_dictionaries(
    {
        "k": st.sampled_from([0, 1, 2]),
        "id": st.one_of(st.none(), st.integers(0, 6)),
        "x": st.one_of(st.none(), st.integers(-3, 3), st.just(1000)),
        "s": st.sampled_from([None, "a", LONG, LONG + "a", LONG + "b"]),
    }
)
QUERIES = [
    "x = 1000",
    "x < -2",
    "x > 2",
    "x IS NULL",
    "x IS NOT NULL",
    "s IS NULL",
    f"s = '{LONG}b'",
    f"s > '{LONG}a'",
    f"s LIKE '{LONG}%'",
    "id = 3",
    "k = 1 AND x = 0",
]


def _model(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _merge_oracle(target: pa.Table, source: pa.Table, delete_cond: str) -> pa.Table:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (k BIGINT, id BIGINT, x BIGINT, s VARCHAR)")
    con.register("tgt", target)
    con.register("src", source)
    con.execute("INSERT INTO t SELECT * FROM tgt")
    con.execute(
        "MERGE INTO t USING src ON t.id = src.id "
        f"WHEN MATCHED AND ({delete_cond}) THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET k = src.k, x = src.x, s = src.s "
        "WHEN NOT MATCHED THEN INSERT (k, id, x, s) VALUES (src.k, src.id, src.x, src.s)"
    )
    return con.execute("SELECT * FROM t").to_arrow_table()


def _answers(root: str, model: pa.Table) -> None:
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    con = duckdb.connect()
    con.register("m", model)
    for where in QUERIES:
        got = ctx.sql(f"SELECT k, id, x, s FROM t WHERE {where}").to_arrow_table().to_pylist()
        want = con.execute(f"SELECT k, id, x, s FROM m WHERE {where}").fetchall()
        assert sorted(map(repr, (tuple(r.values()) for r in got))) == sorted(map(repr, want)), where


@settings(
    max_examples=int(os.environ.get("LANCE_SQL_REVIEW_EXAMPLES", "5")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # each example costs ~2 s
)
@given(
    st.lists(ROW, min_size=1, max_size=8),
    st.lists(ROW, min_size=0, max_size=5, unique_by=lambda r: r["id"]),
    st.sampled_from(["src.x = 1000", "t.s IS NULL", "FALSE", "src.x < t.x"]),
)
def test_merge_then_pruned_queries(
    target: list[dict[str, Any]], source: list[dict[str, Any]], delete_cond: str
) -> None:
    source = [r for r in source if r["id"] is not None] + [r for r in source if r["id"] is None]
    root = tempfile.mkdtemp(prefix="lance-sql-review-merge-")
    try:
        ns = PartitionedNamespace.create(root, SCHEMA, SPEC)
        ns.append(_model(target))
        _answers(root, _model(target))  # bounds written by the append
        cond = delete_cond.replace("src.", "source.").replace("t.", "target.")
        ns.merge(
            _model(source),
            on=["id"],
            when_matched_delete=cond if cond != "FALSE" else False,
            when_matched_update=True,
            when_not_matched_insert=True,
        )
        model = _merge_oracle(_model(target), _model(source), delete_cond)
        _answers(root, model)
        ns.update({"x": "1000", "s": f"'{LONG}b'"}, where="id = 3")
        con = duckdb.connect()
        con.register("m", model)
        model = con.execute(
            f"SELECT k, id, CASE WHEN id = 3 THEN 1000 ELSE x END AS x, "
            f"CASE WHEN id = 3 THEN '{LONG}b' ELSE s END AS s FROM m"
        ).to_arrow_table()
        _answers(root, model)
    finally:
        shutil.rmtree(root, ignore_errors=True)
