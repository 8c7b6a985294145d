"""``tables.scan.conform``: a scan's batches with exactly the schema an engine expects."""

from __future__ import annotations

import pyarrow as pa

from lance_sql.tables.scan import conform

SCHEMA = pa.schema(
    [pa.field("a", pa.int64(), nullable=False), pa.field("b", pa.int64()), pa.field("s", pa.utf8())]
)


def test_columns_in_another_order_are_matched_by_name() -> None:
    """Two int64 columns in swapped order: by position their values would silently swap."""
    batch = pa.record_batch({"b": [10, 20], "s": ["x", "y"], "a": [1, 2]})
    for data in (batch, pa.Table.from_batches([batch])):
        out = conform(data, SCHEMA)
        assert out.schema == SCHEMA
        assert out.to_pydict() == {"a": [1, 2], "b": [10, 20], "s": ["x", "y"]}


def test_other_names_are_matched_by_position() -> None:
    """A column read under another name (its table's) takes the schema's name and type."""
    batch = pa.record_batch({"a": [1], "old_b": pa.array([7], pa.int32()), "s": ["x"]})
    out = conform(batch, SCHEMA)
    assert out.schema == SCHEMA and out.to_pydict() == {"a": [1], "b": [7], "s": ["x"]}


def test_an_equal_schema_returns_the_batch_itself() -> None:
    batch = pa.record_batch([pa.array([1]), pa.array([2]), pa.array(["x"])], schema=SCHEMA)
    assert conform(batch, SCHEMA) is batch
