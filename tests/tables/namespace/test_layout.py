"""Names and locations of a directory namespace (spec: Physical Layout and Naming)."""

from __future__ import annotations

import re

import pytest

from lance_sql.errors import UnsafeLocationError
from lance_sql.tables.namespace.layout import (
    random_namespace_name,
    resolve_location,
    root_uri,
    spec_namespace_version,
    spec_version_of,
    table_dir_name,
)


def test_random_namespace_names_are_16_base36_chars() -> None:
    names = {random_namespace_name() for _ in range(200)}
    assert len(names) == 200
    assert all(re.fullmatch(r"[a-z0-9]{16}", n) for n in names)


def test_table_dir_names_are_8_hex_then_object_id() -> None:
    oid = "v2$e9f0g1h2i3j4k5l6$m7n8o9p0q1r2s3t4$dataset"
    names = {table_dir_name(oid) for _ in range(50)}
    assert len(names) == 50  # random, like pylance's
    assert all(re.fullmatch(r"[0-9a-f]{8}_" + re.escape(oid), n) for n in names)


def test_spec_version_of_object_ids() -> None:
    assert spec_version_of("v2$abc$dataset") == 2
    assert spec_version_of("v10$x") == 10
    assert spec_version_of("v10") is None  # a table at the root named v10
    assert spec_namespace_version("v10") == 10
    assert spec_namespace_version("v10$x") is None
    assert spec_version_of("v0$x") is None
    assert spec_version_of("top") is None


@pytest.mark.parametrize(
    "location",
    [
        "/etc/passwd",
        "~/x",
        "../outside",
        "a/../../b",
        "a/./b",
        "s3://bucket/t",
        "file:///tmp/x",
        "C:/x",
        "a\\..\\b",
        "a//b",
        "",
        None,
    ],
)
def test_unsafe_locations_are_refused_naming_the_object(location: str | None) -> None:
    with pytest.raises(UnsafeLocationError) as err:
        resolve_location("/data/ns", location, "v1$abc$dataset")
    assert "v1$abc$dataset" in str(err.value)


def test_safe_locations_resolve_under_the_root() -> None:
    assert resolve_location("/data/ns", "1234abcd_v1$x$dataset", "v1$x$dataset") == (
        "/data/ns/1234abcd_v1$x$dataset"
    )
    assert resolve_location("s3://b/ns/", "top.lance", "top") == "s3://b/ns/top.lance"


def test_root_uri_normalizes_local_paths(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert root_uri(str(tmp_path) + "/") == str(tmp_path)
    assert root_uri("s3://bucket/ns/") == "s3://bucket/ns"
