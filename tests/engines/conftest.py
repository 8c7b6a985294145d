"""Fixtures for the DataFusion engine tests: Lance datasets written by pylance."""

from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path

import lance
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.format._pb import table_pb2
from lance_sql.tables.namespace.namespace import PartitionedNamespace

_FOOTER = struct.Struct("<QHH4s")


def numbers_table(rows: int, *, offset: int = 0) -> pa.Table:
    """``id`` 0..rows-1 (+offset), ``x`` = id % 7 with some NULLs, ``s`` words, ``y`` floats."""
    ids = list(range(offset, offset + rows))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "x": pa.array([None if i % 11 == 0 else i % 7 for i in ids], pa.int64()),
            "s": pa.array([None if i % 13 == 0 else f"w{i % 5}" for i in ids], pa.string()),
            "y": pa.array([i / 10 for i in ids], pa.float64()),
        }
    )


@pytest.fixture
def write_lance(tmp_path: Path) -> Callable[..., str]:
    """Write ``table`` with pylance under ``tmp_path/name`` and return its uri."""

    def write(table: pa.Table, name: str = "t", **kwargs: object) -> str:
        uri = str(tmp_path / name)
        lance.write_dataset(table, uri, **kwargs)
        return uri

    return write


@pytest.fixture
def numbers_uri(write_lance: Callable[..., str]) -> str:
    """1000 rows in 10 fragments of 100 rows."""
    return write_lance(numbers_table(1000), "numbers", max_rows_per_file=100)


@pytest.fixture
def ctx() -> lance_sql.SessionContext:
    return lance_sql.SessionContext()


def set_reader_flag(uri: str, bit: int) -> Path:
    """Rewrite the latest manifest of ``uri`` with reader feature flag ``bit`` set.

    Keeps the bytes before the manifest message (inline transaction) and writes a
    new message and footer, as a writer from the future would.
    """
    manifests = sorted((Path(uri) / "_versions").glob("*.manifest"))
    path = manifests[0]  # V2 naming: u64::MAX - version, so the newest sorts first
    data = path.read_bytes()
    position, major, minor, magic = _FOOTER.unpack_from(data, len(data) - _FOOTER.size)
    (length,) = struct.unpack_from("<I", data, position)
    manifest = table_pb2.Manifest()
    manifest.ParseFromString(data[position + 4 : position + 4 + length])
    manifest.reader_feature_flags |= bit
    body = manifest.SerializeToString()
    path.write_bytes(
        data[:position]
        + struct.pack("<I", len(body))
        + body
        + _FOOTER.pack(position, major, minor, magic)
    )
    return path


@pytest.fixture(name="numbers_table")
def _numbers_table_fixture() -> Callable[..., pa.Table]:
    return numbers_table


@pytest.fixture(name="set_reader_flag")
def _set_reader_flag_fixture() -> Callable[[str, int], Path]:
    return set_reader_flag


@pytest.fixture(scope="module")
def appendix_f_roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """Appendix F (one copy per test module): orders (300 rows, bucket[16] on customer_id)
    and customers (51 rows, bucket[8] on id), NULL keys included."""
    tmp: Path = tmp_path_factory.mktemp("spj_sql")
    orders = PartitionedNamespace.create(
        str(tmp / "orders"),
        pa.schema(
            [
                pa.field("order_id", pa.int64()),
                pa.field("customer_id", pa.int64()),
                pa.field("amount", pa.float64()),
            ]
        ),
        [{"source": "customer_id", "transform": "bucket", "num_buckets": 16}],
    )
    customers = PartitionedNamespace.create(
        str(tmp / "customers"),
        pa.schema([pa.field("id", pa.int64()), pa.field("segment", pa.string())]),
        [{"source": "id", "transform": "bucket", "num_buckets": 8}],
    )
    n = 300
    keys = [None if i % 23 == 0 else (i * 7) % 60 if i % 3 else 1 for i in range(n)]
    orders.append(
        pa.table(
            {"order_id": list(range(n)), "customer_id": keys, "amount": [i / 4 for i in range(n)]}
        )
    )
    ids = [None, *range(0, 50)]
    customers.append(pa.table({"id": ids, "segment": [f"s{i % 3}" for i in range(len(ids))]}))
    return str(tmp / "orders"), str(tmp / "customers")
