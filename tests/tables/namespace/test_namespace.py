"""Create, write, evolve and read partitioned namespaces (against real pylance datasets)."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import udfs
from lance_sql.errors import (
    CommitConflictError,
    LanceSqlError,
    NotFoundError,
    SchemaMismatchError,
    SpecError,
    UnsafeLocationError,
    UnsupportedFeatureError,
)
from lance_sql.tables.namespace.manifest_table import commit_rows, read_manifest
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.namespace.writer import NamespaceWriter

from .conftest import (
    APPENDIX_SCHEMA,
    APPENDIX_SPEC_V1,
    APPENDIX_SPEC_V2,
    events,
    sorted_rows,
)

D = dt.date


def _manifest(root: str) -> list[dict[str, Any]]:
    return lance.dataset(os.path.join(root, "__manifest")).to_table().to_pylist()


def _appendix_namespace(root: str) -> PartitionedNamespace:
    ns = PartitionedNamespace.create(root, APPENDIX_SCHEMA, APPENDIX_SPEC_V1)
    ns.append(events([1, 2, 3], [D(2025, 12, 10), D(2025, 12, 11), D(2025, 12, 10)], ["US"] * 3))
    ns.add_spec(APPENDIX_SPEC_V2["fields"])
    ns.append(events([4, 5], [D(2025, 12, 12), D(2025, 1, 1)], ["US", "FR"]))
    return ns


# -- appendix A-C ---------------------------------------------------------------------------


def test_appendix_reproduction(root: str) -> None:
    ns = _appendix_namespace(root)
    # Appendix A: metadata properties, exact JSON.
    # create and add_spec are one commit each, so the properties travel as schema
    # metadata (readers overlay table metadata, written by later property updates).
    mds = lance.dataset(os.path.join(root, "__manifest")).schema.metadata
    md = {k.decode(): v.decode() for k, v in mds.items()}
    assert json.loads(md["partition_spec_v1"]) == APPENDIX_SPEC_V1
    assert json.loads(md["partition_spec_v2"]) == APPENDIX_SPEC_V2
    assert json.loads(md["schema"]) == APPENDIX_SCHEMA
    # Appendix C: columns and rows.
    m = lance.dataset(os.path.join(root, "__manifest"))
    assert m.schema.names == [
        "object_id",
        "object_type",
        "location",
        "metadata",
        "base_objects",
        "read_version",
        "read_branch",
        "read_tag",
        "partition_field_event_date",
        "partition_field_event_year",
        "partition_field_country",
    ]
    assert m.schema.field("partition_field_event_date").type == pa.date32()
    assert m.schema.field("partition_field_event_year").type == pa.int32()
    assert m.schema.field("partition_field_country").type == pa.utf8()
    assert m.schema.field("read_version").type == pa.uint64()
    rows = {r["object_id"]: r for r in m.to_table().to_pylist()}
    seg = r"[a-z0-9]{16}"
    shapes = {
        "v1": (r"v1", "namespace"),
        "v1 ns": (rf"v1\${seg}", "namespace"),
        "v1 table": (rf"v1\${seg}\$dataset", "table"),
        "v2": (r"v2", "namespace"),
        "v2 ns1": (rf"v2\${seg}", "namespace"),
        "v2 ns2": (rf"v2\${seg}\${seg}", "namespace"),
        "v2 table": (rf"v2\${seg}\${seg}\$dataset", "table"),
    }
    counts = {k: 0 for k in shapes}
    for oid, row in rows.items():
        kind = next(k for k, (pat, _) in shapes.items() if re.fullmatch(pat, oid))
        counts[kind] += 1
        assert row["object_type"] == shapes[kind][1]
        # string properties only; tables carry their column bounds (lance_sql.bounds)
        meta = json.loads(row["metadata"])
        assert set(meta) <= ({"lance_sql.bounds"} if row["object_type"] == "table" else set())
        assert all(isinstance(v, str) for v in meta.values())
        if row["object_type"] == "table":
            assert re.fullmatch(r"[0-9a-f]{8}_" + re.escape(oid), row["location"])
            assert row["read_version"] is not None and row["read_version"] >= 1
            assert (Path(root) / row["location"]).is_dir()
        else:
            assert row["location"] is None and row["read_version"] is None
        assert row["read_branch"] is None and row["read_tag"] is None
        # Inherited values: every row carries its ancestors' values.
        parts = oid.split("$")
        for i in range(2, len(parts)):
            parent = rows["$".join(parts[:i])]
            for col in ("event_date", "event_year", "country"):
                value = parent[f"partition_field_{col}"]
                if value is not None:
                    assert row[f"partition_field_{col}"] == value
    assert counts == {
        "v1": 1,
        "v1 ns": 2,
        "v1 table": 2,
        "v2": 1,
        "v2 ns1": 1,  # 2025 only
        "v2 ns2": 2,  # US, FR
        "v2 table": 2,
    }
    v1_tables = [r for o, r in rows.items() if o.startswith("v1$") and r["object_type"] == "table"]
    assert sorted(r["partition_field_event_date"] for r in v1_tables) == [
        D(2025, 12, 10),
        D(2025, 12, 11),
    ]
    assert all(r["partition_field_event_year"] is None for r in v1_tables)
    v2 = [r for o, r in rows.items() if o.startswith("v2$") and r["object_type"] == "table"]
    assert sorted((r["partition_field_event_year"], r["partition_field_country"]) for r in v2) == [
        (2025, "FR"),
        (2025, "US"),
    ]
    assert all(r["partition_field_event_date"] is None for r in v2)
    # Only table directories (and __manifest) exist on disk.
    dirs = sorted(os.listdir(root))
    assert "__manifest" in dirs and len(dirs) == 5
    # All rows readable back.
    assert sorted_rows(ns.to_table()) == sorted_rows(
        events(
            [1, 2, 3, 4, 5],
            [D(2025, 12, 10), D(2025, 12, 11), D(2025, 12, 10), D(2025, 12, 12), D(2025, 1, 1)],
            ["US", "US", "US", "US", "FR"],
        )
    )


def test_open_reads_specs_schema_and_partitions(root: str) -> None:
    _appendix_namespace(root)
    ns = PartitionedNamespace.open(root)
    assert sorted(ns.specs) == [1, 2]
    assert ns.current_spec.id == 2
    assert ns.schema.field("id").metadata == {b"lance:field_id": b"0"}
    parts = ns.partitions()
    assert parts.column_names == [
        "object_id",
        "location",
        "spec_version",
        "read_version",
        "read_branch",
        "read_tag",
        "partition_field_event_date",
        "partition_field_event_year",
        "partition_field_country",
    ]
    assert sorted(parts.column("spec_version").to_pylist()) == [1, 1, 2, 2]
    assert ns.manifest_version == read_manifest(ns.root).version


def test_pylance_reads_every_table_and_the_manifest(root: str) -> None:
    ns = _appendix_namespace(root)
    total = 0
    for entry in ns.tables():
        ds = lance.dataset(os.path.join(root, entry.location))
        total += ds.count_rows()
        assert ds.version == entry.read_version
    assert total == 5
    assert lance.dataset(os.path.join(root, "__manifest")).count_rows() == 11
    # pylance's own directory namespace lists our namespaces and tables.
    from lance.namespace import DirectoryNamespace
    from lance_namespace import DescribeTableRequest, ListNamespacesRequest, ListTablesRequest

    pyns = DirectoryNamespace(root=root, dir_listing_enabled="false")
    assert sorted(pyns.list_namespaces(ListNamespacesRequest(id=[])).namespaces) == ["v1", "v2"]
    entry = ns.tables()[0]
    parts = entry.object_id.split("$")
    assert pyns.list_tables(ListTablesRequest(id=parts[:-1])).tables == ["dataset"]
    location = pyns.describe_table(DescribeTableRequest(id=parts)).location
    assert location.endswith(entry.location)


# -- transforms as partition fields ---------------------------------------------------------

WIDE_SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("s", pa.utf8()),
        pa.field("d", pa.date32()),
        pa.field("ts", pa.timestamp("us", "UTC")),
        pa.field("dec", pa.decimal128(9, 2)),
    ]
)


def _wide_rows() -> pa.Table:
    return pa.table(
        {
            "k": pa.array([1, 2, 3, -5, 17, 34], pa.int64()),
            "s": ["US", "FR", "abc", None, "USA", ""],
            "d": pa.array(
                [
                    D(2025, 12, 10),
                    D(2024, 2, 29),
                    None,
                    D(2025, 12, 31),
                    D(1999, 1, 1),
                    D(2025, 1, 1),
                ],
                pa.date32(),
            ),
            "ts": pa.array(
                [
                    dt.datetime(2025, 12, 10, 23, 59, tzinfo=dt.timezone.utc),
                    dt.datetime(2024, 1, 1, 0, 0, tzinfo=dt.timezone.utc),
                    None,
                    dt.datetime(2025, 6, 1, 13, 5, tzinfo=dt.timezone.utc),
                    dt.datetime(2025, 6, 1, 13, 59, tzinfo=dt.timezone.utc),
                    dt.datetime(1970, 1, 1, 7, 0, tzinfo=dt.timezone.utc),
                ],
                pa.timestamp("us", "UTC"),
            ),
            "dec": pa.array(
                [
                    Decimal("1.25"),
                    Decimal("-7.00"),
                    None,
                    Decimal("10.99"),
                    Decimal("0"),
                    Decimal("5"),
                ],
                pa.decimal128(9, 2),
            ),
        },
        schema=WIDE_SCHEMA,
    )


@pytest.mark.parametrize(
    "field",
    [
        {"source": "s", "transform": "identity"},
        {"source": "d", "transform": "year"},
        {"source": "d", "transform": "month"},
        {"source": "ts", "transform": "day"},
        {"source": "ts", "transform": "hour"},
        {"source": "k", "transform": "bucket", "num_buckets": 16},
        {"sources": ["s", "k"], "transform": "multi_bucket", "num_buckets": 8},
        {"source": "s", "transform": "truncate", "width": 2},
        {"source": "k", "transform": "truncate", "width": 5},
        {"source": "dec", "transform": "truncate", "width": 100},
        {
            "field_id": "k_mod",
            "sources": ["k"],
            "expression": "col0 % 3",
            "result_type": pa.int64(),
        },
        {
            "field_id": "len_s",
            "sources": ["s", "k"],
            "expression": "character_length(col0) + col1",
            "result_type": pa.int64(),
        },
    ],
    ids=lambda f: (
        f.get("field_id") or f["transform"] + str(f.get("num_buckets", f.get("width", "")))
    ),
)
def test_every_transform_and_expression_as_partition_field(
    root: str, field: dict[str, Any]
) -> None:
    ns = PartitionedNamespace.create(root, WIDE_SCHEMA, [field])
    rows = _wide_rows()
    ns.append(rows)
    pf = ns.current_spec.fields[0]
    sources = [rows.column(ns.schema.names[sid]) for sid in pf.source_ids]
    expected = udfs.apply_partition_field(
        columns=sources,
        transform=None if pf.transform is None else pf.transform.to_json(),
        expression=pf.expression,
        result_type=pf.result_type,
    )
    # Every row sits in the partition table whose value is the row's partition value.
    by_k = dict(zip(rows.column("k").to_pylist(), expected.to_pylist(), strict=True))
    parts = ns.partitions()
    assert parts.num_rows == len(set(map(_hashable, by_k.values())))
    for entry in ns.tables():
        value = entry.values[pf.field_id]
        got = ns.to_table(["k"], partitions=[entry]).column("k").to_pylist()
        assert got and all(_hashable(by_k[k]) == _hashable(value) for k in got)
    assert sorted_rows(ns.to_table(), "k") == sorted_rows(rows, "k")


def _hashable(v: Any) -> Any:
    return ("NULL",) if v is None else v


def test_bucket_values_follow_the_design_vectors(root: str) -> None:
    schema = pa.schema([pa.field("k", pa.int64())])
    ns = PartitionedNamespace.create(
        root, schema, [{"source": "k", "transform": "bucket", "num_buckets": 16}]
    )
    ns.append(pa.table({"k": pa.array([1, 2, 3, -5], pa.int64())}))
    got = {
        e.values["k_bucket_16"]: ns.to_table(partitions=[e]).column("k").to_pylist()
        for e in ns.tables()
    }
    assert got == {4: [1], 12: [2], 13: [3], 14: [-5]}


def test_multi_level_spec_with_null_partition_values(root: str) -> None:
    ns = PartitionedNamespace.create(
        root,
        WIDE_SCHEMA,
        [
            {"source": "s", "transform": "identity"},
            {"source": "d", "transform": "year"},
            {"source": "k", "transform": "bucket", "num_buckets": 2},
        ],
    )
    rows = _wide_rows()
    ns.append(rows)
    m = {r["object_id"]: r for r in _manifest(root)}
    tables = [r for r in m.values() if r["object_type"] == "table"]
    assert all(len(r["object_id"].split("$")) == 5 for r in tables)  # v1 + 3 levels + dataset
    null_s = [r for r in tables if r["partition_field_s"] is None]
    assert len(null_s) == 1 and null_s[0]["partition_field_d_year"] == 2025
    null_d = [r for r in tables if r["partition_field_d_year"] is None]
    assert len(null_d) == 1 and null_d[0]["partition_field_s"] == "abc"
    # Level-1 namespace of the NULL country carries NULL and nothing below it.
    ns_rows = [
        r for r in m.values() if r["object_type"] == "namespace" and r["object_id"].count("$") == 1
    ]
    assert sorted(str(r["partition_field_s"]) for r in ns_rows) == sorted(
        str(v) for v in {"US", "FR", "abc", None, "USA", ""}
    )
    for r in ns_rows:
        assert r["partition_field_d_year"] is None and r["partition_field_k_bucket_2"] is None
    assert sorted_rows(ns.to_table(), "k") == sorted_rows(rows, "k")
    # A second append reuses existing namespaces and tables.
    before = len(m)
    ns.append(rows)
    after = _manifest(root)
    assert len(after) == before
    assert ns.to_table().num_rows == 2 * rows.num_rows
    assert {r["read_version"] for r in after if r["object_type"] == "table"} == {2}


# -- streaming and bounded memory ------------------------------------------------------------


def test_append_streams_a_reader_with_small_buffers(root: str) -> None:
    schema = pa.schema([pa.field("k", pa.int64()), pa.field("x", pa.float64())])
    ns = PartitionedNamespace.create(
        root, schema, [{"source": "k", "transform": "bucket", "num_buckets": 4}]
    )
    batches = [
        pa.record_batch(
            {
                "k": pa.array(range(i * 1000, (i + 1) * 1000), pa.int64()),
                "x": pa.array([float(i)] * 1000),
            }
        )
        for i in range(20)
    ]
    reader = pa.RecordBatchReader.from_batches(schema, iter(batches))
    ns.append(reader, buffer_bytes=20_000)
    assert ns.count_rows() == 20_000
    frags = sum(len(lance.dataset(e.uri).get_fragments()) for e in ns.tables())
    assert frags > 4  # spilled several times: memory stayed bounded
    assert sorted(ns.to_table(["k"]).column("k").to_pylist()) == list(range(20_000))
    # One new version per table and ONE __manifest commit for the whole append.
    assert {e.read_version for e in ns.tables()} == {1}
    assert ns.manifest_version == 3  # create (1, 2: properties mirrored) + this append (3)


# -- schema checks and failed writes -------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "column"),
    [
        (
            pa.table(
                {
                    "id": [1],
                    "event_date": pa.array([D(2025, 1, 1)]),
                    "country": ["US"],
                    "extra": [1],
                }
            ),
            "extra",
        ),
        (
            pa.table(
                {
                    "id": pa.array([1], pa.int32()),
                    "event_date": pa.array([D(2025, 1, 1)]),
                    "country": ["US"],
                }
            ),
            "id",
        ),
        (pa.table({"event_date": pa.array([D(2025, 1, 1)]), "country": ["US"]}), "id"),
        (
            pa.table(
                {
                    "id": pa.array([None], pa.int64()),
                    "event_date": pa.array([D(2025, 1, 1)]),
                    "country": ["US"],
                }
            ),
            "id",
        ),
        (pa.table({"id": [1], "event_date": ["2025-01-01"], "country": ["US"]}), "event_date"),
    ],
    ids=["extra", "wrong-type", "missing-non-null", "null-in-non-null", "string-date"],
)
def test_schema_mismatch_names_the_column(root: str, data: pa.Table, column: str) -> None:
    ns = PartitionedNamespace.create(root, APPENDIX_SCHEMA, APPENDIX_SPEC_V1)
    version = ns.manifest_version
    with pytest.raises(SchemaMismatchError, match=repr(column)):
        ns.append(data)
    assert read_manifest(ns.root).version == version


def test_expression_errors_at_write_time_name_the_field(root: str) -> None:
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("s", pa.utf8())])
    ns = PartitionedNamespace.create(
        root,
        schema,
        [
            {
                "field_id": "bad",
                "source": "s",
                "expression": "concat(col0, 'x')",
                "result_type": pa.int64(),
            }
        ],
    )
    version = ns.manifest_version
    with pytest.raises(SpecError, match="partition field 'bad' cannot be computed") as err:
        ns.append(pa.table({"k": [1], "s": ["a"]}))
    assert err.value.key == "partition_spec_v1.fields[0]"
    assert read_manifest(ns.root).version == version


def test_duplicate_input_columns_are_refused(root: str) -> None:
    ns = PartitionedNamespace.create(root, APPENDIX_SCHEMA, APPENDIX_SPEC_V1)
    dup = pa.table([pa.array([1]), pa.array([2])], names=["id", "id"])
    with pytest.raises(SchemaMismatchError, match="'id' appears more than once"):
        ns.append(dup)


def test_missing_nullable_columns_are_written_as_null(root: str) -> None:
    ns = PartitionedNamespace.create(root, APPENDIX_SCHEMA, APPENDIX_SPEC_V1)
    ns.append(pa.table({"country": ["US"], "id": [7]}))  # any column order
    assert ns.to_table().to_pylist() == [{"id": 7, "event_date": None, "country": "US"}]


def test_failed_append_leaves_manifest_and_tables_unchanged(root: str) -> None:
    ns = PartitionedNamespace.create(root, APPENDIX_SCHEMA, APPENDIX_SPEC_V1)
    ns.append(events([1], [D(2025, 12, 10)], ["US"]))
    version = ns.manifest_version
    table_versions = {e.object_id: lance.dataset(e.uri).version for e in ns.tables()}
    dirs = sorted(os.listdir(root))

    def batches():  # a good batch (one existing and one new partition), then a bad one
        yield events([2, 3], [D(2025, 12, 10), D(2030, 1, 1)], ["US", "FR"]).to_batches()[0]
        yield pa.record_batch(
            {"id": pa.array([4], pa.int64()), "event_date": pa.array(["bad"]), "country": ["x"]}
        )

    with pytest.raises(SchemaMismatchError, match="event_date"):
        ns.append(batches(), buffer_bytes=1)  # buffer_bytes=1: the good batch is already written
    assert read_manifest(ns.root).version == version
    assert {e.object_id: lance.dataset(e.uri).version for e in ns.tables()} == table_versions
    assert sorted(os.listdir(root)) == dirs  # staged files of the new partition removed
    reopened = PartitionedNamespace.open(root)
    assert reopened.to_table().column("id").to_pylist() == [1]


def test_concurrent_manifest_commit_is_refused(root: str) -> None:
    ns = PartitionedNamespace.create(root, APPENDIX_SCHEMA, APPENDIX_SPEC_V1)
    ns.append(events([0], [D(2025, 1, 1)], ["US"]))
    stale = ns.snapshot
    writer = NamespaceWriter(stale, ns.schema, ns.current_spec, mode="append")
    writer.write(events([1], [D(2025, 1, 1)], ["US"]))
    ns.append(events([2], [D(2025, 1, 1)], ["US"]))  # someone else commits first
    committed = ns.manifest_version
    with pytest.raises(CommitConflictError, match="was written or removed concurrently"):
        writer.commit()
    assert read_manifest(ns.root).version == committed
    # The loser's table version is never visible, and the next write restores over it.
    assert sorted(ns.refresh().to_table().column("id").to_pylist()) == [0, 2]
    ns.append(events([3], [D(2025, 1, 1)], ["US"]))
    assert sorted(ns.to_table().column("id").to_pylist()) == [0, 2, 3]


def test_concurrent_appends_to_other_partitions_are_rebased(root: str) -> None:
    ns = PartitionedNamespace.create(root, APPENDIX_SCHEMA, {**APPENDIX_SPEC_V2, "id": 1})
    ns.append(events([1], [D(2025, 1, 1)], ["US"]))
    stale = ns.snapshot
    writer = NamespaceWriter(stale, ns.schema, ns.current_spec, mode="append")
    # Writer: an existing partition (2025, US) and a new one (2026, DE).
    writer.write(events([2, 3], [D(2025, 2, 2), D(2026, 1, 1)], ["US", "DE"]))
    # Meanwhile another writer adds (2025, FR): a new namespace under the existing 2025.
    ns.append(events([4], [D(2025, 3, 3)], ["FR"]))
    snap = writer.commit()
    assert snap.version == ns.manifest_version + 1
    final = PartitionedNamespace.open(root)
    assert sorted(final.to_table().column("id").to_pylist()) == [1, 2, 3, 4]
    years = [r for r in _manifest(root) if r["object_id"].count("$") == 1]
    assert sorted(r["partition_field_event_year"] for r in years) == [2025, 2026]


def test_concurrent_creation_of_the_same_partition_is_refused(root: str) -> None:
    ns = PartitionedNamespace.create(root, APPENDIX_SCHEMA, {**APPENDIX_SPEC_V2, "id": 1})
    writer = NamespaceWriter(ns.snapshot, ns.schema, ns.current_spec, mode="append")
    writer.write(events([1], [D(2025, 1, 1)], ["US"]))
    ns.append(events([2], [D(2025, 5, 5)], ["FR"]))  # creates the 2025 namespace first
    with pytest.raises(CommitConflictError, match=r"cannot be rebased.*created concurrently"):
        writer.commit()
    assert PartitionedNamespace.open(root).to_table().column("id").to_pylist() == [2]


# -- snapshot semantics --------------------------------------------------------------------


def test_direct_pylance_writes_are_not_visible_and_never_leak(root: str) -> None:
    ns = PartitionedNamespace.create(root, APPENDIX_SCHEMA, APPENDIX_SPEC_V1)
    ns.append(events([1, 2], [D(2025, 12, 10)] * 2, ["US"] * 2))
    (entry,) = ns.tables()
    lance.write_dataset(events([99], [D(2025, 12, 10)], ["XX"]), entry.uri, mode="append")
    assert lance.dataset(entry.uri).count_rows() == 3  # pylance sees it at latest...
    reopened = PartitionedNamespace.open(root)
    assert sorted(reopened.to_table().column("id").to_pylist()) == [1, 2]  # ...the namespace not
    reopened.append(events([3], [D(2025, 12, 10)], ["US"]))
    assert sorted(reopened.to_table().column("id").to_pylist()) == [1, 2, 3]
    assert sorted(lance.dataset(entry.uri).to_table().column("id").to_pylist()) == [1, 2, 3]


def test_time_travel_and_read_only_old_versions(root: str) -> None:
    ns = PartitionedNamespace.create(root, APPENDIX_SCHEMA, APPENDIX_SPEC_V1)
    ns.append(events([1], [D(2025, 12, 10)], ["US"]))
    v_one = ns.manifest_version
    ns.append(events([2], [D(2025, 12, 10)], ["US"]))
    ns.append(events([3], [D(2026, 1, 1)], ["US"]))
    old = PartitionedNamespace.open(root, version=v_one)
    assert old.to_table().column("id").to_pylist() == [1]
    assert old.partitions().num_rows == 1
    assert sorted(PartitionedNamespace.open(root).to_table().column("id").to_pylist()) == [1, 2, 3]
    with pytest.raises(LanceSqlError, match="opened at __manifest version"):
        old.append(events([4], [D(2025, 12, 10)], ["US"]))
    with pytest.raises(NotFoundError, match="version 999"):
        PartitionedNamespace.open(root, version=999)


def test_read_tag_and_branch_pins(root: str) -> None:
    ns = PartitionedNamespace.create(root, APPENDIX_SCHEMA, APPENDIX_SPEC_V1)
    ns.append(events([1], [D(2025, 12, 10)], ["US"]))
    (entry,) = ns.tables()
    ds = lance.dataset(entry.uri)
    ds.tags.create("t1", 1)
    lance.write_dataset(events([2], [D(2025, 12, 10)], ["US"]), entry.uri, mode="append")
    rows = ns.snapshot.rows
    idx = rows.column_names.index("read_tag")
    is_table = pc.equal(rows.column("object_type"), "table")
    tags = pc.if_else(is_table, pa.scalar("t1"), pa.scalar(None, pa.utf8()))
    rows = rows.set_column(idx, rows.schema.field(idx), tags)
    rv = rows.column_names.index("read_version")
    rows = rows.set_column(rv, rows.schema.field(rv), pa.nulls(rows.num_rows, pa.uint64()))
    commit_rows(ns.snapshot, rows)
    pinned = PartitionedNamespace.open(root)
    assert pinned.tables()[0].read_tag == "t1"
    assert pinned.to_table().column("id").to_pylist() == [1]
    # NULL pins read the latest version.
    rows = rows.set_column(idx, rows.schema.field(idx), pa.nulls(rows.num_rows, pa.utf8()))
    commit_rows(pinned.snapshot, rows)
    assert sorted(PartitionedNamespace.open(root).to_table().column("id").to_pylist()) == [1, 2]


def test_read_branch_pin(root: str) -> None:
    ns = PartitionedNamespace.create(root, APPENDIX_SCHEMA, APPENDIX_SPEC_V1)
    ns.append(events([1], [D(2025, 12, 10)], ["US"]))
    (entry,) = ns.tables()
    branch = lance.dataset(entry.uri).create_branch("dev")
    branch.insert(events([2], [D(2025, 12, 10)], ["US"]))
    lance.write_dataset(events([3], [D(2025, 12, 10)], ["US"]), entry.uri, mode="append")
    rows = ns.snapshot.rows
    is_table = pc.equal(rows.column("object_type"), "table")
    idx = rows.column_names.index("read_branch")
    branches = pc.if_else(is_table, pa.scalar("dev"), pa.scalar(None, pa.utf8()))
    rv = rows.column_names.index("read_version")
    versions = pc.if_else(is_table, pa.scalar(2, pa.uint64()), pa.scalar(None, pa.uint64()))
    rows = rows.set_column(idx, rows.schema.field(idx), branches)
    rows = rows.set_column(rv, rows.schema.field(rv), versions)
    commit_rows(ns.snapshot, rows)
    pinned = PartitionedNamespace.open(root)
    assert sorted(pinned.to_table().column("id").to_pylist()) == [1, 2]
    # Appends to a branch-pinned partition go to the branch; main stays as it was.
    branch.insert(events([9], [D(2025, 12, 10)], ["US"]))  # foreign, never pinned
    pinned.append(events([4, 5], [D(2025, 12, 10), D(2025, 12, 11)], ["US", "US"]))
    got = {e.values["event_date"]: e for e in pinned.tables()}
    on_branch = got[D(2025, 12, 10)]
    assert on_branch.read_branch == "dev" and on_branch.read_version == 5  # restore + append
    assert got[D(2025, 12, 11)].read_branch is None
    assert sorted(pinned.to_table().column("id").to_pylist()) == [1, 2, 4, 5]
    assert sorted(lance.dataset(entry.uri).to_table().column("id").to_pylist()) == [1, 3]
    dev = lance.dataset(entry.uri).checkout_version(("dev", 5))
    assert sorted(dev.to_table().column("id").to_pylist()) == [1, 2, 4]


def test_write_to_a_tag_pinned_partition_is_refused(root: str) -> None:
    ns = PartitionedNamespace.create(root, APPENDIX_SCHEMA, APPENDIX_SPEC_V1)
    ns.append(events([1], [D(2025, 12, 10)], ["US"]))
    (entry,) = ns.tables()
    lance.dataset(entry.uri).tags.create("t1", 1)
    rows = ns.snapshot.rows
    is_table = pc.equal(rows.column("object_type"), "table")
    idx = rows.column_names.index("read_tag")
    tags = pc.if_else(is_table, pa.scalar("t1"), pa.scalar(None, pa.utf8()))
    commit_rows(ns.snapshot, rows.set_column(idx, rows.schema.field(idx), tags))
    pinned = PartitionedNamespace.open(root)
    before = pinned.manifest_version
    with pytest.raises(UnsupportedFeatureError, match=r"v1\$.*\$dataset.*tag 't1'"):
        pinned.append(events([2], [D(2025, 12, 10)], ["US"]))
    assert PartitionedNamespace.open(root).manifest_version == before
    assert lance.dataset(entry.uri).version == 1


def test_empty_append_commits_nothing_and_zero_field_spec(root: str) -> None:
    ns = PartitionedNamespace.create(root, APPENDIX_SCHEMA, {"id": 1, "fields": []})
    version = ns.manifest_version
    ns.append(events([], [], []))
    assert ns.manifest_version == version
    ns.append(events([1, 2], [D(2025, 1, 1), None], ["US", None]))
    (entry,) = ns.tables()
    assert entry.object_id == "v1$dataset"
    assert ns.to_table().num_rows == 2


# -- overwrite ------------------------------------------------------------------------------


def test_overwrite_replaces_everything_in_one_commit(root: str) -> None:
    ns = _appendix_namespace(root)
    before = ns.manifest_version
    old_tables = {e.object_id for e in ns.tables()}
    ns.overwrite(events([10, 11], [D(2025, 12, 10), D(2026, 3, 1)], ["US", "US"]))
    assert ns.manifest_version == before + 1
    assert sorted(ns.to_table().column("id").to_pylist()) == [10, 11]
    tables = ns.tables()
    assert all(e.spec_version == 2 for e in tables)
    assert {e.object_id for e in tables}.isdisjoint({o for o in old_tables if o.startswith("v1")})
    # The existing (2025, US) partition table got a new version; the others left __manifest.
    kept = [e for e in tables if e.object_id in old_tables]
    assert len(kept) == 1 and kept[0].values["event_year"] == 2025
    ids = {r["object_id"] for r in _manifest(root)}
    assert {"v1", "v2"} <= ids  # spec version namespaces stay
    assert not any(o.startswith("v1$") for o in ids)
    # Time travel still sees the old data.
    assert PartitionedNamespace.open(root, version=before).to_table().num_rows == 5


# -- evolution -----------------------------------------------------------------------------


def test_create_and_add_spec_are_complete_in_their_first_commit(root: str) -> None:
    # Rows, columns and properties land in ONE commit (schema metadata); the next
    # commit only mirrors the properties into the table metadata, as the spec asks.
    ns = PartitionedNamespace.create(root, APPENDIX_SCHEMA, APPENDIX_SPEC_V1)
    m = lance.dataset(os.path.join(root, "__manifest"))
    assert ns.manifest_version == 2 and len(m.versions()) == 2
    assert PartitionedNamespace.open(root, version=1).current_spec.id == 1
    first = lance.dataset(os.path.join(root, "__manifest"), version=1)
    assert b"partition_spec_v1" in first.schema.metadata
    assert {"partition_spec_v1", "schema"} <= set(m.metadata)  # the spec's table metadata
    ns.append(events([1], [D(2025, 12, 10)], ["US"]))
    ns.add_spec(APPENDIX_SPEC_V2["fields"])
    assert ns.manifest_version == 5
    assert len(lance.dataset(os.path.join(root, "__manifest")).versions()) == 5
    for version in (4, 5):
        reopened = PartitionedNamespace.open(root, version=version)
        assert sorted(reopened.specs) == [1, 2]
    assert reopened.snapshot.lance_schema.names[-2:] == [
        "partition_field_event_year",
        "partition_field_country",
    ]
    # A later property update (rename) keeps every property readable.
    ns.rename_column("country", "nation")
    again = PartitionedNamespace.open(root)
    assert sorted(again.specs) == [1, 2] and "nation" in again.schema.names


def test_add_spec_reuses_field_ids_and_extends_manifest(root: str) -> None:
    ns = PartitionedNamespace.create(root, WIDE_SCHEMA, [{"source": "s", "transform": "identity"}])
    ns.append(_wide_rows())
    spec2 = ns.add_spec(
        [{"source": "d", "transform": "year"}, {"source": "s", "transform": "identity"}]
    )
    assert [f.field_id for f in spec2.fields] == ["d_year", "s"]  # "s" reused
    m = lance.dataset(os.path.join(root, "__manifest"))
    assert m.schema.names[-2:] == ["partition_field_s", "partition_field_d_year"]
    ns.append(_wide_rows())
    assert {e.spec_version for e in ns.tables()} == {1, 2}
    assert ns.to_table().num_rows == 12
    with pytest.raises(SpecError, match="must reuse field_id 's'"):
        ns.add_spec([{"field_id": "other", "source": "s", "transform": "identity"}])


def test_rename_column_reads_old_tables_by_field_id(root: str) -> None:
    ns = PartitionedNamespace.create(root, APPENDIX_SCHEMA, APPENDIX_SPEC_V1)
    ns.append(events([1, 2], [D(2025, 12, 10), D(2025, 12, 11)], ["US", "FR"]))
    ns.rename_column("country", "nation")
    ns.rename_column("event_date", "day")
    assert ns.schema.names == ["id", "day", "nation"]
    assert ns.schema.field("nation").metadata == {b"lance:field_id": b"2"}
    got = ns.to_table(filter=pc.field("nation") == "FR")
    assert got.to_pylist() == [{"id": 2, "day": D(2025, 12, 11), "nation": "FR"}]
    # Appends after the rename: into an old table (its column keeps the old name)
    # and into a new table (created with the new names); the spec still applies.
    ns.append(
        pa.table(
            {
                "id": [3, 4],
                "day": pa.array([D(2025, 12, 10), D(2030, 1, 1)]),
                "nation": ["DE", "IT"],
            }
        )
    )
    assert sorted_rows(ns.to_table()) == [
        {"id": 1, "day": D(2025, 12, 10), "nation": "US"},
        {"id": 2, "day": D(2025, 12, 11), "nation": "FR"},
        {"id": 3, "day": D(2025, 12, 10), "nation": "DE"},
        {"id": 4, "day": D(2030, 1, 1), "nation": "IT"},
    ]
    old = next(e for e in ns.tables() if e.values["event_date"] == D(2025, 12, 10))
    assert lance.dataset(old.uri).schema.names == ["id", "event_date", "country"]
    with pytest.raises(SpecError, match="already exists"):
        ns.rename_column("id", "nation")
    with pytest.raises(SpecError, match="no column named 'zzz'"):
        ns.rename_column("zzz", "y")


def test_added_columns_read_as_null_in_old_tables(root: str) -> None:
    ns = PartitionedNamespace.create(root, APPENDIX_SCHEMA, APPENDIX_SPEC_V1)
    ns.append(events([1], [D(2025, 12, 10)], ["US"]))
    ns.add_columns([pa.field("score", pa.float64())])
    assert ns.schema.field("score").metadata == {b"lance:field_id": b"3"}
    assert ns.to_table().to_pylist() == [
        {"id": 1, "event_date": D(2025, 12, 10), "country": "US", "score": None}
    ]
    assert ns.to_table(["id"], filter=pc.field("score").is_null()).num_rows == 1
    assert ns.to_table(["id"], filter=pc.field("score") > 1).num_rows == 0
    ns.append(
        pa.table(
            {
                "id": [2],
                "event_date": pa.array([D(2025, 12, 10)]),
                "country": ["US"],
                "score": [2.5],
            }
        )
    )
    assert sorted_rows(ns.to_table()) == [
        {"id": 1, "event_date": D(2025, 12, 10), "country": "US", "score": None},
        {"id": 2, "event_date": D(2025, 12, 10), "country": "US", "score": 2.5},
    ]


def test_scan_units_pickle_and_scan_elsewhere(root: str) -> None:
    import pickle

    ns = _appendix_namespace(root)
    ns.rename_column("country", "nation")  # exercise the mapped (renaming) unit too
    units = ns.scan_units()
    clones = [pickle.loads(pickle.dumps(u)) for u in units]
    got = [
        r
        for u in clones
        for b in u.to_batches(["id", "nation"], pc.field("nation") == "US")
        for r in b.to_pylist()
    ]
    assert sorted(r["id"] for r in got) == [1, 2, 3, 4]
    assert sum(u.count_rows() for u in clones) == 5


# -- bad namespaces -------------------------------------------------------------------------


def test_partition_table_missing_on_disk(root: str) -> None:
    ns = _appendix_namespace(root)
    victim = ns.tables()[0]
    shutil.rmtree(victim.uri)
    fresh = PartitionedNamespace.open(root)
    with pytest.raises(NotFoundError) as err:
        fresh.to_table()
    assert victim.object_id in str(err.value) and victim.location in str(err.value)


def test_location_outside_the_root_is_refused(root: str) -> None:
    ns = _appendix_namespace(root)
    rows = ns.snapshot.rows
    first_table = rows.column("object_id").to_pylist()[
        rows.column("object_type").to_pylist().index("table")
    ]
    locs = [loc for loc in rows.column("location").to_pylist()]
    locs[rows.column("object_id").to_pylist().index(first_table)] = "../elsewhere"
    idx = rows.column_names.index("location")
    commit_rows(
        ns.snapshot, rows.set_column(idx, rows.schema.field(idx), pa.array(locs, pa.utf8()))
    )
    with pytest.raises(UnsafeLocationError) as err:
        PartitionedNamespace.open(root).to_table()
    assert first_table in str(err.value)


def test_create_refuses_an_existing_namespace_and_bad_input(root: str) -> None:
    PartitionedNamespace.create(root, APPENDIX_SCHEMA, APPENDIX_SPEC_V1)
    with pytest.raises(CommitConflictError, match="already exists"):
        PartitionedNamespace.create(root, APPENDIX_SCHEMA, APPENDIX_SPEC_V1)
    with pytest.raises(SpecError, match="unknown transform type") as err:
        PartitionedNamespace.create(
            root + "2", APPENDIX_SCHEMA, [{"source": "id", "transform": "zorder"}]
        )
    assert err.value.key == "partition_spec_v1.fields[0].transform.type"
    with pytest.raises(SpecError) as err:
        PartitionedNamespace.create(root + "3", APPENDIX_SCHEMA, '{"id": 1, "fields": [}')
    assert err.value.key == "partition_spec_v1"
    assert not os.path.exists(root + "2") and not os.path.exists(root + "3")


def test_plain_directory_namespace_is_not_partitioned(tmp_path: Path) -> None:
    from lance.namespace import DirectoryNamespace

    from lance_sql.tables.namespace.namespace import NotPartitionedError

    pyns = DirectoryNamespace(root=str(tmp_path))
    pyns.namespace_id()
    lance.write_dataset(pa.table({"a": [1]}), str(tmp_path / "x.lance"))
    from lance_namespace import CreateNamespaceRequest

    pyns.create_namespace(CreateNamespaceRequest(id=["a"]))
    with pytest.raises(NotPartitionedError, match="not a partitioned namespace"):
        PartitionedNamespace.open(str(tmp_path))
    with pytest.raises(NotFoundError, match="__manifest"):
        PartitionedNamespace.open(str(tmp_path / "nothing"))


def test_schema_without_field_ids_gets_depth_first_ids(root: str) -> None:
    schema = pa.schema([("a", pa.int64()), ("s", pa.struct([("x", pa.int32())])), ("b", pa.utf8())])
    ns = PartitionedNamespace.create(root, schema, [{"source": "s.x", "transform": "identity"}])
    assert [f.metadata[b"lance:field_id"] for f in ns.schema] == [b"0", b"1", b"3"]
    ns.append(pa.table({"a": [1, 2], "s": [{"x": 5}, {"x": 6}], "b": ["p", "q"]}))
    assert sorted(e.values["s_x"] for e in ns.tables()) == [5, 6]
    assert sorted_rows(ns.to_table(), "a") == [
        {"a": 1, "s": {"x": 5}, "b": "p"},
        {"a": 2, "s": {"x": 6}, "b": "q"},
    ]


def test_manifest_lacking_a_base_column_is_a_format_error(tmp_path: Path) -> None:
    from lance_sql.errors import FormatError

    root = tmp_path / "broken"
    lance.write_dataset(
        pa.table({"object_id": ["v1"], "objet_type": ["namespace"], "location": [None]}),
        str(root / "__manifest"),
    )
    with pytest.raises(FormatError, match="'object_type'"):
        PartitionedNamespace.open(str(root))
