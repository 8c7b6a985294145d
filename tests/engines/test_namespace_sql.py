"""SQL over partitioned namespaces and plain directory namespaces (DataFusion 55)."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lance_sql import SessionContext
from lance_sql.engines.datafusion.namespace_provider import NamespaceTable
from lance_sql.engines.datafusion.namespace_register import register_namespace
from lance_sql.engines.datafusion.provider import capture_scans
from lance_sql.tables.namespace.namespace import PartitionedNamespace

D = dt.date

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        pa.field("event_date", pa.date32()),
        pa.field("country", pa.utf8()),
        pa.field("x", pa.float64()),
    ]
)


def _rows(n: int, offset: int = 0) -> pa.Table:
    ids = list(range(offset, offset + n))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "event_date": pa.array(
                [None if i % 17 == 0 else D(2024 + i % 3, 1 + i % 12, 1 + i % 28) for i in ids],
                pa.date32(),
            ),
            "country": pa.array([["US", "FR", "DE", None][i % 4] for i in ids], pa.utf8()),
            "x": pa.array([i / 4 for i in ids], pa.float64()),
        },
        schema=SCHEMA,
    )


@pytest.fixture
def namespace(tmp_path: Path) -> PartitionedNamespace:
    ns = PartitionedNamespace.create(
        str(tmp_path / "ns"),
        SCHEMA,
        [
            {"source": "event_date", "transform": "year"},
            {"source": "country", "transform": "identity"},
        ],
    )
    ns.append(_rows(300))
    ns.add_spec([{"source": "id", "transform": "bucket", "num_buckets": 4}])
    ns.append(_rows(200, offset=300))
    return ns


def _union_of_partition_tables(ns: PartitionedNamespace) -> list[dict[str, Any]]:
    rows = []
    for entry in ns.tables():
        rows.extend(lance.dataset(entry.uri, version=entry.read_version).to_table().to_pylist())
    return sorted(rows, key=lambda r: r["id"])


def _sql(ctx: SessionContext, query: str) -> list[dict[str, Any]]:
    return ctx.sql(query).to_arrow_table().to_pylist()


def test_sql_over_the_namespace_is_the_union_of_its_tables(namespace: PartitionedNamespace) -> None:
    ctx = SessionContext()
    provider = register_namespace(ctx, "events", namespace.root)
    assert isinstance(provider, NamespaceTable)
    got = _sql(ctx, "SELECT * FROM events ORDER BY id")
    assert got == _union_of_partition_tables(namespace)
    assert got == _rows(500).to_pylist()
    assert ctx.table("events").schema().names == SCHEMA.names
    assert _sql(ctx, "SELECT count(*) AS n, sum(x) AS s FROM events") == [
        {"n": 500, "s": sum(i / 4 for i in range(500))}
    ]


@pytest.mark.parametrize(
    ("where", "predicate"),
    [
        ("country = 'US'", lambda r: r["country"] == "US"),
        ("country IS NULL", lambda r: r["country"] is None),
        (
            "event_date >= DATE '2025-06-01' AND x < 100",
            lambda r: (
                r["event_date"] is not None and r["event_date"] >= D(2025, 6, 1) and r["x"] < 100
            ),
        ),
        (
            "id IN (3, 301, 499) OR country = 'DE'",
            lambda r: r["id"] in (3, 301, 499) or r["country"] == "DE",
        ),
        ("NOT (x > 10)", lambda r: not r["x"] > 10),
    ],
)
def test_filters_and_projections_are_exact(
    namespace: PartitionedNamespace, where: str, predicate: Any
) -> None:
    ctx = SessionContext()
    register_namespace(ctx, "events", namespace.root)
    got = _sql(ctx, f"SELECT id, country FROM events WHERE {where} ORDER BY id")
    expected = [
        {"id": r["id"], "country": r["country"]} for r in _rows(500).to_pylist() if predicate(r)
    ]
    assert got == expected
    count = _sql(ctx, f"SELECT count(*) AS n FROM events WHERE {where}")[0]["n"]
    assert count == len(expected)


def test_filters_are_pushed_into_each_partition_table(namespace: PartitionedNamespace) -> None:
    ctx = SessionContext()
    provider = register_namespace(ctx, "events", namespace.root, prune=None)
    assert isinstance(provider, NamespaceTable)
    provider.metrics.reset()
    with capture_scans() as records:
        _sql(ctx, "SELECT id FROM events WHERE country = 'FR'")
    (record,) = records
    assert record.filter is not None and "country" in str(record.filter)
    assert record.columns is not None and "x" not in record.columns
    assert "LanceNamespaceScan" in record.plan.description
    assert f"units={len(namespace.tables())}," in record.plan.description
    # Lance applied the filter: far fewer rows left pylance than the namespace holds.
    assert provider.metrics.rows_read == 125


@pytest.mark.parametrize(
    "where",
    [
        "country = 'FR'",
        "country IS NULL",
        "event_date = DATE '2025-03-04'",
        "event_date >= DATE '2025-06-01' AND country <> 'US'",
        "id = 301",
        "id IN (3, 301, 499) OR country = 'DE'",
        "event_date IS NULL",
        "country IN ('FR', NULL)",
        "id = 301 OR NULL",
        "NOT (country <> 'FR' AND NULL)",
        "NOT (country = 'FR' OR NULL)",
    ],
)
def test_default_planner_pruning_is_sound_and_prunes(
    namespace: PartitionedNamespace, where: str
) -> None:
    ctx = SessionContext()
    register_namespace(ctx, "pruned", namespace.root)
    register_namespace(ctx, "full", namespace.root, prune=None)
    query = "SELECT id FROM {} WHERE " + where + " ORDER BY id"
    with capture_scans() as records:
        pruned = _sql(ctx, query.format("pruned"))
    assert pruned == _sql(ctx, query.format("full"))
    if where in ("country = 'FR'", "id = 301", "country IN ('FR', NULL)", "id = 301 OR NULL"):
        selected, total = (
            records[0].plan.description.split("partition_tables=")[1].split(",")[0].split("/")
        )
        assert int(selected) < int(total)
    if where == "NOT (country = 'FR' OR NULL)":  # never TRUE: no partition table is read
        assert "partition_tables=0/" in records[0].plan.description


def test_explain_reports_every_spec_version(namespace: PartitionedNamespace) -> None:
    ctx = SessionContext()
    ctx.register_namespace("events", namespace.root)
    by_version = {}
    for t in namespace.tables():
        by_version.setdefault(t.object_id.split("$")[0], []).append(t)
    n1, n2 = len(by_version["v1"]), len(by_version["v2"])
    plan = "\n".join(
        ctx.sql("EXPLAIN SELECT id FROM events WHERE country = 'FR'")
        .to_arrow_table()
        .column("plan")
        .to_pylist()
    )
    (line,) = [x for x in plan.splitlines() if "LanceNamespaceScan:" in x]
    parts = namespace.partitions().to_pylist()
    fr = sum(1 for p in parts if p["spec_version"] == 1 and p["partition_field_country"] == "FR")
    assert 0 < fr < n1 and f"partition_tables={fr + n2}/{n1 + n2}" in line
    assert f"v1: {fr}/{n1}, manifest_filter=partition_field_country = 'FR'" in line
    assert f"v2: {n2}/{n2}, manifest_filter=TRUE" in line  # v2 has no field on country
    plan = "\n".join(
        ctx.sql("EXPLAIN SELECT id FROM events").to_arrow_table().column("plan").to_pylist()
    )
    assert f"spec_versions=[v1: {n1}/{n1}, manifest_filter=TRUE; v2: {n2}/{n2}," in plan


def test_prune_hook_selects_partition_tables(namespace: PartitionedNamespace) -> None:
    wanted = [e for e in namespace.tables() if e.spec_version == 2]
    seen: list[Any] = []

    def prune(filter: pc.Expression | None, ns: PartitionedNamespace) -> list[Any]:
        seen.append(filter)
        return wanted

    ctx = SessionContext()
    register_namespace(ctx, "events", namespace.root, prune=prune)
    got = _sql(ctx, "SELECT min(id) AS lo, count(*) AS n FROM events")
    assert got == [{"lo": 300, "n": 200}]
    assert seen
    register_namespace(ctx, "nothing", namespace.root, prune=lambda f, ns: [])
    assert _sql(ctx, "SELECT count(*) AS n FROM nothing") == [{"n": 0}]


def test_registration_follows_latest_or_pins_a_version(namespace: PartitionedNamespace) -> None:
    ctx = SessionContext()
    register_namespace(ctx, "latest", namespace.root)
    register_namespace(ctx, "pinned", namespace.root, version=namespace.manifest_version)
    namespace.append(_rows(10, offset=1000))
    assert _sql(ctx, "SELECT count(*) AS n FROM latest") == [{"n": 510}]
    assert _sql(ctx, "SELECT count(*) AS n FROM pinned") == [{"n": 500}]


def test_snapshot_reads_ignore_direct_table_writes(namespace: PartitionedNamespace) -> None:
    entry = namespace.tables()[0]
    lance.write_dataset(_rows(5, offset=9000), entry.uri, mode="append")
    ctx = SessionContext()
    register_namespace(ctx, "events", namespace.root)
    assert _sql(ctx, "SELECT count(*) AS n FROM events WHERE id >= 9000") == [{"n": 0}]


def test_renamed_and_added_columns_by_field_id(namespace: PartitionedNamespace) -> None:
    namespace.rename_column("country", "nation")
    namespace.add_columns([pa.field("note", pa.utf8())])
    ctx = SessionContext()
    register_namespace(ctx, "events", namespace.root)
    got = _sql(ctx, "SELECT count(*) AS n FROM events WHERE nation = 'FR' AND note IS NULL")
    assert got == [{"n": 125}]
    assert _sql(ctx, "SELECT count(*) AS n FROM events WHERE note IS NOT NULL") == [{"n": 0}]
    assert _sql(ctx, "SELECT nation FROM events WHERE id = 1") == [{"nation": "FR"}]


def test_latest_registration_survives_renames_and_added_columns(
    namespace: PartitionedNamespace,
) -> None:
    ctx = SessionContext()
    register_namespace(ctx, "events", namespace.root)
    namespace.rename_column("country", "nation")
    namespace.add_columns([pa.field("note", pa.utf8())])
    namespace.append(
        pa.table(
            {
                "id": pa.array([7000], pa.int64()),
                "event_date": pa.array([D(2025, 1, 1)]),
                "nation": ["FR"],
                "x": [1.0],
                "note": ["hi"],
            }
        )
    )
    # The registered schema (old names, no "note") still reads by field id.
    got = _sql(ctx, "SELECT * FROM events WHERE id = 7000")
    assert got == [{"id": 7000, "event_date": D(2025, 1, 1), "country": "FR", "x": 1.0}]
    assert _sql(ctx, "SELECT count(*) AS n FROM events WHERE country = 'FR'") == [{"n": 126}]


def test_missing_partition_table_names_the_object(namespace: PartitionedNamespace) -> None:
    victim = namespace.tables()[0]
    shutil.rmtree(victim.uri)
    ctx = SessionContext()
    register_namespace(ctx, "events", namespace.root)
    with pytest.raises(Exception, match=victim.object_id.replace("$", r"\$")):
        _sql(ctx, "SELECT count(*) FROM events")


def test_plain_directory_namespace_tables_by_name(tmp_path: Path) -> None:
    from lance.namespace import DirectoryNamespace
    from lance_namespace import CreateNamespaceRequest, CreateTableRequest

    root = str(tmp_path / "plain")
    os.makedirs(root)
    pyns = DirectoryNamespace(root=root)
    pyns.create_namespace(CreateNamespaceRequest(id=["team"]))

    def ipc(table: pa.Table) -> bytes:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as w:
            w.write_table(table)
        return sink.getvalue().to_pybytes()

    pyns.create_table(CreateTableRequest(id=["team", "scores"]), ipc(pa.table({"v": [1, 2, 3]})))
    pyns.create_table(CreateTableRequest(id=["top"]), ipc(pa.table({"w": ["a"]})))
    ctx = SessionContext()
    names = register_namespace(ctx, "dir", root)
    assert sorted(names) == ["team$scores", "top"]
    assert _sql(ctx, 'SELECT sum(v) AS s FROM dir."team$scores"') == [{"s": 6}]
    assert _sql(ctx, "SELECT w FROM dir.top") == [{"w": "a"}]
