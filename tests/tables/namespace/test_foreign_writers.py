"""Issue #16: other writers at the namespace root, damaged ``__manifest``, repair, describe."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil

import lance
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.cli.main import main
from lance_sql.errors import FormatError, ManifestDamagedError
from lance_sql.tables.namespace.manifest_table import commit_rows, conform_rows
from lance_sql.tables.namespace.namespace import PartitionedNamespace

from .conftest import APPENDIX_SPEC_V1, APPENDIX_SPEC_V2, events

SCHEMA = pa.schema([("id", pa.int64()), ("country", pa.utf8()), ("k", pa.int64())])


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def _namespace(root: str) -> PartitionedNamespace:
    ns = PartitionedNamespace.create(
        root, SCHEMA, [{"source": "k", "transform": "bucket", "num_buckets": 2}]
    )
    ns.append(pa.table({"id": [1, 2, 3], "country": ["US", "FR", "DE"], "k": [1, 2, 3]}))
    ns.add_spec([{"source": "country", "transform": "identity"}])
    ns.append(pa.table({"id": [4, 5], "country": ["US", "FR"], "k": [4, 5]}))
    return ns


def _sql(root: str, query: str) -> list[dict]:
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    return ctx.sql(query).to_arrow_table().to_pylist()


def _add_foreign_table(ns: PartitionedNamespace, name: str = "side") -> None:
    """A table ``side(a int64, b utf8)`` at the root, listed in __manifest (as lancedb does)."""
    location = f"{name}.lance"
    lance.write_dataset(pa.table({"a": [7], "b": ["zz"]}), os.path.join(ns.root, location))
    row = pa.table({"object_id": [name], "object_type": ["table"], "location": [location]})
    rows = pa.concat_tables([ns.snapshot.rows, conform_rows(row, ns.snapshot.lance_schema)])
    commit_rows(ns.snapshot, rows)
    ns.refresh()


def test_tables_outside_spec_versions_are_not_partition_tables(root: str) -> None:
    ns = _namespace(root)
    _add_foreign_table(ns)
    assert "side" not in {e.object_id for e in ns.tables()}
    assert "side" not in ns.partitions().column("object_id").to_pylist()
    assert sorted(ns.to_table().column("id").to_pylist()) == [1, 2, 3, 4, 5]
    assert ns.foreign_tables() == [{"object_id": "side", "location": "side.lance"}]
    plan = lance_sql.plan_scan(ns, "k = 7")
    assert all(p.object_id != "side" for p in plan.partitions)
    plan = lance_sql.plan_scan(root, "id = 7")
    assert all(p.object_id != "side" for p in plan.partitions)
    assert _sql(root, "SELECT count(*) AS n FROM t") == [{"n": 5}]
    assert _sql(root, "SELECT count(*) AS n FROM t WHERE id = 7") == [{"n": 0}]
    ns.append(pa.table({"id": [6], "country": ["US"], "k": [6]}))
    assert _sql(root, "SELECT count(*) AS n FROM t") == [{"n": 6}]


def test_a_root_table_named_like_a_spec_version_is_not_a_partition_table(root: str) -> None:
    """``v3`` (no ``$``) is a table at the root, not one under spec version namespace v3:
    every read agrees, so the partition list, the scans and SQL see the same tables."""
    ns = _namespace(root)
    _add_foreign_table(ns, "v3")
    assert "v3" not in {e.object_id for e in ns.tables()}
    assert "v3" not in ns.partitions().column("object_id").to_pylist()
    assert sorted(ns.to_table().column("id").to_pylist()) == [1, 2, 3, 4, 5]
    assert ns.count_rows() == 5
    assert ns.foreign_tables() == [{"object_id": "v3", "location": "v3.lance"}]
    assert _sql(root, "SELECT count(*) AS n FROM t") == [{"n": 5}]


def test_inspect_reports_foreign_tables(root: str, capsys: pytest.CaptureFixture[str]) -> None:
    ns = _namespace(root)
    _add_foreign_table(ns)
    assert main(["inspect", root, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ignored_tables"] == [{"object_id": "side", "location": "side.lance"}]
    assert main(["inspect", root]) == 0
    assert "side" in capsys.readouterr().out


def _directory_namespace_write(root: str) -> None:
    from lance.namespace import DirectoryNamespace
    from lance_namespace import CreateTableRequest

    pyns = DirectoryNamespace(root=root)
    pyns.create_table(CreateTableRequest(id=["side"]), _ipc(pa.table({"a": [7], "b": ["zz"]})))


def test_manifest_rewritten_by_directory_namespace_is_refused_then_repaired(root: str) -> None:
    ns = _namespace(root)
    before = ns.partitions()
    _directory_namespace_write(root)
    with pytest.raises(ManifestDamagedError) as err:
        PartitionedNamespace.open(root)
    text = str(err.value)
    assert "partition_field_k_bucket_2" in text and "read_version" in text
    assert any("schema metadata" in m for m in err.value.missing)
    assert isinstance(err.value, FormatError)
    repaired = PartitionedNamespace.repair(root)
    after = repaired.partitions()
    assert after.drop_columns(["read_version"]).equals(before.drop_columns(["read_version"]))
    assert after.column("read_version").to_pylist() == before.column("read_version").to_pylist()
    assert sorted(repaired.to_table().column("id").to_pylist()) == [1, 2, 3, 4, 5]
    assert repaired.foreign_tables()[0]["object_id"] == "side"
    versions = lance.dataset(os.path.join(root, "__manifest")).versions()
    assert len(versions) - lance.dataset(os.path.join(root, "__manifest"), version=1).version >= 1
    md = lance.dataset(os.path.join(root, "__manifest")).schema.metadata
    assert b"partition_spec_v2" in md and b"schema" in md
    plan = lance_sql.plan_scan(repaired, "country = 'US'")
    assert plan.pruned and len(plan.partitions) < plan.total_partitions
    assert _sql(root, "SELECT id FROM t WHERE country = 'US' ORDER BY id") == [
        {"id": 1},
        {"id": 4},
    ]
    repaired.append(pa.table({"id": [6], "country": ["US"], "k": [6]}))
    assert _sql(root, "SELECT count(*) AS n FROM t") == [{"n": 6}]


def test_repair_pins_current_versions_in_one_commit(root: str) -> None:
    ns = _namespace(root)
    _directory_namespace_write(root)
    v = lance.dataset(os.path.join(root, "__manifest")).version
    assert main(["repair", root]) == 0
    ds = lance.dataset(os.path.join(root, "__manifest"))
    # one commit with rows, columns and properties; one more mirrors them into table metadata
    assert ds.version in (v + 1, v + 2)
    v1 = lance.dataset(os.path.join(root, "__manifest"), version=v + 1)
    assert "read_version" in v1.schema.names
    assert b"partition_spec_v1" in v1.schema.metadata
    reopened = PartitionedNamespace.open(root)
    for e in reopened.tables():
        assert e.read_version == lance.dataset(e.uri).version
    assert sorted(reopened.to_table().column("id").to_pylist()) == [1, 2, 3, 4, 5]
    ns.refresh()


def test_repair_method_on_an_open_namespace(root: str) -> None:
    ns = _namespace(root)
    n = len(ns.tables())
    _directory_namespace_write(root)
    assert ns.repair() is ns
    assert len(ns.tables()) == n
    assert sorted(ns.to_table().column("id").to_pylist()) == [1, 2, 3, 4, 5]


def test_describe_runtime_properties(root: str, appendix_schema: dict) -> None:
    ns = PartitionedNamespace.create(root, appendix_schema, APPENDIX_SPEC_V1)
    ns.append(events([1], [dt.date(2025, 12, 10)], ["US"]))
    ns.add_spec(APPENDIX_SPEC_V2["fields"])
    ns.append(events([2], [dt.date(2025, 3, 1)], ["US"]))
    assert ns.describe(["v1"]) == {
        "properties": {"partition_spec": json.dumps(APPENDIX_SPEC_V1, separators=(",", ":"))}
    }
    v1_table = next(e for e in ns.tables() if e.spec_version == 1)
    name = v1_table.object_id.split("$")[1]
    assert ns.describe(["v1", name]) == {"properties": {"partition.event_date": "2025-12-10"}}
    v2_table = next(e for e in ns.tables() if e.spec_version == 2)
    _, first, second, _ = v2_table.object_id.split("$")
    assert ns.describe(["v2", first]) == {"properties": {"partition.event_year": "2025"}}
    assert ns.describe(["v2", first, second]) == {"properties": {"partition.country": "US"}}
    with pytest.raises(lance_sql.errors.LanceSqlError):
        ns.describe(["v3"])
    with pytest.raises(lance_sql.errors.LanceSqlError):
        ns.describe(["v1", "nosuchname"])


def test_manifest_without_location_column(tmp_path) -> None:
    root = str(tmp_path / "ns")
    ns = _namespace(root)
    rows = ns.snapshot.rows.drop_columns(["location"])
    schema = ns.snapshot.lance_schema
    schema = schema.remove(schema.get_field_index("location"))
    commit_rows(ns.snapshot, rows, schema=schema)
    reopened = PartitionedNamespace.open(root)  # derived from the table directories
    assert sorted(reopened.to_table().column("id").to_pylist()) == [1, 2, 3, 4, 5]
    assert [e.location for e in reopened.tables()] == [e.location for e in ns.tables()]
    reopened.append(pa.table({"id": [6], "country": ["US"], "k": [6]}))
    assert sorted(PartitionedNamespace.open(root).to_table().column("id").to_pylist()) == [
        1, 2, 3, 4, 5, 6,
    ]  # fmt: skip


def test_manifest_without_location_column_ambiguous_is_refused(tmp_path) -> None:
    root = str(tmp_path / "ns")
    ns = _namespace(root)
    victim = ns.tables()[0]
    rows = ns.snapshot.rows.drop_columns(["location"])
    schema = ns.snapshot.lance_schema
    commit_rows(ns.snapshot, rows, schema=schema.remove(schema.get_field_index("location")))
    shutil.copytree(victim.uri, os.path.join(root, "0000abcd_" + victim.object_id))
    with pytest.raises(FormatError) as err:
        PartitionedNamespace.open(root)
    assert victim.object_id in str(err.value) and "location" in str(err.value)
