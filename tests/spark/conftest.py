"""One local[2] SparkSession for the whole test session (skipped without pyspark or java)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from lance_sql.tables.namespace.namespace import PartitionedNamespace

SCHEMA = pa.schema(
    [
        pa.field("k", pa.int64(), nullable=False),
        pa.field("s", pa.utf8()),
        pa.field("v", pa.float64()),
    ]
)


def make_ns(
    root: str,
    keys: range,
    buckets: int = 8,
    tag: str = "",
    storage_options: dict[str, str] | None = None,
) -> PartitionedNamespace:
    ns = PartitionedNamespace.create(
        root,
        SCHEMA,
        [{"source": "k", "transform": "bucket", "num_buckets": buckets}],
        storage_options=storage_options,
    )
    ks = list(keys)
    ns.append(
        pa.table(
            {
                "k": ks,
                "s": [None if i % 7 == 0 else f"{tag}{i % 5}" for i in ks],
                "v": [float(i) for i in ks],
            },
            schema=SCHEMA,
        )
    )
    return ns


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("java is not installed")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import lance_sql.engines.spark as lance_spark

    session = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    lance_spark.register(session)
    yield session
    session.stop()


@pytest.fixture(name="make_ns")
def make_ns_fixture() -> Any:
    return make_ns
