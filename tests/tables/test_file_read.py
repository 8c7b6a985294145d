"""Small tables read from their data files without a scanner (tables/file_read.py).

Differential: every read through :class:`LanceFragmentsUnit` (direct or
scanned) equals pylance's own ``to_table`` of the same dataset version, over
deletions, updates, schema evolution, nested and vector columns, NULLs, blob
columns and data storage versions 2.0 / 2.1 / 2.2. The tests also check which
route was taken, so a table the file reader cannot read exactly is never read
by it.
"""

from __future__ import annotations

import random

import lance
import numpy as np
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.tables.blob_columns import dataset_read_schema
from lance_sql.tables.file_read import DIRECT_MAX_ROWS
from lance_sql.tables.fragments_unit import LanceFragmentsUnit


def _table(n: int, seed: int, null_structs: bool = True) -> pa.Table:
    rng = random.Random(seed)
    ids = list(range(seed * 1000, seed * 1000 + n))
    maybe = lambda v: None if rng.random() < 0.2 else v  # noqa: E731
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "x": pa.array([maybe(rng.randint(-50, 50)) for _ in ids], pa.int32()),
            "f": pa.array([maybe(rng.random()) for _ in ids], pa.float64()),
            "s": pa.array([maybe(f"v{rng.randint(0, 9)}") for _ in ids]),
            "st": pa.array(
                [
                    (maybe if null_structs else _id)({"a": rng.randint(0, 5), "b": maybe("q")})
                    for _ in ids
                ],
                pa.struct([("a", pa.int64()), ("b", pa.string())]),
            ),
            "l": pa.array([maybe([rng.randint(0, 3)] * rng.randint(0, 3)) for _ in ids]),
            "v": pa.FixedSizeListArray.from_arrays(pa.array(np.arange(4 * n, dtype=np.float32)), 4),
        }
    )


def _id(v: object) -> object:
    return v


def _unit(ds: lance.LanceDataset) -> LanceFragmentsUnit:
    ids = [f.fragment_id for f in ds.get_fragments()]
    return LanceFragmentsUnit(ds, ids, schema=dataset_read_schema(ds.schema))


def _read(unit: LanceFragmentsUnit, columns: list[str] | None) -> pa.Table:
    return pa.Table.from_batches(list(unit.to_batches(columns, None, 3)))


def _same(ours: pa.Table, theirs: pa.Table) -> None:
    assert ours.column_names == theirs.column_names
    key = "id" if "id" in ours.column_names else ours.column_names[0]
    assert ours.sort_by(key).to_pylist() == theirs.sort_by(key).to_pylist()
    for a, b in zip(ours.schema, theirs.schema, strict=True):
        assert a.type.equals(b.type), (a, b)


def _check(ds: lance.LanceDataset, *, direct: bool) -> None:
    """Two reads (the first checks the file schema, the next projects) equal pylance's."""
    unit = _unit(ds)
    for columns in (None, ["id", "x"], ["st", "l", "id"], None, ["v", "id"]):
        cols = columns or [f.name for f in ds.schema]
        theirs = ds.to_table(columns=cols)
        _same(_read(unit, columns), theirs)
    assert isinstance(unit._direct, list) == direct


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_direct_read_equals_pylance_across_storage_versions(tmp_path, version) -> None:
    nulls = version != "2.0"  # 2.0 files cannot hold NULL structs
    ds = lance.write_dataset(_table(40, 1, nulls), tmp_path / "t", data_storage_version=version)
    ds = lance.write_dataset(_table(30, 2, nulls), tmp_path / "t", mode="append")
    _check(ds, direct=True)


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_deletions_and_updates_are_applied(tmp_path, version) -> None:
    data = _table(200, 3, version != "2.0")
    ds = lance.write_dataset(data, tmp_path / "t", data_storage_version=version)
    ds.delete("x > 10")
    ds.delete("id % 7 = 0")
    ds.update({"s": "'updated'"}, where="id % 5 = 1")
    ds = lance.dataset(tmp_path / "t")
    assert any(f.metadata.deletion_file is not None for f in ds.get_fragments())
    _check(ds, direct=True)
    # a many-row delete (pylance may store it as a bitmap) and reading an older version
    old = ds.version
    ds.delete("id % 2 = 0")
    _check(lance.dataset(tmp_path / "t"), direct=True)
    _check(lance.dataset(tmp_path / "t", version=old), direct=True)


def test_evolved_schemas_are_scanned_and_equal_pylance(tmp_path) -> None:
    uri = tmp_path / "t"
    ds = lance.write_dataset(_table(20, 4), uri)
    ds.add_columns({"z": "id * 2"})  # a second data file: scanned
    _check(lance.dataset(uri), direct=False)

    ds = lance.write_dataset(_table(20, 5), tmp_path / "d", data_storage_version="2.2")
    ds.drop_columns(["f"])  # the file still holds f
    _check(lance.dataset(tmp_path / "d"), direct=False)

    ds = lance.write_dataset(_table(20, 6), tmp_path / "r")
    ds.alter_columns({"path": "x", "name": "x2"})  # the file names x
    unit = _unit(lance.dataset(tmp_path / "r"))
    _same(_read(unit, None), lance.dataset(tmp_path / "r").to_table())
    assert unit._direct is None

    # dropped, then added again under the same name and type without data: all NULL
    ds = lance.write_dataset(_table(20, 7), tmp_path / "n")
    ds.drop_columns(["x"])
    ds.add_columns(pa.field("x", pa.int32()))
    ds = lance.dataset(tmp_path / "n")
    unit = _unit(ds)
    ours = _read(unit, ["id", "x"])
    assert ours.column("x").null_count == 20
    _same(ours, ds.to_table(columns=["id", "x"]))
    assert unit._direct is None


