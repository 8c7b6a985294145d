"""Issue #16: writes accept view, large and dictionary variants of the namespace types.

The namespace stores its canonical type (the type its schema has); a namespace
created from a schema with view types stores the plain types. A failed first
``lance-sql import`` leaves no namespace behind.
"""

from __future__ import annotations

import os
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import lance_sql
from lance_sql.cli.main import main
from lance_sql.errors import SchemaMismatchError
from lance_sql.tables.namespace.namespace import PartitionedNamespace

from .conftest import sorted_rows

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("s", pa.utf8()),
        ("b", pa.binary()),
        ("ls", pa.large_utf8()),
        ("l", pa.list_(pa.int64())),
    ]
)
ROWS = [
    {"id": 1, "s": "US", "b": b"\x01", "ls": "x", "l": [1, 2]},
    {"id": 2, "s": "FR", "b": b"\x02", "ls": "y", "l": []},
    {"id": 3, "s": None, "b": None, "ls": None, "l": None},
]


def _variants() -> pa.Table:
    return pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "s": pa.array(["US", "FR", None], pa.string_view()),
            "b": pa.array([b"\x01", b"\x02", None], pa.binary_view()),
            "ls": pa.array(["x", "y", None], pa.utf8()),  # utf8 into large_utf8
            "l": pa.array([[1, 2], [], None], pa.large_list(pa.int64())),
        }
    )


@pytest.mark.parametrize("transform", ["identity", "bucket"])
def test_view_and_large_variants_append(root: str, transform: str) -> None:
    field = {"source": "s", "transform": transform}
    if transform == "bucket":
        field["num_buckets"] = 4
    ns = PartitionedNamespace.create(root, SCHEMA, [field])
    ns.append(_variants())
    ns.append(_variants().replace_schema_metadata(None).cast(
        pa.schema([("id", pa.int64()), ("s", pa.large_utf8()), ("b", pa.large_binary()),
                   ("ls", pa.large_utf8()), ("l", pa.list_(pa.int64()))])))  # fmt: skip
    dict_s = _variants().set_column(1, "s", pa.array(["US", "FR", None]).dictionary_encode())
    ns.append(dict_s)
    got = ns.to_table()
    assert got.schema.equals(ns.schema)
    assert sorted_rows(got) == sorted(ROWS * 3, key=lambda r: r["id"])
    for e in ns.tables():
        assert lance.dataset(e.uri).schema.field("s").type == pa.utf8()
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    assert ctx.sql("SELECT count(*) AS n FROM t WHERE s = 'US'").to_pylist() == [{"n": 3}]


def test_create_from_a_view_schema_stores_canonical_types(root: str) -> None:
    schema = pa.schema([("id", pa.int64()), ("s", pa.string_view()), ("b", pa.binary_view())])
    ns = PartitionedNamespace.create(root, schema, [{"source": "s", "transform": "identity"}])
    assert [f.type for f in ns.schema] == [pa.int64(), pa.utf8(), pa.binary()]
    ns.append(pa.table({"id": [1], "s": ["plain"], "b": [b"z"]}))  # ordinary strings work
    ns.append(pa.table({"id": pa.array([2]), "s": pa.array(["v"], pa.string_view()),
                        "b": pa.array([b"w"], pa.binary_view())}))  # fmt: skip
    assert sorted(ns.to_table().column("s").to_pylist()) == ["plain", "v"]


def test_other_types_are_still_refused(root: str) -> None:
    ns = PartitionedNamespace.create(root, SCHEMA, [{"source": "s", "transform": "identity"}])
    with pytest.raises(SchemaMismatchError, match="'s'"):
        ns.append(pa.table({"id": [1], "s": pa.array([1], pa.int64())}))


def test_import_parquet_with_string_view(tmp_path: Path) -> None:
    src = tmp_path / "v.parquet"
    pq.write_table(
        pa.table({"n": pa.array([1, 2, 3]), "name": pa.array(["a", "b", "a"], pa.string_view())}),
        src,
    )
    assert pq.ParquetFile(src).schema_arrow.field("name").type == pa.string_view()
    spec = tmp_path / "spec.json"
    spec.write_text('[{"source": "name", "transform": "identity"}]')
    root = tmp_path / "ns"
    assert main(["import", str(root), "--from", str(src), "--spec", str(spec)]) == 0
    ns = PartitionedNamespace.open(str(root))
    assert ns.schema.field("name").type == pa.utf8()
    assert sorted(ns.to_table().column("name").to_pylist()) == ["a", "a", "b"]
    assert main(["import", str(root), "--from", str(src)]) == 0  # append again
    assert ns.refresh().count_rows() == 6


def test_failed_first_import_leaves_no_namespace(tmp_path: Path) -> None:
    src = tmp_path / "bad.csv"
    src.write_text("n,name\n1,a\nnot-a-number,b\n")
    schema = tmp_path / "schema.json"
    schema.write_text(
        '{"fields": [{"name": "n", "nullable": true, "type": {"type": "int64"}},'
        ' {"name": "name", "nullable": true, "type": {"type": "utf8"}}]}'
    )
    spec = tmp_path / "spec.json"
    spec.write_text('[{"source": "name", "transform": "identity"}]')
    root = tmp_path / "ns"
    args = ["import", str(root), "--from", str(src), "--spec", str(spec), "--schema", str(schema)]
    assert main(args) == 1
    assert not root.exists()
    os.makedirs(root)
    (root / "keep.txt").write_text("mine")
    assert main(args) == 1
    assert sorted(os.listdir(root)) == ["keep.txt"]
