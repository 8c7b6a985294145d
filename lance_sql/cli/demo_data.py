"""Deterministic (seeded) sample namespaces for ``lance-sql demo`` and the example tests."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

DEMO_TABLES = ("events", "orders", "customers", "clicks")
_COUNTRIES = np.array(["US", "DE", "FR", "JP", "BR"])


def _create(root: Path, rows: pa.Table, spec: str) -> Any:
    """A namespace at ``root`` of ``rows``' columns (the first one NOT NULL) holding ``rows``."""
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    schema = rows.schema.set(0, rows.schema.field(0).with_nullable(False))
    ns = PartitionedNamespace.create(root, schema, spec)
    ns.append(rows.cast(schema))
    return ns


def _events(root: Path) -> None:
    rng = np.random.default_rng(11)
    # spec v1: December 1..14, partitioned by day (appendix A, partition_spec_v1)
    ns = _create(root, _event_rows(rng, 0, 2000, dt.date(2025, 12, 1), 14), "identity(event_date)")
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
    rng = np.random.default_rng(23)
    n_cust, n_orders = 500, 4000
    customer_rows = {
        "id": pa.array(np.arange(n_cust), pa.int64()),
        "name": [f"customer-{i:04d}" for i in range(n_cust)],
        "country": rng.choice(_COUNTRIES, n_cust).tolist(),
    }
    _create(customers, pa.table(customer_rows), "bucket(8, id)")
    order_rows = {
        "order_id": pa.array(np.arange(n_orders), pa.int64()),
        # a few ids beyond the customer range: orders of unknown customers
        "customer_id": pa.array(rng.integers(0, n_cust + 20, n_orders), pa.int64()),
        "total": np.round(rng.random(n_orders) * 250, 2),
    }
    _create(orders, pa.table(order_rows), "bucket(16, customer_id)")


def _clicks(root: Path) -> None:
    rng = np.random.default_rng(37)
    n = 3000
    start = np.datetime64("2025-11-20T00:00:00", "us")
    secs = rng.integers(0, 20 * 86400, n)  # 2025-11-20 .. 2025-12-09
    ts = start + secs.astype("timedelta64[s]").astype("timedelta64[us]")
    pages = np.array(["/", "/pricing", "/docs", "/blog", "/signup"])
    rows = {
        "click_id": pa.array(np.arange(n), pa.int64()),
        "ts": pa.array(ts, pa.timestamp("us")),
        "url": rng.choice(pages, n).tolist(),
    }
    _create(root, pa.table(rows), "year(ts), month(ts), day(ts)")


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
