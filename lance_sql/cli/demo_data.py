"""Deterministic sample namespaces for ``lance-sql demo`` and the example tests.

Every generator is seeded, so the same folder always holds the same rows and
the expected results in ``sql_examples/`` stay checkable.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa

__all__ = ["DEMO_TABLES", "build_demo", "demo_is_valid"]

DEMO_TABLES = ("events", "orders", "customers", "clicks")
_COUNTRIES = np.array(["US", "DE", "FR", "JP", "BR"])


def _events(root: Path) -> None:
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            ("event_date", pa.date32()),
            ("country", pa.utf8()),
            ("amount", pa.float64()),
        ]
    )
    ns = PartitionedNamespace.create(root, schema, "identity(event_date)")
    rng = np.random.default_rng(11)
    # spec v1: December 1..14, partitioned by day (appendix A, partition_spec_v1)
    ns.append(_event_rows(rng, 0, 2000, dt.date(2025, 12, 1), 14))
    # spec v2: year(event_date) + identity(country), December 8..21 (overlaps v1)
    ns.add_spec(
        [
            {"field_id": "event_year", "source": "event_date", "transform": "year"},
            {"source": "country", "transform": "identity"},
        ]
    )
    ns.append(_event_rows(rng, 2000, 2000, dt.date(2025, 12, 8), 14))


def _event_rows(rng: np.random.Generator, start: int, n: int, d0: dt.date, days: int) -> pa.Table:
    offsets = rng.integers(0, days, n)
    return pa.table(
        {
            "id": pa.array(np.arange(start, start + n), pa.int64()),
            "event_date": pa.array([d0 + dt.timedelta(days=int(o)) for o in offsets], pa.date32()),
            "country": pa.array(rng.choice(_COUNTRIES, n).tolist(), pa.utf8()),
            "amount": pa.array(np.round(rng.random(n) * 100, 2)),
        }
    )


def _orders_customers(orders: Path, customers: Path) -> None:
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    rng = np.random.default_rng(23)
    n_cust, n_orders = 500, 4000
    c = PartitionedNamespace.create(
        customers,
        pa.schema(
            [
                pa.field("id", pa.int64(), nullable=False),
                ("name", pa.utf8()),
                ("country", pa.utf8()),
            ]
        ),
        "bucket(8, id)",
    )
    c.append(
        pa.table(
            {
                "id": pa.array(np.arange(n_cust), pa.int64()),
                "name": [f"customer-{i:04d}" for i in range(n_cust)],
                "country": rng.choice(_COUNTRIES, n_cust).tolist(),
            }
        )
    )
    o = PartitionedNamespace.create(
        orders,
        pa.schema(
            [
                pa.field("order_id", pa.int64(), nullable=False),
                ("customer_id", pa.int64()),
                ("total", pa.float64()),
            ]
        ),
        "bucket(16, customer_id)",
    )
    o.append(
        pa.table(
            {
                "order_id": pa.array(np.arange(n_orders), pa.int64()),
                # a few ids beyond the customer range: orders of unknown customers
                "customer_id": pa.array(rng.integers(0, n_cust + 20, n_orders), pa.int64()),
                "total": np.round(rng.random(n_orders) * 250, 2),
            }
        )
    )


def _clicks(root: Path) -> None:
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    rng = np.random.default_rng(37)
    n = 3000
    schema = pa.schema(
        [
            pa.field("click_id", pa.int64(), nullable=False),
            ("ts", pa.timestamp("us")),
            ("url", pa.utf8()),
        ]
    )
    ns = PartitionedNamespace.create(root, schema, "year(ts), month(ts), day(ts)")
    start = np.datetime64("2025-11-20T00:00:00", "us")
    secs = rng.integers(0, 20 * 86400, n)  # 2025-11-20 .. 2025-12-09
    ts = start + secs.astype("timedelta64[s]").astype("timedelta64[us]")
    pages = np.array(["/", "/pricing", "/docs", "/blog", "/signup"])
    ns.append(
        pa.table(
            {
                "click_id": pa.array(np.arange(n), pa.int64()),
                "ts": pa.array(ts, pa.timestamp("us")),
                "url": rng.choice(pages, n).tolist(),
            }
        )
    )


def demo_is_valid(folder: Path) -> bool:
    """True when every demo namespace opens (so the folder can be reused)."""
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    try:
        for name in DEMO_TABLES:
            if PartitionedNamespace.open(folder / name).count_rows() == 0:
                return False
    except Exception:
        return False
    return True


def build_demo(folder: str | Path) -> tuple[Path, bool]:
    """Create the demo namespaces under ``folder``; reuse them when valid.

    Returns ``(folder, created)``. Partial leftovers of an interrupted run are
    removed first so creation never trips over half-written namespaces.
    """
    folder = Path(folder).resolve()
    if demo_is_valid(folder):
        return folder, False
    folder.mkdir(parents=True, exist_ok=True)
    for name in DEMO_TABLES:
        target = folder / name
        if target.exists():
            shutil.rmtree(target)
    _events(folder / "events")
    _orders_customers(folder / "orders", folder / "customers")
    _clicks(folder / "clicks")
    return folder, True
