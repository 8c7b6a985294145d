"""Datasets written by pylance for the format-layer tests, built once per session."""

from __future__ import annotations

import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.arrow import bfloat16_array

from lance_sql.format._pb import table_pb2


def all_types_table() -> pa.Table:
    """One column per logical type of lance-schema-format.txt (3 rows)."""
    n = 3
    struct_p = pa.struct([("p", pa.int64())])
    cols = {
        "null": pa.nulls(n),
        "bool": pa.array([True, False, None]),
        "int8": pa.array([1, 2, 3], pa.int8()),
        "uint8": pa.array([1, 2, 3], pa.uint8()),
        "int16": pa.array([1, 2, 3], pa.int16()),
        "uint16": pa.array([1, 2, 3], pa.uint16()),
        "int32": pa.array([1, 2, 3], pa.int32()),
        "uint32": pa.array([1, 2, 3], pa.uint32()),
        "int64": pa.array([1, 2, 3], pa.int64()),
        "uint64": pa.array([1, 2, 3], pa.uint64()),
        "halffloat": pa.array(np.array([1, 2, 3], dtype=np.float16)),
        "float": pa.array([1, 2, 3], pa.float32()),
        "double": pa.array([1, 2, 3], pa.float64()),
        "string": pa.array(["a", "b", None]),
        "large_string": pa.array(["a", "b", None], pa.large_string()),
        "binary": pa.array([b"a", b"b", None]),
        "large_binary": pa.array([b"a", b"b", None], pa.large_binary()),
        "decimal128": pa.array([1, 2, 3], pa.decimal128(10, 2)),
        "decimal256": pa.array([1, 2, 3], pa.decimal256(40, 5)),
        "date32": pa.array([1, 2, 3], pa.date32()),
        "date64": pa.array([86_400_000, 0, 0], pa.date64()),
        "time32_s": pa.array([1, 2, 3], pa.time32("s")),
        "time32_ms": pa.array([1, 2, 3], pa.time32("ms")),
        "time64_us": pa.array([1, 2, 3], pa.time64("us")),
        "time64_ns": pa.array([1, 2, 3], pa.time64("ns")),
        "ts_s": pa.array([1, 2, 3], pa.timestamp("s")),
        "ts_ms_ny": pa.array([1, 2, 3], pa.timestamp("ms", "America/New_York")),
        "ts_us_utc": pa.array([1, 2, 3], pa.timestamp("us", "UTC")),
        "ts_ns": pa.array([1, 2, 3], pa.timestamp("ns")),
        "dur_s": pa.array([1, 2, 3], pa.duration("s")),
        "dur_ms": pa.array([1, 2, 3], pa.duration("ms")),
        "dur_us": pa.array([1, 2, 3], pa.duration("us")),
        "dur_ns": pa.array([1, 2, 3], pa.duration("ns")),
        "fsb": pa.array([b"abcd"] * n, pa.binary(4)),
        "fsl_float": pa.FixedSizeListArray.from_arrays(
            pa.array(np.arange(12, dtype=np.float32)), 4
        ),
        "fsl_bf16": pa.FixedSizeListArray.from_arrays(bfloat16_array([1.0, 2.0] * 6), 4),
        "struct": pa.array([{"x": 1, "y": "a"}] * n),
        "list": pa.array([[1], [2, 3], None], pa.list_(pa.int32())),
        "large_list": pa.array([["a"], [], None], pa.large_list(pa.large_string())),
        "list_struct": pa.array([[{"p": 1}], [], None], pa.list_(struct_p)),
        "large_list_struct": pa.array([[{"p": 1}], [], None], pa.large_list(struct_p)),
        "map": pa.array([[("k", 1)], [], None], pa.map_(pa.string(), pa.int32())),
        "dict": pa.array(["a", "b", "a"])
        .dictionary_encode()
        .cast(pa.dictionary(pa.int16(), pa.string())),
        "nested": pa.array(
            [{"inner": {"z": [1.5]}, "tags": ["t"]}] * n,
            pa.struct(
                [
                    ("inner", pa.struct([("z", pa.list_(pa.float64()))])),
                    ("tags", pa.list_(pa.string())),
                ]
            ),
        ),
        # extension and nested-item types pylance maps on its own
        "json": pa.array(['{"a": 1}', None, "[]"], pa.json_(pa.string())),
        "uuid": pa.array([b"0" * 16, None, b"1" * 16], pa.uuid()),
        "blob": pa.array([b"x", b"y", None], pa.large_binary()),
        "fsl_struct": pa.FixedSizeListArray.from_arrays(pa.array([{"x": i} for i in range(6)]), 2),
        "fsl_fsl": pa.FixedSizeListArray.from_arrays(
            pa.FixedSizeListArray.from_arrays(pa.array(np.ones(12, np.float32)), 2), 2
        ),
        "dict_uint8": pa.array([1, 2, 1], pa.uint8()).dictionary_encode(),
    }
    table = pa.table(cols).replace_schema_metadata({"owner": "tests", "k": "v"})
    schema = table.schema
    i = schema.get_field_index("blob")
    schema = schema.set(i, schema.field(i).with_metadata({"lance-encoding:blob": "true"}))
    i = schema.get_field_index("bool")
    schema = schema.set(i, schema.field(i).with_metadata({"note": "field metadata"}))
    i = schema.get_field_index("int64")
    schema = schema.set(i, schema.field(i).with_nullable(False))
    return table.cast(schema)


