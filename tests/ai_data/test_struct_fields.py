"""A struct carrying fields the table lacks is refused alike by Python and SQL writes."""

from __future__ import annotations

import lance
import pyarrow as pa
import pytest

from lance_sql import PartitionedNamespace, SchemaMismatchError, SessionContext

PROFILE = pa.struct([pa.field("basic", pa.struct([pa.field("age", pa.int64())]))])
TAGS = pa.list_(pa.struct([pa.field("k", pa.string())]))
SCHEMA = pa.schema(
    [("id", pa.int64()), ("region", pa.string()), ("user_profile", PROFILE), ("tags", TAGS)]
)
WIDE_PROFILE = "named_struct('basic', named_struct('age', 4, 'country', 'FR'))"
PROFILE_SQL = "named_struct('basic', named_struct('age', 4))"


@pytest.fixture
def ctx(tmp_path):
    PartitionedNamespace.create(
        tmp_path / "ns", SCHEMA, [{"source": "region", "transform": "identity"}]
    )
    lance.write_dataset(SCHEMA.empty_table(), tmp_path / "plain")
    ctx = SessionContext()
    ctx.register_namespace("e", str(tmp_path / "ns"))
    ctx.register_lance("p", str(tmp_path / "plain"))
    return ctx


def test_python_append_refuses_a_wider_struct(tmp_path):
    ns = PartitionedNamespace.create(
        tmp_path / "ns", SCHEMA, [{"source": "region", "transform": "identity"}]
    )
    row = {"id": 2, "region": "eu", "user_profile": {"basic": {"age": 4, "country": "FR"}}}
    with pytest.raises(SchemaMismatchError, match="user_profile"):
        ns.append(pa.Table.from_pylist([row]))
    assert ns.count_rows() == 0


@pytest.mark.parametrize("table", ["e", "p"])
@pytest.mark.parametrize(
    ("profile", "tags", "field"),
    [
        (WIDE_PROFILE, "NULL", "basic.country"),
        (PROFILE_SQL, "[named_struct('k', 'a', 'w', 1.5)]", "Cannot automatically convert"),
    ],
)
def test_sql_insert_refuses_a_wider_struct(ctx, table, profile, tags, field):
    sql = (
        f"INSERT INTO {table} SELECT 2 AS id, 'eu' AS region, {profile} AS user_profile, "
        f"{tags} AS tags"
    )
    with pytest.raises(SchemaMismatchError, match=field.replace("[", r"\[").replace("]", r"\]")):
        ctx.sql(sql).collect()
    assert ctx.sql(f"SELECT count(*) AS n FROM {table}").to_pylist() == [{"n": 0}]


@pytest.mark.parametrize("table", ["e", "p"])
def test_sql_insert_of_the_table_struct_still_works(ctx, table):
    ctx.sql(
        f"INSERT INTO {table} SELECT 2 AS id, 'eu' AS region, {PROFILE_SQL} AS user_profile, "
        "[named_struct('k', 'a')] AS tags"
    ).collect()
    got = ctx.sql(f"SELECT user_profile, tags FROM {table}").to_pylist()
    assert got == [{"user_profile": {"basic": {"age": 4}}, "tags": [{"k": "a"}]}]


def test_update_refuses_a_wider_struct_and_takes_the_table_struct(tmp_path):
    ns = PartitionedNamespace.create(
        tmp_path / "ns", SCHEMA, [{"source": "region", "transform": "identity"}]
    )
    ns.append(pa.Table.from_pylist([{"id": 1, "region": "eu"}], schema=SCHEMA))
    with pytest.raises(SchemaMismatchError, match=r"basic\.country"):
        ns.update({"user_profile": WIDE_PROFILE})
    ns.update({"user_profile": PROFILE_SQL})
    assert ns.to_table().column("user_profile").to_pylist() == [{"basic": {"age": 4}}]
