"""Blob columns in plain datasets and namespaces: what SQL and the Python API return.

The oracle is pylance itself: a scan returns for a blob column exactly the
descriptor ``LanceDataset.to_table()`` returns, and ``take_blobs`` the bytes.
"""

from __future__ import annotations

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_sql
from lance_sql import PartitionedNamespace, SessionContext
from lance_sql.tables.blob_columns import V2_DESCRIPTOR

SPEC = [{"source": "region", "transform": "identity"}]


def _payload(i: int) -> bytes:
    return bytes([i % 251]) * (1000 + i)


def _v2_schema() -> pa.Schema:
    return pa.schema([("id", pa.int64()), ("region", pa.string()), lance.blob_field("payload")])


def _legacy_schema() -> pa.Schema:
    blob_md = {"lance-encoding:blob": "true"}
    return pa.schema(
        [
            ("id", pa.int64()),
            ("region", pa.string()),
            pa.field("payload", pa.large_binary(), metadata=blob_md),
        ]
    )


def _rows(schema: pa.Schema, ids: list[int], region: str) -> pa.Table:
    data = [_payload(i) for i in ids]
    payload = (
        lance.blob_array(data)
        if isinstance(schema.field("payload").type, pa.ExtensionType)
        else data
    )
    return pa.table({"id": ids, "region": [region] * len(ids), "payload": payload}, schema=schema)


def test_sql_over_a_plain_dataset_returns_pylance_descriptors(tmp_path):
    schema = pa.schema([("id", pa.int64()), lance.blob_field("payload")])
    table = pa.table({"id": [1, 2], "payload": lance.blob_array([_payload(1), _payload(2)])})
    ds = lance.write_dataset(table.cast(schema), tmp_path / "b")
    expected = ds.to_table().sort_by("id")
    ctx = SessionContext()
    ctx.register_lance("b", str(tmp_path / "b"))
    got = ctx.sql("SELECT * FROM b ORDER BY id").to_arrow_table()
    assert got.column("payload").type == expected.column("payload").type
    assert got.to_pylist() == expected.to_pylist()
    kept = ctx.sql("SELECT id FROM b WHERE payload['size'] > 1001").to_arrow_table()
    assert kept.column("id").to_pylist() == [2]


def test_open_metadata_of_a_blob_dataset(tmp_path):
    schema = pa.schema([("id", pa.int64()), lance.blob_field("payload")])
    lance.write_dataset(
        pa.table({"id": [1], "payload": lance.blob_array([b"x"])}).cast(schema), tmp_path / "b"
    )
    assert lance_sql.open_metadata(str(tmp_path / "b")).schema.names == ["id", "payload"]


@pytest.mark.parametrize(
    ("form", "file_version"), [("v2", None), ("legacy", None), ("v2", "2.0"), ("legacy", "2.1")]
)
def test_blob_namespace_lifecycle_matches_pylance(tmp_path, form, file_version):
    schema = _v2_schema() if form == "v2" else _legacy_schema()
    ns = PartitionedNamespace.create(
        tmp_path / "ns", schema, SPEC, data_storage_version=file_version
    )
    ns.append(_rows(schema, [1, 2], "eu"))
    ns.append(_rows(schema, [3], "eu"))  # a second append to the same table
    ns.append(_rows(schema, [4, 5], "us"))
    assert ns.count_rows() == 5
    ns.delete("id = 2")

    def expected() -> pa.Table:
        parts = [lance.dataset(e.uri, version=e.read_version).to_table() for e in ns.tables()]
        return pa.concat_tables(parts).sort_by("id")

    got = ns.to_table().sort_by("id")
    assert got.schema.field("payload").type == expected().schema.field("payload").type
    assert got.to_pylist() == expected().to_pylist()
    ctx = SessionContext()
    ctx.register_namespace("n", str(tmp_path / "ns"))
    sql = ctx.sql("SELECT * FROM n WHERE region = 'eu' ORDER BY id").to_arrow_table()
    assert sql.to_pylist() == [r for r in expected().to_pylist() if r["region"] == "eu"]
    plan = ctx.sql("EXPLAIN SELECT * FROM n WHERE region = 'eu'").to_pylist()
    assert "partition_tables=1/2" in "".join(r["plan"] for r in plan)  # pruned
    ns.compact()
    assert ns.to_table().sort_by("id").to_pylist() == expected().to_pylist()
    rows = ns.blob_rows(columns=["id"]).sort_by("id")
    assert rows.column("id").to_pylist() == [1, 3, 4, 5]
    handles = ns.take_blobs("payload", rows)
    assert [h.read() for h in handles] == [_payload(i) for i in [1, 3, 4, 5]]
    assert ns.read_blobs("payload", rows) == [_payload(i) for i in [1, 3, 4, 5]]