@pytest.fixture(scope="session")
def all_types_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    uri = str(tmp_path_factory.mktemp("all_types") / "ds")
    lance.write_dataset(all_types_table(), uri)
    return uri


ROWS_PER_FILE = 8000


@pytest.fixture(scope="session")
def history_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A dataset with several versions, appends, sparse and dense deletions, added columns,
    a tag, table metadata and config.

    Versions: 1 write (3 fragments) / 2 append / 3 sparse delete / 4 dense delete
    (> 5000 rows of fragment 1, so a .bin file) / 5 add_columns / 6 table metadata /
    7 config. Tag ``before_deletes`` points at version 2.
    """
    uri = str(tmp_path_factory.mktemp("history") / "ds")
    n = 3 * ROWS_PER_FILE
    table = pa.table({"a": pa.array(np.arange(n), pa.int64()), "s": [f"r{i}" for i in range(n)]})
    lance.write_dataset(table, uri, max_rows_per_file=ROWS_PER_FILE)
    more = pa.table(
        {"a": pa.array(np.arange(n, n + 1000), pa.int64()), "s": ["x"] * 1000},
    )
    ds = lance.write_dataset(more, uri, mode="append")
    ds.tags.create("before_deletes", 2)
    ds.delete("a % 97 = 0")
    ds.delete(f"a >= {ROWS_PER_FILE + 100} and a < {2 * ROWS_PER_FILE - 100}")
    ds = lance.dataset(uri)
    ds.add_columns({"b": "a * 2"})
    ds = lance.dataset(uri)
    ds.update_metadata({"description": "history", "team": "format"})
    ds = lance.dataset(uri)
    ds.update_config({"custom.setting": "on"})
    return uri


@pytest.fixture()
def copy_dataset(tmp_path: Path) -> Callable[[str], str]:
    """Copy a session dataset into this test's tmp_path (for tests that damage it)."""

    def copy(uri: str) -> str:
        dst = tmp_path / f"copy{len(list(tmp_path.iterdir()))}"
        shutil.copytree(uri, dst)
        return str(dst)

    return copy


def split_manifest(data: bytes) -> tuple[bytes, table_pb2.Manifest, bytes]:
    """(bytes before the message, the parsed message, the 8-byte version+magic trailer)."""
    (pos,) = struct.unpack_from("<Q", data, len(data) - 16)
    (length,) = struct.unpack_from("<I", data, pos)
    manifest = table_pb2.Manifest.FromString(data[pos + 4 : pos + 4 + length])
    return data[:pos], manifest, data[-8:]


def join_manifest(prefix: bytes, manifest: table_pb2.Manifest, trailer: bytes) -> bytes:
    """Inverse of split_manifest, after the message was edited."""
    body = manifest.SerializeToString()
    return prefix + struct.pack("<I", len(body)) + body + struct.pack("<Q", len(prefix)) + trailer


def latest_manifest_path(uri: str) -> Path:
    """The newest manifest file of a V2-named dataset (sorted first)."""
    return sorted((Path(uri) / "_versions").glob("*.manifest"))[0]


@pytest.fixture()
def edit_manifest() -> Callable[[Path, Callable[[table_pb2.Manifest], None]], None]:
    """Rewrite a manifest file in place after ``fn`` edits its message."""

    def edit(path: Path, fn: Callable[[table_pb2.Manifest], None]) -> None:
        prefix, manifest, trailer = split_manifest(path.read_bytes())
        fn(manifest)
        path.write_bytes(join_manifest(prefix, manifest, trailer))

    return edit
