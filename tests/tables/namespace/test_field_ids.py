"""Issue #16: the namespace owns field ids; partition tables are read and written by them.

Every test here reproduces an item of the issue that gave a wrong row, a lost
row or a raw error before the fix (real pylance tables, no mocks).
"""

from __future__ import annotations

import json

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_sql
from lance_sql.errors import PartitionSchemaError, SchemaMismatchError, SpecError
from lance_sql.tables.namespace.field_map import LAST_FIELD_ID_KEY, NS_FIELD_ID_KEY
from lance_sql.tables.namespace.manifest_table import commit_rows
from lance_sql.tables.namespace.namespace import PartitionedNamespace

from .conftest import sorted_rows

SCHEMA = pa.schema([("id", pa.int64()), ("country", pa.utf8()), ("k", pa.int64())])
BUCKET_K = [{"source": "k", "transform": "bucket", "num_buckets": 2}]


def _pin_latest(ns: PartitionedNamespace, object_id: str) -> None:
    """Pin a partition table's latest version in __manifest (as a foreign write + pin would)."""
    ns.refresh()
    entry = next(e for e in ns.tables() if e.object_id == object_id)
    latest = lance.dataset(entry.uri).version
    rows = ns.snapshot.rows
    oids = rows.column("object_id").to_pylist()
    pins = rows.column("read_version").to_pylist()
    rv = [latest if o == object_id else v for o, v in zip(oids, pins, strict=True)]
    idx = rows.schema.get_field_index("read_version")
    rows = rows.set_column(idx, rows.schema.field(idx), pa.array(rv, pa.uint64()))
    commit_rows(ns.snapshot, rows)
    ns.refresh()


def _sql(ns: PartitionedNamespace, query: str) -> list[dict]:
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", ns.root)
    return ctx.sql(query).to_arrow_table().to_pylist()


def test_add_columns_after_drop_never_reuses_the_dropped_id(root: str) -> None:
    ns = PartitionedNamespace.create(root, SCHEMA, BUCKET_K)
    ns.append(pa.table({"id": [1], "country": ["US"], "k": [1]}))
    ns.drop_columns(["k"])  # the highest id (2): recorded, visible to any spec reader
    doc = json.loads(ns.snapshot.properties["schema"])
    assert doc["metadata"][LAST_FIELD_ID_KEY] == "2"
    ns.add_columns([pa.field("region", pa.utf8())])
    ids = {f.name: int(f.metadata[b"lance:field_id"]) for f in ns.schema}
    assert ids == {"id": 0, "country": 1, "region": 3}
    # The old k data must not show up as region.
    assert ns.to_table().to_pylist() == [{"id": 1, "country": "US", "region": None}]
    reopened = PartitionedNamespace.open(root)
    reopened.drop_columns(["region"])
    reopened.add_columns([pa.field("other", pa.int64())])
    assert int(reopened.schema.field("other").metadata[b"lance:field_id"]) == 4


def test_new_partition_tables_after_a_drop_are_read_by_namespace_id(root: str) -> None:
    ns = PartitionedNamespace.create(root, SCHEMA, BUCKET_K)
    ns.drop_columns(["country"])
    ns.add_columns([pa.field("country", pa.utf8())])  # id 3; Lance gives the table id 2
    ns.append(pa.table({"id": [1, 2], "country": ["US", "FR"], "k": [1, 2]}))
    for entry in ns.tables():
        meta = lance.dataset(entry.uri).schema.field("country").metadata
        assert meta[NS_FIELD_ID_KEY.encode()] == b"3"
    assert sorted_rows(ns.to_table()) == [
        {"id": 1, "k": 1, "country": "US"},
        {"id": 2, "k": 2, "country": "FR"},
    ]
    assert ns.to_table(filter=pc.field("country") == "US").column("id").to_pylist() == [1]
    assert _sql(ns, "SELECT id FROM t WHERE country = 'US'") == [{"id": 1}]


def test_pylance_drop_on_a_partition_table_then_append(root: str) -> None:
    ns = PartitionedNamespace.create(root, SCHEMA, BUCKET_K)
    ns.append(pa.table({"id": [1], "country": ["DE"], "k": [1]}))
    (entry,) = ns.tables()
    lance.dataset(entry.uri).drop_columns(["country"])  # another writer, with pylance
    _pin_latest(ns, entry.object_id)
    assert ns.to_table().to_pylist() == [{"id": 1, "country": None, "k": 1}]
    ns.append(pa.table({"id": [2], "country": ["US"], "k": [1]}))  # same partition
    assert len(ns.tables()) == 1
    assert sorted_rows(ns.to_table()) == [
        {"id": 1, "country": None, "k": 1},
        {"id": 2, "country": "US", "k": 1},
    ]
    assert ns.to_table(filter=pc.field("country") == "US").column("id").to_pylist() == [2]
    assert _sql(ns, "SELECT id FROM t WHERE country = 'US'") == [{"id": 2}]


