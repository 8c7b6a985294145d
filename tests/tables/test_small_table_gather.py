"""Many small partition tables read together (tables/chain.py's gathered route) and
file readers kept between reads (tables/file_read.py): repeated, concurrent and
evolved-schema scans of a namespace equal plain DataFusion over the partition tables
read by pylance, and a kept reader never serves a file that changed.
"""

from __future__ import annotations

import threading

import datafusion
import lance
import pyarrow as pa
import pytest
from lance.file import LanceFileWriter
from small_partitions import SCHEMA as _SCHEMA
from small_partitions import rows

import lance_sql
from lance_sql.tables import chain, file_read
from lance_sql.tables.dataset_cache import PerProcess
from lance_sql.tables.file_read import DataFileRead, read_direct
from lance_sql.tables.namespace.namespace import PartitionedNamespace

_SPEC = "identity(p)"

_QUERIES = [
    "SELECT count(*) AS c, sum(id) AS si FROM t",
    "SELECT * FROM t ORDER BY id",
    "SELECT s, id FROM t ORDER BY id",
    "SELECT p, count(*) AS c, sum(x) AS sx FROM t GROUP BY p ORDER BY p",
    "SELECT x FROM t ORDER BY x NULLS FIRST",
]


def _rows(start: int, n: int, parts: int) -> pa.Table:
    return rows(start, n, parts, x_div=4)


