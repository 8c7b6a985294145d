"""Per-table Lance scan options: pylance scanner settings, never a changed answer.

Each query runs over a plain dataset and a namespace registered with and
without options; answers equal the Arrow table's own (filtered by pyarrow).
"""

from __future__ import annotations

from typing import Any

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_sql
from lance_sql.tables.scan_options import ScanOptionsError

ROWS = 20_000
OPTIONS = [
    {"batch_size": 1000},
    {"batch_readahead": 1, "fragment_readahead": 1},
    {"io_buffer_size": 1 << 20},
    {"late_materialization": True},
    {"late_materialization": False},
    {"late_materialization": ["c"]},
]


def _table() -> pa.Table:
    return pa.table(
        {
            "a": pa.array(range(ROWS), pa.int64()),
            "b": pa.array([f"s{i % 7}" for i in range(ROWS)]),
            "c": pa.array([float(i % 101) for i in range(ROWS)]),
        }
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory: Any) -> dict[str, str]:
    root = tmp_path_factory.mktemp("scan_options")
    lance.write_dataset(_table(), str(root / "d"), max_rows_per_file=5000)
    spec = [{"field_id": "ab", "source": "a", "transform": {"type": "bucket", "num_buckets": 3}}]
    lance_sql.PartitionedNamespace.create(str(root / "ns"), _table().schema, spec).append(_table())
    return {"dataset": str(root / "d"), "namespace": str(root / "ns")}


def _context(data: dict[str, str], kind: str, options: dict[str, Any] | None) -> Any:
    ctx = lance_sql.SessionContext()
    if kind == "dataset":
        ctx.register_lance("t", data[kind], scan_options=options)
    else:
        ctx.register_namespace("t", data[kind], scan_options=options)
    return ctx


def _rows(table: pa.Table) -> list[tuple[Any, ...]]:
    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return sorted(zip(*cols, strict=True))


@pytest.mark.parametrize("kind", ["dataset", "namespace"])
@pytest.mark.parametrize(
    "options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items())
)
def test_same_answer_with_scan_options(
    kind: str, options: dict[str, Any], data: dict[str, str]
) -> None:
    ctx = _context(data, kind, options)
    got = ctx.sql("SELECT a, b, c FROM t WHERE b = 's3' AND c > 40").to_arrow_table()
    t = _table()
    want = t.filter(pc.and_(pc.equal(t["b"], "s3"), pc.greater(t["c"], 40.0)))
    assert _rows(got) == _rows(want)
    assert ctx.sql("SELECT count(*) AS n, sum(a) AS s FROM t").to_pylist() == [
        {"n": ROWS, "s": ROWS * (ROWS - 1) // 2}
    ]


@pytest.mark.parametrize("kind", ["dataset", "namespace"])
def test_batch_size_is_the_tables_own(kind: str, data: dict[str, str]) -> None:
    batches = _context(data, kind, {"batch_size": 700}).sql("SELECT a FROM t").collect()
    assert sum(b.num_rows for b in batches) == ROWS
    assert max(b.num_rows for b in batches) <= 700
    default = _context(data, kind, None).sql("SELECT a FROM t").collect()
    assert max(b.num_rows for b in default) > 700


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"batchsize": 3}, "unknown scan option 'batchsize'"),
        ({"batch_size": 0}, "batch_size must be an int >= 1"),
        ({"batch_size": True}, "batch_size must be an int >= 1"),
        ({"late_materialization": "yes"}, "late_materialization must be True, False or a list"),
    ],
)
@pytest.mark.parametrize("kind", ["dataset", "namespace"])
def test_bad_options_are_refused_naming_the_table(
    kind: str, options: dict[str, Any], message: str, data: dict[str, str]
) -> None:
    with pytest.raises(ScanOptionsError, match=message) as info:
        _context(data, kind, options)
    assert ("Lance table at" if kind == "dataset" else "namespace 't'") in str(info.value)
