"""Spark MERGE on a namespace with a blob column keeps or replaces the bytes as ns.merge does."""

from __future__ import annotations

import pyarrow as pa
import pytest
from test_blobs_spark import _namespace

import lance_sql.engines.spark as lance_spark
from lance_sql import PartitionedNamespace

pytestmark = pytest.mark.spark


def _state(root: str) -> list[tuple[int, str, bytes | None, int | None]]:
    """(id, region, bytes, descriptor size) of every row, by id."""
    ns = PartitionedNamespace.open(root)
    rows = ns.blob_rows(None, columns=["id", "region"]).sort_by("id")
    data = ns.read_blobs("payload", rows)
    sizes = {r["id"]: r["payload"]["size"] for r in ns.to_table().to_pylist() if r["payload"]}
    return [
        (i, region, b, sizes.get(i))
        for i, region, b in zip(
            rows.column("id").to_pylist(), rows.column("region").to_pylist(), data, strict=True
        )
    ]


CASES = {
    # the source has no payload: matched rows keep their bytes, inserted rows get NULL
    "without-payload": (
        pa.table({"id": [1, 2, 9], "region": ["us", "us", "eu"]}),
        {"when_matched_update": True, "when_not_matched_insert": True},
    ),
    # the source gives bytes: they replace the matched rows' and are inserted
    "with-payload": (
        pa.table(
            {"id": [3, 8], "region": ["eu", "us"], "payload": [b"new" * 500, b"inserted"]},
            schema=pa.schema(
                [("id", pa.int64()), ("region", pa.string()), ("payload", pa.binary())]
            ),
        ),
        {"when_matched_update": True, "when_not_matched_insert": True},
    ),
    "delete": (pa.table({"id": [2]}), {"when_matched_delete": True}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_spark_merge_keeps_blob_bytes_like_python(spark, tmp_path, name):
    source, clauses = CASES[name]
    py, sp = str(tmp_path / "py"), str(tmp_path / "spark")
    _namespace(py).merge(source, on=["id"], **clauses)
    _namespace(sp)
    ddl = ", ".join(
        f"{f.name} {'binary' if f.name == 'payload' else 'long' if f.name == 'id' else 'string'}"
        for f in source.schema
    )
    df = spark.createDataFrame(source.to_pylist(), ddl)
    lance_spark.merge(spark, sp, df, on=["id"], **clauses)
    assert _state(sp) == _state(py)
    assert {i: b for i, _, b, _ in _state(sp)} == EXPECTED[name]


BEFORE = {1: b"abc", 2: b"defg" * 1000, 3: b""}
EXPECTED = {
    "without-payload": {**BEFORE, 9: None},
    "with-payload": {**BEFORE, 3: b"new" * 500, 8: b"inserted"},
    "delete": {1: b"abc", 3: b""},
}
