"""``ns.merge`` matches float keys as SQL equality does: -0.0 = 0.0 and NaN = NaN.

(DataFusion and DuckDB both; pyarrow's is_in and join tell -0.0 from 0.0.)
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pytest

from lance_sql.errors import LanceSqlError
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SCHEMA = pa.schema([("k", pa.float64()), ("v", pa.int64())])
NAN = float("nan")


def _ns(tmp_path: Any) -> PartitionedNamespace:
    root = os.path.join(tmp_path, "ns")
    ns = PartitionedNamespace.create(
        root, SCHEMA, [{"source": "v", "transform": "bucket", "num_buckets": 4}]
    )
    ns.append(pa.table({"k": [0.0, NAN, 1.5], "v": [1, 2, 3]}, schema=SCHEMA))
    return ns


def test_negative_zero_and_nan_keys_match(tmp_path: Any) -> None:
    ns = _ns(tmp_path)
    source = pa.table({"k": [-0.0, NAN, 2.5], "v": [5, 6, 7]}, schema=SCHEMA)
    result = ns.merge(source, on=["k"], when_matched_update=True, when_not_matched_insert=True)
    assert (result.updated, result.deleted, result.inserted) == (2, 0, 1)
    rows = PartitionedNamespace.open(ns.root).to_table().sort_by("v").to_pylist()
    assert [r["v"] for r in rows] == [3, 5, 6, 7]


def test_negative_zero_and_zero_are_one_source_key(tmp_path: Any) -> None:
    ns = _ns(tmp_path)
    source = pa.table({"k": [-0.0, 0.0], "v": [5, 6]}, schema=SCHEMA)
    with pytest.raises(LanceSqlError, match="more than once"):
        ns.merge(source, on=["k"], when_matched_update=True)
