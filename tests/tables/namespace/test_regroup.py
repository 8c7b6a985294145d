"""The counting-sort scatter that splits a batch by partition equals a stable gather."""

from __future__ import annotations

import datetime as dt
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from lance_sql.tables.namespace.partition_rows import split_batch
from lance_sql.tables.namespace.regroup import regroup

N = 1000


def _columns() -> dict[str, pa.Array]:
    rng = np.random.default_rng(1)
    ints = rng.integers(-1000, 1000, N)
    return {
        "i8": pa.array(ints % 100, pa.int8()),
        "i64": pa.array(ints, pa.int64()),
        "u32": pa.array(np.abs(ints), pa.uint32()),
        "f16": pa.array(ints.astype(np.float16), pa.float16()),
        "f64": pa.array(ints / 7.0, pa.float64()),
        "date": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=int(i)) for i in ints]),
        "ts": pa.array(ints * 10**6, pa.timestamp("us", tz="UTC")),
        "dec": pa.array([decimal.Decimal(int(i)) / 100 for i in ints], pa.decimal128(10, 2)),
        "fsb": pa.array([int(i).to_bytes(3, "little", signed=True) for i in ints], pa.binary(3)),
        "str": pa.array([f"s{i}" * (abs(int(i)) % 4) for i in ints], pa.utf8()),
        "lstr": pa.array([f"v{i}" for i in ints], pa.large_utf8()),
        "bin": pa.array([bytes([abs(int(i)) % 256]) * 2 for i in ints], pa.binary()),
        "bool": pa.array(ints % 2 == 0),
        "nulls": pa.array([None if i % 3 == 0 else int(i) for i in ints], pa.int32()),
        "snulls": pa.array([None if i % 5 == 0 else str(i) for i in ints]),
        "list": pa.array([[int(i)] * (abs(int(i)) % 3) for i in ints]),
        "struct": pa.array([{"a": int(i), "b": str(i)} for i in ints]),
        "dict": pa.array([str(int(i) % 7) for i in ints]).dictionary_encode(),
    }


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("offset", [0, 37])
def test_regroup_equals_a_stable_take(threads: int, offset: int) -> None:
    batch = pa.RecordBatch.from_pydict(_columns()).slice(offset)  # sliced arrays too
    if threads > 1:  # the threaded path starts at 200k rows
        batch = pa.concat_tables([pa.Table.from_batches([batch])] * 210).combine_chunks()
        batch = batch.to_batches()[0]
    n = batch.num_rows
    codes = np.random.default_rng(2).integers(0, 5, n)
    counts = np.bincount(codes, minlength=6)  # group 5 is empty
    grouped, first = regroup(batch, codes, counts, threads=threads)
    order = np.argsort(codes, kind="stable")
    assert grouped.equals(pc.take(batch, pa.array(order)))
    assert first[5] == -1
    assert [int(first[g]) for g in range(5)] == [int(np.argmax(codes == g)) for g in range(5)]


def test_split_batch_slices_per_partition_values() -> None:
    batch = pa.RecordBatch.from_pydict(_columns())
    values = [pc.cast(pc.equal(pc.bit_wise_and(batch.column("i64"), 3), 0), pa.int32())]
    values.append(pa.array([None if i % 4 == 0 else "x" for i in range(N)]))
    parts = split_batch(batch, values)
    assert sum(p.num_rows for _, _, p in parts) == N
    for key, raw, part in parts:
        assert key == raw
        mask = pc.and_(
            pc.equal(values[0], raw[0]),
            pc.is_null(values[1]) if raw[1] is None else pc.equal(values[1], raw[1]),
        )
        assert part.equals(batch.filter(pc.fill_null(mask, False)))
    # a single partition is the batch itself
    ((_, raw, whole),) = split_batch(batch, [pa.array([7] * N, pa.int32())])
    assert raw == (7,) and whole is batch


def test_large_batches_are_partitioned_in_pieces(tmp_path: object, monkeypatch: object) -> None:
    from lance_sql.tables.namespace import writer
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    monkeypatch.setattr(writer, "SPLIT_ROWS", 64)  # type: ignore[attr-defined]
    schema = pa.schema([pa.field("k", pa.int64()), pa.field("s", pa.utf8())])
    ns = PartitionedNamespace.create(
        f"{tmp_path}/ns", schema, [{"source": "k", "transform": "bucket", "num_buckets": 3}]
    )
    table = pa.table({"k": range(1000), "s": [str(i) for i in range(1000)]}, schema=schema)
    ns.append(table.combine_chunks(), buffer_bytes=2_000)
    got = ns.to_table().sort_by("k")
    assert got.equals(table)
    assert ns.partitions().num_rows == 3