def test_pylance_add_columns_after_drop_is_not_taken_for_a_namespace_column(root: str) -> None:
    ns = PartitionedNamespace.create(root, SCHEMA, BUCKET_K)
    ns.append(pa.table({"id": [1], "country": ["DE"], "k": [1]}))
    (entry,) = ns.tables()
    ds = lance.dataset(entry.uri)
    ds.drop_columns(["k"])
    ds.add_columns(pa.field("x", pa.int64()))  # Lance id 3 (or 2): not a namespace column
    _pin_latest(ns, entry.object_id)
    ns.add_columns([pa.field("y", pa.int64())])  # namespace id 3
    assert ns.to_table().to_pylist() == [{"id": 1, "country": "DE", "k": None, "y": None}]


def test_partition_table_of_another_type_is_refused_not_cast(root: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("d", pa.date32())])
    ns = PartitionedNamespace.create(root, schema, [{"source": "id", "transform": "identity"}])
    ns.append(pa.table({"id": [1], "d": pa.array([0], pa.date32())}))
    (entry,) = ns.tables()
    lance.write_dataset(pa.table({"id": [1], "d": ["1970-01-01"]}), entry.uri, mode="overwrite")
    _pin_latest(ns, entry.object_id)
    with pytest.raises(PartitionSchemaError) as err:
        ns.to_table()
    assert (err.value.table, err.value.column) == (entry.object_id, "d")
    assert (str(err.value.expected), str(err.value.actual)) == ("date32[day]", "string")
    assert "date32" in str(err.value) and "string" in str(err.value)
    with pytest.raises(PartitionSchemaError):
        ns.append(pa.table({"id": [1], "d": pa.array([1], pa.date32())}))
    assert isinstance(err.value, SchemaMismatchError)


def test_removed_source_of_the_current_spec_reads_null(root: str) -> None:
    ns = PartitionedNamespace.create(root, SCHEMA, [{"source": "country", "transform": "identity"}])
    ns.append(pa.table({"id": [1, 2], "country": ["US", "FR"], "k": [1, 2]}))
    ns.drop_columns(["country"])
    reopened = PartitionedNamespace.open(root)  # used to raise SpecError
    reopened.append(pa.table({"id": [3], "k": [3]}))
    values = sorted((e.values["country"] for e in reopened.tables()), key=lambda v: (v is None, v))
    assert values == ["FR", "US", None]
    reopened.add_columns([pa.field("country", pa.utf8())])  # a new column, a new id
    reopened.append(pa.table({"id": [4], "country": ["US"], "k": [4]}))
    # The partition values belong to the old column: pruning must not use them.
    plan = lance_sql.plan_scan(reopened, "country = 'US'")
    assert len(plan.partitions) == plan.total_partitions
    assert reopened.to_table(filter=pc.field("country") == "US").column("id").to_pylist() == [4]
    assert _sql(reopened, "SELECT id FROM t WHERE country = 'US'") == [{"id": 4}]
    assert _sql(reopened, "SELECT count(*) AS n FROM t WHERE country IS NULL") == [{"n": 3}]


def test_multi_bucket_after_bucket_gets_its_own_default_field_id(root: str) -> None:
    ns = PartitionedNamespace.create(root, SCHEMA, BUCKET_K)
    ns.append(pa.table({"id": [1, 2], "country": ["US", "FR"], "k": [1, 2]}))
    spec = ns.add_spec([{"sources": ["k"], "transform": "multi_bucket", "num_buckets": 2}])
    assert spec.fields[0].field_id not in {f.field_id for f in ns.specs[1].fields}
    ns.append(pa.table({"id": [3], "country": ["DE"], "k": [3]}))
    assert sorted(ns.to_table().column("id").to_pylist()) == [1, 2, 3]
    assert _sql(ns, "SELECT id FROM t WHERE k = 3") == [{"id": 3}]


def test_field_ids_need_not_be_dense_at_create(root: str) -> None:
    schema = pa.schema(
        [
            pa.field("a", pa.int64(), metadata={"lance:field_id": "4"}),
            pa.field("b", pa.utf8(), metadata={"lance:field_id": "9"}),
        ]
    )
    ns = PartitionedNamespace.create(root, schema, [{"source": "b", "transform": "identity"}])
    ns.append(pa.table({"a": [1, 2], "b": ["x", "y"]}))
    assert sorted_rows(ns.to_table(), "a") == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    assert _sql(ns, "SELECT a FROM t WHERE b = 'y'") == [{"a": 2}]


@pytest.mark.parametrize(
    "expression", ["sum(col0)", "count(*)", "row_number() OVER ()", "max(col0) % 3"]
)
def test_aggregate_and_window_expressions_refused_at_create(root: str, expression: str) -> None:
    field = {"sources": ["k"], "expression": expression, "result_type": pa.int64(),
             "field_id": "e"}  # fmt: skip
    with pytest.raises(SpecError) as err:
        PartitionedNamespace.create(root, SCHEMA, [field])
    assert err.value.key == "partition_spec_v1.fields[0].expression"
    ns = PartitionedNamespace.create(root, SCHEMA, BUCKET_K)
    with pytest.raises(SpecError):
        ns.add_spec([field])
