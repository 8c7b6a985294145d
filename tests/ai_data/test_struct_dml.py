"""SQL UPDATE and MERGE on a namespace with vector, struct, list<struct>, map and blob columns.

Each statement runs on the namespace; the same rows (without the blob column)
give the expected table: an UPDATE as the equivalent ``CASE WHEN`` SELECT in
plain DataFusion (its memory table's own UPDATE fails on a struct field in
WHERE), a MERGE in DuckDB. Every blob keeps its bytes.
"""

from __future__ import annotations

import datafusion
import duckdb
import pyarrow as pa
import pytest

from lance_sql import PartitionedNamespace, SchemaMismatchError, SessionContext
from tests.ai_columns import BLOB, add_ai_columns, add_blob_column, ai_fields, blob_field

N = 40


def _base() -> pa.Table:
    rows = pa.table(
        {
            "id": pa.array(range(N), pa.int64()),
            "region": pa.array([("eu", "us", "ap")[i % 3] for i in range(N)]),
            "x": pa.array([i * 10 for i in range(N)], pa.int64()),
        }
    )
    return add_ai_columns(rows, width=4)


@pytest.fixture
def setup(tmp_path):
    rows = _base()
    schema = pa.schema([*rows.schema, blob_field()])
    ns = PartitionedNamespace.create(
        tmp_path / "ns", schema, [{"source": "region", "transform": "identity"}]
    )
    ns.append(add_blob_column(rows))
    ctx = SessionContext()
    ctx.register_namespace("n", str(tmp_path / "ns"))
    # the rows as the namespace returns them: a NULL struct's fields are NULL there (plain
    # DataFusion's get_field returns whatever a memory table's child array holds)
    rows = _plain_types(_table(ctx))
    plain = datafusion.SessionContext()
    plain.register_record_batches("n", [rows.to_batches()])
    return ns, ctx, plain, rows


def _table(ctx, exclude=(BLOB,)) -> pa.Table:
    got = ctx.sql("SELECT * FROM n ORDER BY id").to_arrow_table()
    return got.drop_columns([c for c in exclude if c in got.column_names])


def _plain_types(table: pa.Table) -> pa.Table:
    """``table`` with the AI columns cast to the test's types (metadata-free)."""
    fields = {f.name: f for f in ai_fields(4)}
    return pa.Table.from_arrays(
        [
            c.cast(fields[n].type) if n in fields else c
            for n, c in zip(table.column_names, table.columns, strict=True)
        ],
        names=table.column_names,
    )


def _blobs(ns) -> dict[int, bytes | None]:
    ids = ns.blob_rows(None, columns=["id"]).sort_by("id")
    return dict(zip(ids.column("id").to_pylist(), ns.read_blobs(BLOB, ids), strict=True))


UPDATES = [  # (SET items, WHERE)
    ({"x": "1"}, "region = 'eu'"),
    ({"x": "x + id"}, "profile['a'] > 10"),
    ({"profile": "named_struct('a', 5, 'tags', ['q'])"}, "id % 4 = 1"),
    (
        {"profile": "named_struct('a', profile['a'] + 1, 'tags', profile['tags'])"},
        "region <> 'us'",
    ),
    ({"items": "[named_struct('k', 'z', 'w', 1.5)]", "attrs": "map(['u'], ['v'])"}, "id < 9"),
    ({"emb": "[1, 2, 3, 4]", "profile": "NULL"}, "region = 'ap'"),
    ({"region": "'us'", "profile": "named_struct('a', 0, 'tags', [])"}, "id = 3"),
]


def _expected(plain, sets: dict[str, str], where: str) -> pa.Table:
    """What UPDATE means, computed by plain DataFusion as a SELECT over the same rows."""
    names = plain.table("n").schema().names
    types = plain.sql(
        "SELECT " + ", ".join(f"arrow_typeof({c}) AS {c}" for c in names) + " FROM n LIMIT 1"
    ).to_pylist()[0]
    items = ", ".join(
        f"CASE WHEN ({where}) IS TRUE THEN arrow_cast(({sets[c]}), '{types[c]}') ELSE {c} END "
        f"AS {c}"
        if c in sets
        else c
        for c in names
    )
    return plain.sql(f"SELECT {items} FROM n ORDER BY id").to_arrow_table()


@pytest.mark.parametrize(("sets", "where"), UPDATES)
def test_update_matches_datafusion(setup, sets, where):
    ns, ctx, plain, _ = setup
    before = _blobs(ns)
    statement = f"UPDATE n SET {', '.join(f'{c} = {v}' for c, v in sets.items())} WHERE {where}"
    count = plain.sql(f"SELECT count(*) AS c FROM n WHERE {where}").to_pylist()[0]["c"]
    assert ctx.sql(statement).to_pylist() == [{"count": count}]
    assert _plain_types(_table(ctx)).to_pylist() == _expected(plain, sets, where).to_pylist()
    assert _blobs(ns) == before  # rewritten rows keep their bytes


def test_update_refuses_a_struct_wider_than_the_column(setup):
    ns, ctx, _, rows = setup
    with pytest.raises(SchemaMismatchError, match="extra"):
        ctx.sql(
            "UPDATE n SET profile = named_struct('a', 1, 'tags', [], 'extra', 2) WHERE id = 1"
        ).collect()
    assert ns.count_rows() == rows.num_rows
    assert _table(ctx).column("profile").equals(rows.column("profile"))


def test_setting_one_struct_field_is_refused_with_the_way_to_do_it(setup):
    _, ctx, _, _ = setup
    with pytest.raises(SchemaMismatchError, match="SET the whole struct"):
        ctx.sql("UPDATE n SET profile.a = 7 WHERE id = 1").collect()


def _duck(rows: pa.Table, source: pa.Table) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.register("rows_in", rows)
    con.register("src_in", source)
    con.execute("CREATE TABLE n AS SELECT * FROM rows_in")
    con.execute("CREATE TABLE src AS SELECT * FROM src_in")
    return con


MERGES = [
    "MERGE INTO n USING src ON n.id = src.id "
    "WHEN MATCHED THEN UPDATE SET x = src.x, profile = src.profile "
    "WHEN NOT MATCHED THEN INSERT (id, region, x, profile) "
    "VALUES (src.id, src.region, src.x, src.profile)",
    "MERGE INTO n USING src ON n.id = src.id "
    "WHEN MATCHED AND src.x > 0 THEN UPDATE SET items = src.items, attrs = src.attrs "
    "WHEN MATCHED THEN DELETE",
    "MERGE INTO n USING src ON n.id = src.id WHEN MATCHED THEN UPDATE SET region = src.region",
]


@pytest.mark.parametrize("statement", MERGES)
def test_merge_matches_duckdb(setup, statement):
    ns, ctx, _, rows = setup
    ids = [1, 2, 7, 30, 100, 101]
    source = add_ai_columns(
        pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "region": pa.array(["ap", "eu", "us", "eu", "us", "ap"]),
                "x": pa.array([5, -1, 7, 0, 9, 11], pa.int64()),
            }
        ),
        width=4,
        seed=3,
    )
    ctx.register_record_batches("src", [source.to_batches()])
    before = _blobs(ns)
    ctx.sql(statement).collect()
    con = _duck(rows, source)
    con.execute(statement)
    want = con.sql("SELECT * FROM n ORDER BY id").to_arrow_table()
    got = _plain_types(_table(ctx))
    assert got.to_pylist() == want.to_pylist()
    after = _blobs(ns)
    for i, data in after.items():  # kept rows keep their bytes, inserted rows have none
        assert data == before.get(i), i