@pytest.mark.parametrize("form", ["v2", "legacy"])
def test_update_merge_and_overwrite_keep_or_replace_blob_bytes(tmp_path, form):
    schema = _v2_schema() if form == "v2" else _legacy_schema()
    ns = PartitionedNamespace.create(tmp_path / "ns", schema, SPEC)
    ns.append(_rows(schema, [1, 2], "eu"))
    ns.append(_rows(schema, [3], "us"))
    ns.update({"id": "id + 10"}, where="id = 1")  # the row is rewritten with its bytes
    ns.merge(  # 2 gets new bytes, 4 is inserted
        pa.table({"id": [2, 4], "region": ["eu", "us"], "payload": [b"new", b"four"]}),
        on=["id"],
        when_matched_update=True,
        when_not_matched_insert=True,
    )
    ns.overwrite(pa.table({"id": [3], "region": ["us"], "payload": [b"three"]}), where="id = 3")
    rows = ns.blob_rows(columns=["id"]).sort_by("id")
    assert rows.column("id").to_pylist() == [2, 3, 4, 11]
    assert ns.read_blobs("payload", rows) == [b"new", b"three", b"four", _payload(1)]
    ctx = SessionContext()
    ctx.register_namespace("n", str(tmp_path / "ns"))
    sizes = ctx.sql("SELECT id, payload['size'] AS s FROM n ORDER BY id").to_pylist()
    assert [r["s"] for r in sizes] == [3, 5, 4, len(_payload(1))]
    ctx.sql("UPDATE n SET id = 12 WHERE id = 11").collect()
    ns.refresh()  # the SQL statement committed through its own view
    assert ns.read_blobs("payload", ns.blob_rows(pc.field("id") == 12)) == [_payload(1)]


@pytest.mark.parametrize("form", ["v2", "legacy"])
def test_add_a_blob_column_to_a_namespace(tmp_path, form):
    base = pa.schema([("id", pa.int64()), ("region", pa.string())])
    ns = PartitionedNamespace.create(tmp_path / "ns", base, SPEC)
    ns.append(pa.table({"id": [1], "region": ["eu"]}))
    ns.add_columns([(_v2_schema() if form == "v2" else _legacy_schema()).field("payload")])
    ns.append(_rows(_legacy_schema(), [2], "eu"))  # the old table gains the column
    ns.append(_rows(_legacy_schema(), [3], "us"))
    got = ns.to_table().sort_by("id")
    assert got.column("payload").type == V2_DESCRIPTOR
    assert got.column("payload").to_pylist()[0] is None  # written before the column existed
    rows = ns.blob_rows(columns=["id"]).sort_by("id")
    assert ns.read_blobs("payload", rows) == [None, _payload(2), _payload(3)]


def test_blob_rows_after_schema_evolution_read_old_and_new_tables(tmp_path):
    # older partition tables lack an added column and hold a nested field's old name
    up = pa.struct([pa.field("basic", pa.struct([pa.field("age", pa.int64())]))])
    schema = pa.schema([*_v2_schema(), pa.field("user_profile", up)])
    ns = PartitionedNamespace.create(tmp_path / "ns", schema, SPEC, data_storage_version="2.2")

    def rows(ids: list[int], region: str, **extra: list) -> pa.Table:
        t = _rows(_v2_schema(), ids, region)
        up = ns.schema.field("user_profile").type  # its nested name: 'age' or 'years'
        profile = [{"basic": {up.field(0).type.field(0).name: i}} for i in ids]
        t = t.append_column("user_profile", pa.array(profile, up))
        for name, values in extra.items():
            t = t.append_column(name, pa.array(values, ns.schema.field(name).type))
        return t

    ns.append(rows([1, 2], "eu"))
    ns.append(rows([3], "us"))
    ns.add_columns([pa.field("score", pa.float64())])
    ns.rename_column("user_profile.basic.age", "years")
    ns.append(rows([4], "eu", score=[4.5]))  # an old table
    ns.append(rows([5, 6], "jp", score=[5.5, 6.5]))  # a new one
    ns.delete("id = 2")
    expected = [
        {"id": i, "score": s, "user_profile": {"basic": {"years": i}}}
        for i, s in [(1, None), (3, None), (4, 4.5), (5, 5.5), (6, 6.5)]
    ]
    cols = ["id", "score", "user_profile"]
    got = ns.blob_rows(columns=cols).sort_by("id")
    assert got.select(cols).to_pylist() == expected
    assert ns.read_blobs("payload", got) == [_payload(r["id"]) for r in expected]
    assert [h.read() for h in ns.take_blobs("payload", got)] == ns.read_blobs("payload", got)
    years = pc.field("user_profile", "basic", "years")
    picked = ns.blob_rows((years >= 3) & (years <= 5), columns=["id"]).sort_by("id")
    assert picked.column("id").to_pylist() == [3, 4, 5]
    assert ns.read_blobs("payload", picked) == [_payload(i) for i in [3, 4, 5]]
    scored = ns.blob_rows(pc.field("score").is_null(), columns=["id"]).sort_by("id")
    assert scored.column("id").to_pylist() == [1, 3]
    assert ns.read_blobs("payload", scored) == [_payload(1), _payload(3)]
