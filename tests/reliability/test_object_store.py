"""Everything on S3-compatible storage: create, append, prune, storage-partitioned join.

The same Lance-style ``storage_options`` dict goes everywhere; pylance reads
it natively and :func:`lance_sql.format.storage.fsspec_options` translates it
for s3fs (``client_kwargs={"endpoint_url": ...}``, key/secret, region).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

import lance_sql
from lance_sql.format.metadata import open_metadata
from lance_sql.format.storage import fsspec_options, resolve
from lance_sql.tables.namespace.namespace import PartitionedNamespace


def test_fsspec_options_translate_lance_names():
    lance_style = {
        "aws_endpoint": "127.0.0.1:9000",
        "allow_http": "true",
        "aws_access_key_id": "AK",
        "aws_secret_access_key": "SK",
        "aws_region": "eu-west-1",
        "aws_session_token": "T",
    }
    got = fsspec_options("s3://b/x", lance_style)
    assert got == {
        "use_listings_cache": False,
        "key": "AK",
        "secret": "SK",
        "token": "T",
        "client_kwargs": {"endpoint_url": "http://127.0.0.1:9000", "region_name": "eu-west-1"},
    }
    # https unless allow_http; native s3fs arguments win; other schemes untouched
    assert fsspec_options("s3://b", {"endpoint": "h:1"})["client_kwargs"] == {
        "endpoint_url": "https://h:1"
    }
    native = {"key": "N", "aws_access_key_id": "AK", "client_kwargs": {"endpoint_url": "http://e"}}
    out = fsspec_options("s3://b", {**native, "aws_endpoint": "http://other"})
    assert out["key"] == "N" and out["client_kwargs"] == {"endpoint_url": "http://e"}
    assert out["use_listings_cache"] is False  # pylance writes behind fsspec's back
    assert fsspec_options("/tmp/x", {"anything": 1}) == {"anything": 1}
    assert fsspec_options("s3://b", {"aws_virtual_hosted_style_request": "false"})[
        "config_kwargs"
    ] == {"s3": {"addressing_style": "path"}}


@pytest.fixture(scope="module")
def s3_namespaces(s3_server):
    options, bucket = s3_server
    b = bucket()
    orders = PartitionedNamespace.create(
        f"s3://{b}/orders",
        pa.schema([pa.field("order_id", pa.int64()), pa.field("customer_id", pa.int64())]),
        [{"source": "customer_id", "transform": "bucket", "num_buckets": 4}],
        storage_options=options,
    )
    customers = PartitionedNamespace.create(
        f"s3://{b}/customers",
        pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())]),
        [{"source": "id", "transform": "bucket", "num_buckets": 2}],
        storage_options=options,
    )
    orders.append(
        pa.table({"order_id": list(range(40)), "customer_id": [i % 10 for i in range(40)]})
    )
    orders.append(pa.table({"order_id": [100, 101], "customer_id": [3, 7]}))
    customers.append(pa.table({"id": list(range(10)), "name": [f"c{i}" for i in range(10)]}))
    return options, orders.root, customers.root


def test_namespace_roundtrip_on_s3(s3_namespaces):
    options, orders_root, _ = s3_namespaces
    assert orders_root.startswith("s3://")
    ns = PartitionedNamespace.open(orders_root, storage_options=options)
    assert ns.count_rows() == 42
    assert len(ns.tables()) == 4
    # the metadata layer (fsspec/s3fs) reads the same tables with the same options
    entry = ns.tables()[0]
    md = open_metadata(entry.uri, entry.read_version, storage_options=options)
    assert md.count_rows() == ns.to_table(partitions=[entry]).num_rows
    assert resolve(orders_root, options).fs.exists(f"{orders_root[5:]}/__manifest")


def test_prune_on_s3(s3_namespaces):
    options, orders_root, _ = s3_namespaces
    ctx = lance_sql.SessionContext()
    table = ctx.register_namespace("orders", orders_root, storage_options=options)
    got = ctx.sql("SELECT count(*) AS n FROM orders WHERE customer_id = 3").to_arrow_table()
    assert got.column("n").to_pylist() == [5]
    assert table.metrics.scans_started == 1  # one of the 4 bucket partitions read
    total = ctx.sql("SELECT count(*) AS n FROM orders").to_arrow_table()
    assert total.column("n").to_pylist() == [42]


def test_storage_partitioned_join_on_s3(s3_namespaces):
    options, orders_root, customers_root = s3_namespaces
    orders = PartitionedNamespace.open(orders_root, storage_options=options)
    customers = PartitionedNamespace.open(customers_root, storage_options=options)
    plan = lance_sql.plan_join(orders, customers, [("customer_id", "id")])
    assert plan.compatible, plan.reason
    sql = (
        "SELECT o.order_id, c.name FROM orders o JOIN customers c ON o.customer_id = c.id "
        "ORDER BY o.order_id"
    )
    results = []
    for spj in (True, False):
        ctx = lance_sql.SessionContext(spj=spj)
        ctx.register_namespace("orders", orders_root, storage_options=options)
        ctx.register_namespace("customers", customers_root, storage_options=options)
        df = ctx.sql(sql)
        results.append(df.to_arrow_table())
        if spj:
            done = df.lance_rewrite()
            assert done.used and not done.reasons, done.reasons
    assert results[0].equals(results[1])
    assert results[0].num_rows == 42


def test_append_and_concurrent_commit_on_s3(s3_server):
    """Lance's conditional put on S3 turns a lost race into CommitConflictError."""
    options, bucket = s3_server
    root = f"s3://{bucket()}/ns"
    from workers import SCHEMA, SPEC, batch_for

    PartitionedNamespace.create(root, SCHEMA, SPEC, storage_options=options)
    a = PartitionedNamespace.open(root, storage_options=options)
    b = PartitionedNamespace.open(root, storage_options=options)
    a.append(batch_for(0, 0))
    b.append(batch_for(2, 0))  # disjoint partitions: rebased onto a's commit
    ns = PartitionedNamespace.open(root, storage_options=options)
    assert ns.count_rows() == batch_for(0, 0).num_rows + batch_for(2, 0).num_rows


def test_cleanup_on_s3(s3_server):
    """Cleanup lists and deletes through fsspec with the same Lance-style options."""
    from datetime import timedelta

    from workers import SCHEMA, SPEC, batch_for

    from lance_sql.tables.namespace.cleanup import cleanup_namespace

    options, bucket = s3_server
    root = f"s3://{bucket()}/ns"
    ns = PartitionedNamespace.create(root, SCHEMA, SPEC, storage_options=options)
    ns.append(batch_for(0, 0))
    loc = resolve(root, options)
    loc.fs.pipe(f"{loc.path}/_spark_staging/job/part-0.lance", b"x" * 10)
    report = cleanup_namespace(ns, older_than=timedelta(0), dry_run=False)
    assert report.files == [f"{root}/_spark_staging/job/part-0.lance"]
    assert not loc.fs.exists(f"{loc.path}/_spark_staging/job/part-0.lance")
    again = PartitionedNamespace.open(root, storage_options=options)
    assert again.count_rows() == batch_for(0, 0).num_rows
