"""Tables of issue #15's repros (shared by the tests that replay them).

``CUSTOMERS`` (NULL key included; bucket[8] on ``id`` in the tests) and
``EVENTS`` (hourly timestamps over 20 days, partitioned by year/month/day)
are the DataFrame-API repros' data.

``a_ns`` / ``b_ns``: the RIGHT JOIN + WHERE and EXISTS-with-parentheses repros
(identity on ``k``); ``big_l`` / ``big_r``: int64 values near 2^62 for the
partial ``avg`` that used to wrap around.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

CUSTOMERS = pa.table(
    {
        "id": pa.array([None, *range(40)], pa.int64()),
        "segment": pa.array([f"s{i % 3}" for i in range(41)], pa.string()),
    }
)
DAY0 = dt.datetime(2025, 1, 25)
EVENTS = pa.table(
    {
        "ts": pa.array(
            [DAY0 + dt.timedelta(days=i // 3, hours=(i * 5) % 24) for i in range(60)],
            pa.timestamp("us"),
        ),
        "k": pa.array([i % 7 for i in range(60)], pa.int64()),
    }
)


def issue15_tables() -> dict[str, pa.Table]:
    return {
        "a_ns": pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "k": pa.array([10, 20], pa.int64()),
                "x": pa.array([1, 2], pa.int64()),
                "c": pa.array([True, False], pa.bool_()),
            }
        ),
        "b_ns": pa.table(
            {
                "id": pa.array([1, 2], pa.int64()),
                "k": pa.array([10, 20], pa.int64()),
                "x": pa.array([1, 2], pa.int64()),
                "b": pa.array([True, None], pa.bool_()),
            }
        ),
        "big_l": pa.table(
            {
                "k": pa.array([i % 4 for i in range(64)], pa.int64()),
                "v": pa.array([4_611_686_018_427_387_000 + i for i in range(64)], pa.int64()),
            }
        ),
        "big_r": pa.table({"k": pa.array(range(4), pa.int64())}),
    }
