"""View (string_view, binary_view) and large types on every write path.

Each operation runs twice, on two namespaces holding the same rows: once with
the source in plain types, once in view or large types. Both must leave the
same rows (the plain run is the reference; it goes through paths other
tests check against DuckDB and plain DataFusion).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lance_sql import PartitionedNamespace, SessionContext

SCHEMA = pa.schema(
    [("id", pa.int64()), ("region", pa.string()), ("name", pa.string()), ("b", pa.binary())]
)
SPEC = [{"source": "region", "transform": "identity"}]
VARIANTS = {
    "view": (pa.string_view(), pa.binary_view()),
    "large": (pa.large_string(), pa.large_binary()),
}


def _source(ids, regions, names, blobs, variant=None) -> pa.Table:
    s, b = VARIANTS[variant] if variant else (pa.string(), pa.binary())
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "region": pa.array(regions, s),
            "name": pa.array(names, s),
            "b": pa.array(blobs, b),
        }
    )


def _namespace(path) -> PartitionedNamespace:
    ns = PartitionedNamespace.create(path, SCHEMA, SPEC)
    ns.append(_source([1, 2], ["eu", "us"], ["a", "b"], [b"x", b"y"]))
    return ns


def _rows(ns) -> list[dict]:
    return ns.refresh().to_table().sort_by([("id", "ascending"), ("name", "ascending")]).to_pylist()


OPERATIONS = {
    "merge": lambda ns, src: ns.merge(
        src, on=["id"], when_matched_update=True, when_not_matched_insert=True
    ),
    "merge_on_two_keys": lambda ns, src: ns.merge(
        src, on=["id", "region"], when_matched_update=True, when_not_matched_insert=True
    ),
    "append": lambda ns, src: ns.append(src),
    "overwrite": lambda ns, src: ns.overwrite(src),
    "overwrite_dynamic": lambda ns, src: ns.overwrite(src, partitions="dynamic"),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_python_write_paths_take_view_and_large_types(tmp_path, operation, variant):
    plain, other = _namespace(tmp_path / "plain"), _namespace(tmp_path / "other")
    args = ([2, 3], ["us", "eu"], ["B", "C"], [b"Y", b"Z"])
    OPERATIONS[operation](plain, _source(*args))
    OPERATIONS[operation](other, _source(*args, variant=variant))
    assert _rows(other) == _rows(plain)
    assert other.schema == plain.schema


def test_sql_writes_take_view_types(tmp_path):
    results = []
    for name, cast in (("plain", "Utf8"), ("view", "Utf8View")):
        ns = _namespace(tmp_path / name)
        ctx = SessionContext()
        ctx.register_namespace("n", str(tmp_path / name))
        blob_type = "Binary" if cast == "Utf8" else "BinaryView"
        ctx.sql(
            f"INSERT INTO n SELECT 9 AS id, arrow_cast('eu', '{cast}') AS region, "
            f"arrow_cast('z', '{cast}') AS name, arrow_cast(X'00', '{blob_type}') AS b"
        ).collect()
        ctx.sql(f"UPDATE n SET name = arrow_cast('q', '{cast}') WHERE id = 1").collect()
        src = _source(
            [2, 5], ["us", "eu"], ["m", "n"], [b"1", b"2"], "view" if name == "view" else None
        )
        ctx.register_record_batches("s", [src.to_batches()])
        ctx.sql(
            "MERGE INTO n USING s ON n.id = s.id WHEN MATCHED THEN UPDATE SET name = s.name "
            "WHEN NOT MATCHED THEN INSERT (id, region, name, b) "
            "VALUES (s.id, s.region, s.name, s.b)"
        ).collect()
        results.append(_rows(ns))
    assert results[0] == results[1]
