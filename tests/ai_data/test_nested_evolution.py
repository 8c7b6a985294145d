"""Nested schema evolution of a namespace, against pylance doing the same on one dataset.

The namespace spreads the rows over partition tables written before and after
each change; pylance's single dataset is the oracle for every read.
"""

from __future__ import annotations

import copy

import lance
import pyarrow as pa
import pytest

from lance_sql import PartitionedNamespace, SessionContext, SpecError
from lance_sql.spec.arrow_json import field_id_of, iter_fields

UP = pa.struct([pa.field("basic", pa.struct([pa.field("age", pa.int64())]))])
TAGS = pa.list_(pa.struct([pa.field("k", pa.string())]))
SCHEMA = pa.schema(
    [("id", pa.int64()), ("region", pa.string()), ("user_profile", UP), ("tags", TAGS)]
)
ADD_COUNTRY = pa.field(
    "user_profile", pa.struct([pa.field("basic", pa.struct([pa.field("country", pa.string())]))])
)
ADD_W = pa.field("tags", pa.list_(pa.struct([pa.field("w", pa.float32())])))


def _plain(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.type) for f in schema])


class Both:
    """One namespace and one pylance dataset given the same operations."""

    def __init__(self, tmp_path):
        self.ns = PartitionedNamespace.create(
            tmp_path / "ns", SCHEMA, [{"source": "region", "transform": "identity"}]
        )
        self.ds = lance.write_dataset(SCHEMA.empty_table(), tmp_path / "oracle")
        self.root = str(tmp_path / "ns")

    def append(self, rows: list[dict]) -> None:
        table = pa.Table.from_pylist(rows, schema=_plain(self.ns.schema))
        self.ns.append(table)
        self.ds = lance.write_dataset(table, self.ds.uri, mode="append")

    def add(self, fields: list[pa.Field]) -> None:
        self.ns.add_columns(fields)
        self.ds.add_columns(pa.schema(fields))

    def drop(self, paths: list[str]) -> None:
        self.ns.drop_columns(paths)
        self.ds.drop_columns(paths)

    def rename(self, path: str, name: str) -> None:
        self.ns.rename_column(path, name)
        self.ds.alter_columns({"path": path, "name": name})

    def check(self) -> None:
        expected = lance.dataset(self.ds.uri).to_table().sort_by("id")
        got = self.ns.refresh().to_table().sort_by("id")
        assert _plain(got.schema) == _plain(expected.schema)
        assert got.to_pylist() == expected.to_pylist()
        ctx = SessionContext()
        ctx.register_namespace("e", self.root)
        sql = ctx.sql("SELECT * FROM e ORDER BY id").to_arrow_table()
        assert sql.to_pylist() == expected.to_pylist()


def test_add_fields_inside_structs_and_lists_of_structs(tmp_path):
    both = Both(tmp_path)
    both.append(
        [{"id": 1, "region": "eu", "user_profile": {"basic": {"age": 1}}, "tags": [{"k": "a"}]}]
    )
    last = max(field_id_of(f) for _, f in iter_fields(both.ns.schema))
    both.add([ADD_COUNTRY, ADD_W])
    ids = {p: field_id_of(f) for p, f in iter_fields(both.ns.schema)}
    assert ids["user_profile.basic.country"] == last + 1  # assigned by the namespace
    assert ids["tags.item.w"] == last + 2
    both.check()  # the old partition table reads the new fields as NULL
    both.append(  # the same (old) partition table and a new one, with the wider structs
        [
            {"id": 2, "region": "eu", "user_profile": {"basic": {"age": 4, "country": "FR"}},
             "tags": [{"k": "b", "w": 1.5}]},
            {"id": 3, "region": "us", "user_profile": {"basic": {"age": 5, "country": "DE"}},
             "tags": None},
        ]
    )  # fmt: skip
    both.check()
    ctx = SessionContext()
    ctx.register_namespace("e", both.root)
    ctx.sql(
        "INSERT INTO e SELECT 4 AS id, 'eu' AS region, "
        "named_struct('basic', named_struct('age', 6, 'country', 'IT')) AS user_profile, "
        "[named_struct('k', 'c', 'w', arrow_cast(2.5, 'Float32'))] AS tags"
    ).collect()
    got = ctx.sql("SELECT user_profile['basic']['country'] AS c FROM e WHERE id = 4").to_pylist()
    assert got == [{"c": "IT"}]


def _without_age(rows: list[dict]) -> list[dict]:
    rows = copy.deepcopy(rows)
    for r in rows:
        if r["user_profile"] is not None:
            r["user_profile"]["basic"].pop("age")
    return rows


def test_drop_a_nested_field(tmp_path):
    # pylance 14 reads a struct whose remaining fields were all added later as NULL
    # after such a drop (row 1 below); the rows before the drop, projected, are the oracle.
    both = Both(tmp_path)
    both.append([{"id": 1, "region": "eu", "user_profile": {"basic": {"age": 1}}, "tags": None}])
    both.add([ADD_COUNTRY])
    both.append([{"id": 2, "region": "eu", "user_profile": {"basic": {"age": 2, "country": "FR"}}}])
    before = both.ns.to_table().sort_by("id").to_pylist()
    both.drop(["user_profile.basic.age"])
    assert both.ns.to_table().sort_by("id").to_pylist() == _without_age(before)
    both.append([{"id": 3, "region": "us", "user_profile": {"basic": {"country": "IT"}}}])
    got = both.ns.to_table().sort_by("id").to_pylist()
    assert got[:2] == _without_age(before)
    assert got[2]["user_profile"] == {"basic": {"country": "IT"}}
    ctx = SessionContext()
    ctx.register_namespace("e", both.root)
    assert ctx.sql("SELECT * FROM e ORDER BY id").to_pylist() == got
    with pytest.raises(SpecError, match="dropped"):  # old tables still hold the old values
        both.ns.add_columns(
            [
                pa.field(
                    "user_profile",
                    pa.struct([pa.field("basic", pa.struct([("age", pa.string())]))]),
                )
            ]
        )


