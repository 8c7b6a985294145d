"""Rows of the small partitioned tables the namespace read tests build (``p`` the
partition column; ``x`` and ``s`` with NULLs)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

SCHEMA = pa.schema([("p", pa.int32()), ("id", pa.int64()), ("x", pa.float64()), ("s", pa.string())])


def rows(start: int, n: int, parts: int, x_div: int = 3) -> pa.Table:
    """``n`` rows with ids from ``start`` spread over ``parts`` values of ``p``."""
    ids = np.arange(start, start + n)
    return pa.table(
        {
            "p": pa.array(ids % parts, pa.int32()),
            "id": pa.array(ids, pa.int64()),
            "x": pa.array(ids / x_div, pa.float64(), mask=ids % 11 == 0),
            "s": pa.array([f"s{i % 7}" for i in ids], pa.string(), mask=ids % 13 == 0),
        },
        schema=SCHEMA,
    )
