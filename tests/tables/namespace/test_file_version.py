"""The Lance file format of the partition tables a namespace creates (``data_storage_version``)."""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.errors import SpecError, UnsupportedFeatureError
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.namespace.properties import DATA_STORAGE_VERSION_KEY

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])


def rows(keys: range | list[int]) -> pa.Table:
    return pa.table({"k": list(keys), "v": [f"v{k}" for k in keys]}, schema=SCHEMA)


def file_versions(ns: PartitionedNamespace) -> set[tuple[str, tuple[int, int]]]:
    """(declared table format, data file version) of every partition table's files."""
    out = set()
    for row in ns.snapshot.rows.to_pylist():
        if row["object_type"] != "table":
            continue
        ds = lance.dataset(f"{ns.root}/{row['location']}")
        for frag in ds.get_fragments():
            for f in frag.metadata.files:
                out.add((ds.data_storage_version, (f.file_major_version, f.file_minor_version)))
    return out


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_every_write_path_creates_tables_in_the_namespace_format(
    tmp_path: Path, version: str
) -> None:
    ns = PartitionedNamespace.create(
        str(tmp_path / "ns"), SCHEMA, "bucket(4, k)", data_storage_version=version
    )
    assert ns.snapshot.properties[DATA_STORAGE_VERSION_KEY] == version
    ns.append(rows(range(0, 50)))
    ns.append(rows(range(50, 120)))  # appends to existing tables
    replaced = _partition_keys(ns, {1, 2, 3})
    ns.overwrite(rows([1, 2, 3]), partitions="dynamic")
    staged = PartitionedNamespace.open(ns.root).stage(rows(range(200, 230)), write_id="j")
    ns.refresh().commit_staged([staged])
    ns.delete("k = 200")
    major, minor = (int(x) for x in version.split("."))
    assert file_versions(ns.refresh()) == {(version, (major, minor))}
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", ns.root)
    got = ctx.sql("SELECT k FROM t ORDER BY k").to_pydict()["k"]
    assert got == sorted(({*range(0, 120)} - replaced) | {1, 2, 3} | {*range(201, 230)})


def _partition_keys(ns: PartitionedNamespace, keys: set[int]) -> set[int]:
    """Every key held by the partition tables that hold one of ``keys``."""
    out: set[int] = set()
    for row in ns.snapshot.rows.to_pylist():
        if row["object_type"] == "table":
            held = set(lance.dataset(f"{ns.root}/{row['location']}").to_table()["k"].to_pylist())
            if held & keys:
                out |= held
    return out


def test_default_is_pylance_default_and_bad_versions_are_refused(tmp_path: Path) -> None:
    ns = PartitionedNamespace.create(str(tmp_path / "ns"), SCHEMA, "bucket(2, k)")
    assert DATA_STORAGE_VERSION_KEY not in ns.snapshot.properties
    ns.append(rows(range(10)))
    default = lance.write_dataset(rows([1]), str(tmp_path / "plain.lance")).data_storage_version
    assert {d for d, _ in file_versions(ns)} == {default}
    with pytest.raises(SpecError, match=r"data_storage_version '3\.0'"):
        PartitionedNamespace.create(
            str(tmp_path / "bad"), SCHEMA, "bucket(2, k)", data_storage_version="3.0"
        )
    assert not (tmp_path / "bad").exists()


def test_sql_create_table_tblproperties(tmp_path: Path) -> None:
    ctx = lance_sql.SessionContext()
    ctx.sql(
        f"CREATE TABLE e (k BIGINT, v VARCHAR) PARTITIONED BY (bucket(4, k)) "
        f"LOCATION '{tmp_path / 'e'}' TBLPROPERTIES ('lance_sql.data_storage_version' = '2.0')"
    )
    ctx.sql("INSERT INTO e VALUES (1, 'a'), (2, 'b'), (3, 'c')").collect()
    ns = PartitionedNamespace.open(str(tmp_path / "e"))
    assert {d for d, _ in file_versions(ns)} == {"2.0"}
    assert ctx.sql("SELECT count(*) AS n FROM e").to_pydict()["n"] == [3]
    with pytest.raises(UnsupportedFeatureError, match="table property 'x'"):
        ctx.sql(
            f"CREATE TABLE f (k BIGINT) PARTITIONED BY (k) LOCATION '{tmp_path / 'f'}' "
            "TBLPROPERTIES ('x' = 'y')"
        )
    assert not (tmp_path / "f").exists()
