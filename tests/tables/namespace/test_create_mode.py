"""``PartitionedNamespace.create(mode=...)``, ``CREATE TABLE IF NOT EXISTS`` and the
typed errors for a path holding the wrong thing (a file, a dataset, a namespace)."""

from __future__ import annotations

import os
import subprocess
import sys

import lance
import pyarrow as pa
import pytest

import lance_sql
from lance_sql import CommitConflictError, PartitionedNamespace
from lance_sql.errors import (
    IsADatasetError,
    IsANamespaceError,
    LanceSqlError,
    NamespaceExistsError,
    PathIsAFileError,
)

SCHEMA = pa.schema([("k", pa.int64()), ("region", pa.utf8())])
ROWS = pa.table({"k": [1, 2, 3], "region": ["eu", "us", "eu"]}, schema=SCHEMA)


def _one_line_and_no_rust(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text and ".rs:" not in text and "LanceError" not in text, text
    return text


def test_create_default_mode_refuses_an_existing_namespace(tmp_path):
    root = tmp_path / "ns"
    PartitionedNamespace.create(root, SCHEMA, "identity(region)")
    with pytest.raises(NamespaceExistsError) as info:
        PartitionedNamespace.create(root, SCHEMA, "identity(region)")
    assert isinstance(info.value, CommitConflictError)  # what callers caught before
    text = _one_line_and_no_rust(info.value)
    assert str(root) in text and "exist_ok" in text and "overwrite" in text


def test_create_exist_ok_returns_the_namespace_unchanged(tmp_path):
    root = tmp_path / "ns"
    ns = PartitionedNamespace.create(root, SCHEMA, "identity(region)")
    ns.append(ROWS)
    again = PartitionedNamespace.create(root, SCHEMA, "identity(region)", mode="exist_ok")
    assert again.manifest_version == PartitionedNamespace.open(root).manifest_version
    assert again.to_table().sort_by("k").equals(ROWS)


def test_create_overwrite_replaces_the_namespace(tmp_path):
    root = tmp_path / "ns"
    PartitionedNamespace.create(root, SCHEMA, "identity(region)").append(ROWS)
    ns = PartitionedNamespace.create(root, SCHEMA, "bucket(4, k)", mode="overwrite")
    assert ns.to_table().num_rows == 0
    assert [f.field_id for f in ns.current_spec.fields] == ["k_bucket_4"]
    ns.append(ROWS)
    assert PartitionedNamespace.open(root).to_table().num_rows == 3


def test_create_refuses_an_unknown_mode(tmp_path):
    with pytest.raises(ValueError, match="mode"):
        PartitionedNamespace.create(tmp_path / "ns", SCHEMA, "identity(region)", mode="replace")


@pytest.mark.parametrize("mode", ["create", "exist_ok", "overwrite"])
def test_create_on_an_existing_file_is_a_typed_one_line_error(tmp_path, mode):
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    with pytest.raises(PathIsAFileError) as info:
        PartitionedNamespace.create(afile, SCHEMA, "identity(region)", mode=mode)
    assert "existing file" in _one_line_and_no_rust(info.value)
    assert afile.read_text() == "not a folder"


@pytest.mark.parametrize("mode", ["create", "overwrite"])
def test_create_on_a_dataset_says_it_is_a_dataset_and_deletes_nothing(tmp_path, mode):
    uri = str(tmp_path / "ds.lance")
    lance.write_dataset(ROWS, uri)
    with pytest.raises(IsADatasetError) as info:
        PartitionedNamespace.create(uri, SCHEMA, "identity(region)", mode=mode)
    assert "register_lance" in _one_line_and_no_rust(info.value)
    assert lance.dataset(uri).count_rows() == 3


def test_opening_a_dataset_as_a_namespace_hints_register_lance(tmp_path):
    uri = str(tmp_path / "ds.lance")
    lance.write_dataset(ROWS, uri)
    with pytest.raises(IsADatasetError) as info:
        PartitionedNamespace.open(uri)
    text = _one_line_and_no_rust(info.value)
    assert "this is a Lance dataset" in text and "--lance" in text and "register_lance" in text
    ctx = lance_sql.SessionContext()
    with pytest.raises(IsADatasetError, match="register_lance"):
        ctx.register_namespace("t", uri)


def test_registering_a_namespace_as_a_dataset_hints_register_namespace(tmp_path):
    root = tmp_path / "ns"
    PartitionedNamespace.create(root, SCHEMA, "identity(region)").append(ROWS)
    ctx = lance_sql.SessionContext()
    with pytest.raises(IsANamespaceError) as info:
        ctx.register_lance("t", str(root))
    text = _one_line_and_no_rust(info.value)
    assert "this is a partitioned namespace" in text and "--ns" in text
    assert "register_namespace" in text
    assert isinstance(info.value, LanceSqlError)


def test_create_table_if_not_exists_keeps_an_existing_namespace(tmp_path):
    loc = str(tmp_path / "daily")
    ddl = (
        "CREATE TABLE IF NOT EXISTS daily (k BIGINT, region VARCHAR) "
        f"PARTITIONED BY (identity(region)) LOCATION '{loc}'"
    )
    ctx = lance_sql.SessionContext()
    ctx.sql(ddl)
    ctx.sql("INSERT INTO daily VALUES (1, 'eu'), (2, 'us')").collect()
    fresh = lance_sql.SessionContext()  # a second run of the same script
    fresh.sql(ddl)
    got = fresh.sql("SELECT k, region FROM daily ORDER BY k").to_arrow_table()
    assert got.column("k").to_pylist() == [1, 2]
    with pytest.raises(NamespaceExistsError):
        lance_sql.SessionContext().sql(ddl.replace(" IF NOT EXISTS", ""))


def test_pylance_warn_lines_do_not_reach_stderr(tmp_path):
    """pylance logs `WARN ... No existing dataset at ..., it will be created` unless quieted."""
    code = (
        "import lance_sql, lance, pyarrow as pa\n"
        "lance.write_dataset(pa.table({'x': [1]}), 'new.lance', mode='append')\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "LANCE_LOG"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "WARN" not in out.stderr and "No existing dataset" not in out.stderr
    env["LANCE_LOG"] = "warn"  # asked for: shown
    out = subprocess.run(
        [sys.executable, "-c", code.replace("new.lance", "again.lance")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert "No existing dataset" in out.stderr