def _namespace(root: str, parts: int = 40) -> PartitionedNamespace:
    """``parts`` tiny partition tables, some with deletion vectors, one updated."""
    ns = PartitionedNamespace.create(root, _SCHEMA, _SPEC)
    ns.append(_rows(0, 3 * parts, parts))
    ns.append(_rows(1000, parts // 2, parts))
    ns.delete("id % 5 = 1")
    ns.update({"s": "'u'"}, where="id % 9 = 0")
    return ns


def _reference(root: str, queries: list[str]) -> list[list[dict]]:
    """The queries on plain DataFusion over every partition table read by pylance."""
    ns = PartitionedNamespace.open(root)
    parts = [
        lance.dataset(e.uri, version=e.read_version).to_table(columns=_SCHEMA.names)
        for e in ns.tables()
    ]
    ref = datafusion.SessionContext()
    ref.register_record_batches("t", [pa.concat_tables(parts).cast(_SCHEMA).to_batches()])
    return [ref.sql(q).to_arrow_table().to_pylist() for q in queries]


def _rounded(rows: list[dict]) -> list[dict]:
    return [{k: round(v, 6) if isinstance(v, float) else v for k, v in r.items()} for r in rows]


def _gathers(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the batches the gathered route builds (a spy around ``chain._combined``)."""
    calls: list[int] = []
    combined = chain._combined

    def spy(tables, schema, batch_size):  # type: ignore[no-untyped-def]
        calls.append(len(tables))
        return combined(tables, schema, batch_size)

    monkeypatch.setattr(chain, "_combined", spy)
    return calls


def test_repeated_scans_gather_small_tables_and_equal_datafusion(tmp_path, monkeypatch):
    """Every query, run three times on one context (the first read of each table checks
    its files, later ones gather them in groups of 3), equals plain DataFusion."""
    root = str(tmp_path / "ns")
    _namespace(root)
    expected = _reference(root, _QUERIES)
    monkeypatch.setattr(chain, "GATHER", 3)
    calls = _gathers(monkeypatch)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    for _ in range(3):
        for q, want in zip(_QUERIES, expected, strict=True):
            assert _rounded(ctx.sql(q).to_arrow_table().to_pylist()) == _rounded(want), q
    assert calls and max(calls) > 1, "the gathered route was not taken"


def test_concurrent_scans_share_kept_tables(tmp_path):
    """8 threads scanning one namespace at once (sharing what is kept) get the same rows
    as plain DataFusion, every time."""
    root = str(tmp_path / "ns")
    _namespace(root, parts=60)
    queries = _QUERIES[1:4]
    expected = [_rounded(r) for r in _reference(root, queries)]
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    ctx.sql(queries[0]).to_arrow_table()  # the check reads
    errors: list[BaseException] = []
    results: list[list[list[dict]]] = []

    def work() -> None:
        try:
            for _ in range(6):
                results.append([_rounded(ctx.sql(q).to_arrow_table().to_pylist()) for q in queries])
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert len(results) == 48 and all(r == expected for r in results)


def test_evolved_tables_mixed_with_small_ones_read_the_same_with_the_route_off(
    tmp_path, monkeypatch
):
    """A column renamed and added: older tables are read through a column mapping (not
    gathered), newer ones gathered; twice over, every answer equals the scanner route."""
    root = str(tmp_path / "ns")
    ns = _namespace(root, parts=12)
    ns.rename_column("s", "s2")
    ns.add_columns([pa.field("z", pa.int64())])
    new = _rows(5000, 30, 24).rename_columns(["p", "id", "x", "s2"])
    ns.append(new.append_column("z", pa.array(range(30), pa.int64())))
    queries = ["SELECT * FROM t ORDER BY id", "SELECT z, s2, id FROM t ORDER BY id"]
    monkeypatch.setattr(chain, "GATHER", 4)
    calls = _gathers(monkeypatch)

    def run() -> list[list[dict]]:
        ctx = lance_sql.SessionContext()
        ctx.register_namespace("t", root)
        return [ctx.sql(q).to_arrow_table().to_pylist() for q in queries * 2]

    ours = run()
    assert calls, "the gathered route was not taken"
    with monkeypatch.context() as m:
        m.setattr(file_read, "DIRECT_MAX_ROWS", 0)
        m.setattr(file_read, "DIRECT_MAX_BYTES", 0)
        scanned = run()
    assert ours == scanned
    assert len(ours[0]) == 3 * 12 + 6 - 8 + 30  # (ids 1, 6, ..., 31 and 1001 deleted)


def _write_file(path: str, values: list[int]) -> None:
    with LanceFileWriter(path) as writer:
        writer.write_batch(pa.table({"a": pa.array(values, pa.int64())}))


def test_kept_rows_are_not_used_for_a_file_that_changed(tmp_path):
    """A data file replaced at the same path (size or modification time differs) is
    read again, never answered from the rows kept for the old file."""
    path = str(tmp_path / "f.lance")
    schema = pa.schema([("a", pa.int64())])
    _write_file(path, [1, 2, 3])
    first = read_direct([DataFileRead(path, None)], schema, ["a"])
    assert first is not None and first[0].column("a").to_pylist() == [1, 2, 3]
    _write_file(path, [7, 8, 9, 10])
    again = read_direct([DataFileRead(path, pa.array([True, False, True, True]))], schema, ["a"])
    assert again is not None and again[0].column("a").to_pylist() == [7, 9, 10]


def test_kept_tables_stay_within_their_bound(tmp_path, monkeypatch):
    """With room for 3 decoded files, 10 files read over and over give their own rows
    and never more than 3 are kept."""
    one = file_read._COLUMN_OVERHEAD + 16  # a kept two-row int64 column
    monkeypatch.setattr(file_read, "KEPT_MAX_BYTES", 3 * one)
    monkeypatch.setattr(file_read, "_kept", PerProcess(file_read._Kept))
    schema = pa.schema([("a", pa.int64())])
    paths = []
    for i in range(10):
        paths.append(str(tmp_path / f"f{i}.lance"))
        _write_file(paths[-1], [i, 10 * i])
    for _ in range(4):
        for i, path in enumerate(paths):
            got = read_direct([DataFileRead(path, None)], schema, ["a"])
            assert got is not None and got[0].column("a").to_pylist() == [i, 10 * i]
            assert len(file_read._kept()._tables) <= 3
            assert file_read._kept().bytes <= 3 * one
    assert len(file_read._kept()._tables) == 3


def _read_in_child(path: str, out) -> None:  # type: ignore[no-untyped-def]
    kept = len(file_read._kept()._tables)
    got = read_direct([DataFileRead(path, None)], pa.schema([("a", pa.int64())]), ["a"])
    out.put((kept, got[0].column("a").to_pylist() if got else None))


@pytest.mark.filterwarnings("ignore:lance is not fork-safe")
def test_a_forked_child_reads_for_itself(tmp_path):
    """What the parent kept is not used in a forked child (pylance's readers are not
    fork-safe): the child starts with nothing kept and reads the file itself."""
    import multiprocessing

    path = str(tmp_path / "f.lance")
    _write_file(path, [4, 5])
    assert read_direct([DataFileRead(path, None)], pa.schema([("a", pa.int64())]), ["a"])
    assert file_read._kept()._tables
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_read_in_child, args=(path, out))
    child.start()
    child.join(60)
    assert child.exitcode == 0 and out.get(timeout=5) == (0, [4, 5])