def test_large_tables_and_blobs_use_the_scanner(tmp_path) -> None:
    ds = lance.write_dataset(_table(DIRECT_MAX_ROWS + 1, 8), tmp_path / "big")
    _check(ds, direct=False)
    blob = pa.field("b", pa.large_binary(), metadata={"lance-encoding:blob": "true"})
    data = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "b": [b"x", None, b"yz"]},
                    schema=pa.schema([pa.field("id", pa.int64()), blob]))  # fmt: skip
    ds = lance.write_dataset(data, tmp_path / "blob")
    unit = _unit(ds)
    assert _read(unit, ["id"]).column("id").to_pylist() == [1, 2, 3]
    assert unit._direct is None


def test_namespace_full_scan_equals_each_table_read_by_pylance(tmp_path) -> None:
    """SQL over a namespace of small tables with deletions equals pylance per pinned table."""
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    schema = pa.schema([("p", pa.int32()), ("id", pa.int64()), ("x", pa.float64())])
    spec = {
        "id": 1,
        "fields": [
            {
                "field_id": "p",
                "source_ids": [0],
                "transform": {"type": "identity"},
                "result_type": {"type": "int32"},
            }
        ],
    }
    ns = PartitionedNamespace.create(str(tmp_path / "ns"), schema, spec)
    n = 300
    ps = pa.array([i % 30 for i in range(n)], pa.int32())
    xs = [None if i % 11 == 0 else i / 3 for i in range(n)]
    ns.append(pa.table({"p": ps, "id": pa.array(range(n), pa.int64()), "x": xs}, schema=schema))
    ns.delete("id % 4 = 1")
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", str(tmp_path / "ns"))
    ours = ctx.sql("SELECT id, p, x FROM t").to_arrow_table()
    theirs = pa.concat_tables(
        lance.dataset(e.uri, version=e.read_version).to_table(columns=["id", "p", "x"])
        for e in PartitionedNamespace.open(str(tmp_path / "ns")).tables()
    )
    assert ours.num_rows == n - n // 4 == theirs.num_rows
    _same(ours, theirs)
    again = ctx.sql("SELECT count(*) AS c, sum(x) AS s FROM t").to_pylist()[0]
    assert again["c"] == theirs.num_rows
    assert again["s"] == pytest.approx(sum(v for v in theirs.column("x").to_pylist() if v))


def test_bitmap_deletion_files_are_applied(tmp_path) -> None:
    ds = lance.write_dataset(_table(8000, 9), tmp_path / "t", data_storage_version="2.1")
    ds.delete("id % 8 != 3")  # 7,000 deleted rows: stored as a roaring bitmap
    ds = lance.dataset(tmp_path / "t")
    assert ds.get_fragment(0).metadata.deletion_file.file_type == "bitmap"
    _check(ds, direct=True)


def test_units_read_directly_are_not_started_ahead(tmp_path) -> None:
    """A chain starts a unit's scan ahead on its pool only when the unit uses a scanner."""
    import pyarrow.compute as pc

    unit = _unit(lance.write_dataset(_table(10, 10), tmp_path / "t"))
    assert unit.starts_ahead(None)  # not known yet: the first read decides
    _read(unit, ["id"])
    assert not unit.starts_ahead(None)
    assert unit.starts_ahead(pc.field("x") > 0)  # filtered reads use the scanner


def test_paths_the_file_reader_spells_differently_still_read_right(tmp_path) -> None:
    """Lance percent-encodes such paths for its file reader: the scanner reads them."""
    ds = lance.write_dataset(_table(12, 11), tmp_path / "a b%c" / "tä ble")
    _check(ds, direct=False)


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("n", [1, 3, 257, 600])
def test_take_of_every_row_equals_pylance_read_all(tmp_path, version, n) -> None:
    """A small file is read by a take of all its row numbers (a larger one by
    ``read_all``): the same rows, names and types as pylance's ``read_all``, for every
    column kind and projection."""
    from lance.file import LanceFileReader

    from lance_sql.tables.file_read import _read_whole

    table = _table(n, 5, version != "2.0")
    ds = lance.write_dataset(table, tmp_path / "t", data_storage_version=version)
    (fragment,) = ds.get_fragments()
    path = f"{tmp_path}/t/data/{fragment.metadata.files[0].path}"
    for columns in (None, ["id"], ["st", "l", "v"], ["s", "x", "f"]):
        reader = LanceFileReader(path, columns=columns)
        expected = reader.read_all(batch_size=DIRECT_MAX_ROWS).to_table()
        got = _read_whole(LanceFileReader(path, columns=columns))
        assert got.schema.equals(expected.schema)
        assert got.to_pylist() == expected.to_pylist()
