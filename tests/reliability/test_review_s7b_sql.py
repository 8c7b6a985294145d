"""Adversarial review (session 7, second pass): CREATE TABLE ... TBLPROPERTIES."""

from __future__ import annotations

from pathlib import Path

import lance
import pytest

import lance_sql
from lance_sql.errors import UnsupportedFeatureError


def _create(tmp_path: Path, props: str) -> str:
    root = str(tmp_path / "ns")
    ctx = lance_sql.SessionContext()
    ctx.sql(
        f"CREATE TABLE t (id BIGINT, region VARCHAR) PARTITIONED BY (region) "
        f"LOCATION '{root}' TBLPROPERTIES ({props})"
    ).collect()
    ctx.sql("INSERT INTO t VALUES (1, 'a')").collect()
    return str(lance.dataset(lance_sql.PartitionedNamespace.open(root).tables()[0].uri)
               .data_storage_version)  # fmt: skip


def test_unquoted_dotted_property_key(tmp_path: Path) -> None:
    """Fixed in engines/datafusion/dml_create.py: Spark's unquoted key
    ``TBLPROPERTIES (lance_sql.data_storage_version = '2.0')`` was refused as
    "table property '' is not supported" (sqlglot parses it as a Dot)."""
    assert _create(tmp_path, "lance_sql.data_storage_version = '2.0'") == "2.0"


def test_a_property_given_twice_is_refused(tmp_path: Path) -> None:
    """Fixed in engines/datafusion/dml_create.py: the last of two values was taken
    silently (Spark refuses duplicate keys)."""
    with pytest.raises(UnsupportedFeatureError, match="twice"):
        _create(
            tmp_path,
            "'lance_sql.data_storage_version' = '2.0', 'lance_sql.data_storage_version' = '2.2'",
        )