def test_rename_nested_fields_reads_old_and_new_partition_tables(tmp_path):
    both = Both(tmp_path)
    both.append(
        [
            {"id": 1, "region": "eu", "user_profile": {"basic": {"age": 1}}, "tags": [{"k": "a"}]},
            {"id": 2, "region": "us", "user_profile": None, "tags": [{"k": "b"}, None]},
        ]
    )
    ids = {p: field_id_of(f) for p, f in iter_fields(both.ns.schema)}
    both.rename("user_profile.basic.age", "years")
    both.rename("tags.item.k", "key")
    after = {p: field_id_of(f) for p, f in iter_fields(both.ns.schema)}
    assert after["user_profile.basic.years"] == ids["user_profile.basic.age"]  # same id
    assert after["tags.item.key"] == ids["tags.item.k"]
    both.check()  # old tables hold the old names
    both.append(  # an old table (renamed first) and a new one
        [
            {"id": 3, "region": "eu", "user_profile": {"basic": {"years": 3}}, "tags": []},
            {"id": 4, "region": "jp", "user_profile": {"basic": {"years": 4}},
             "tags": [{"key": "d"}]},
        ]
    )  # fmt: skip
    both.check()
    both.rename("user_profile.basic", "core")  # a renamed parent of a renamed field
    both.check()
    ctx = SessionContext()
    ctx.register_namespace("e", both.root)
    got = ctx.sql(
        "SELECT id FROM e WHERE user_profile['core']['years'] >= 1 ORDER BY id"
    ).to_pylist()
    assert got == [{"id": 1}, {"id": 3}, {"id": 4}]
    ctx.sql(  # SQL INSERT into an old table (its fields still have the first names)
        "INSERT INTO e SELECT 5 AS id, 'us' AS region, "
        "named_struct('core', named_struct('years', 5)) AS user_profile, "
        "[named_struct('key', 'e')] AS tags"
    ).collect()
    row = {"id": 5, "region": "us", "user_profile": {"core": {"years": 5}}, "tags": [{"key": "e"}]}
    both.ds = lance.write_dataset(
        pa.Table.from_pylist([row], schema=both.ds.schema), both.ds.uri, mode="append"
    )
    both.check()
    with pytest.raises(SpecError, match="cannot be used again"):  # old tables hold 'age'
        both.ns.rename_column("user_profile.core.years", "age")
    with pytest.raises(SpecError, match="cannot be added again"):
        both.ns.add_columns(
            [
                pa.field(
                    "user_profile", pa.struct([pa.field("core", pa.struct([("age", pa.int64())]))])
                )
            ]
        )
    with pytest.raises(SpecError, match="already exists"):
        both.ns.rename_column("user_profile.core.years", "years")
    with pytest.raises(SpecError, match="no nested field"):
        both.ns.rename_column("user_profile.core.nope", "x")


def test_row_operations_after_a_nested_rename_match_pylance(tmp_path):
    # the old partition tables hold 'age' and 'k': a filter on the new names must find rows
    both = Both(tmp_path)
    both.append(
        [
            {"id": i, "region": r, "user_profile": {"basic": {"age": i}}, "tags": [{"k": str(i)}]}
            for i, r in enumerate(["eu", "eu", "us", "us", "jp"])
        ]
    )
    both.rename("user_profile.basic.age", "years")
    both.rename("tags.item.k", "key")
    assert both.ns.delete("user_profile.basic.years = 1") == 1
    both.ds.delete("user_profile.basic.years = 1")
    both.check()
    assert both.ns.update({"id": "id + 10"}, where="user_profile.basic.years = 2") == 1
    both.ds.update({"id": "id + 10"}, where="user_profile.basic.years = 2")
    both.check()
    up = both.ns.schema.field("user_profile").type
    tags = both.ns.schema.field("tags").type
    src = pa.table(
        {
            "id": [3, 7],
            "region": ["us", "jp"],
            "user_profile": pa.array([{"basic": {"years": 30}}, {"basic": {"years": 7}}], up),
            "tags": pa.array([[{"key": "z"}], None], tags),
        }
    )
    got = both.ns.merge(src, ["id"], when_matched_update=True, when_not_matched_insert=True)
    assert (got.updated, got.inserted) == (1, 1)
    both.ds.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
        _plain_table(src)
    )
    both.check()
    both.ns.compact()
    both.check()


def _plain_table(t: pa.Table) -> pa.Table:
    return pa.Table.from_pylist(t.to_pylist(), schema=_plain(t.schema))


def test_nested_clashes_are_refused_typed(tmp_path):
    both = Both(tmp_path)
    with pytest.raises(SpecError, match="already exists"):
        both.ns.add_columns([pa.field("id", pa.int64())])
    with pytest.raises(SpecError, match="already exists"):
        both.ns.add_columns([pa.field("user_profile", UP)])  # nothing new inside
