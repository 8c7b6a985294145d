"""One SparkSession per mode for the whole test session (skipped without pyspark or java).

Every test that takes the ``spark`` fixture runs in two modes:

- ``local``: ``local[2]``, one JVM and its Python workers;
- ``cluster``: ``local-cluster[2,1,1024]``, two executor JVMs with their own
  Python workers (SPARK_HOME = the pyspark package folder), so code that only
  works in one process (state on the driver, objects that do not pickle,
  relative paths) fails here.

Cluster mode starts in 45-95 s on this 2-core machine, and every task pays
a cross-process round trip, so it runs by default only for the core
read/write/join modules (:data:`CLUSTER_BY_DEFAULT`); the other modules' cluster
runs are marked ``slow`` (``-m slow`` runs them). pytest groups the tests by
mode (the fixture is session-scoped and parametrized), so each session starts
once. ``LANCE_SQL_SPARK_MODES=local`` (or ``cluster``) runs one mode only.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
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

MASTERS = {"local": "local[2]", "cluster": "local-cluster[2,1,1024]"}

#: Modules whose tests also run in cluster mode without ``-m slow``.
CLUSTER_BY_DEFAULT = ("test_read*.py", "test_write*.py", "test_join*.py", "test_filter_scope.py")


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


def _modes() -> list[str]:
    raw = os.environ.get("LANCE_SQL_SPARK_MODES", "local,cluster")
    modes = [m.strip() for m in raw.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MASTERS]
    if unknown:
        raise pytest.UsageError(f"LANCE_SQL_SPARK_MODES: unknown modes {unknown} ({list(MASTERS)})")
    return modes


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "spark" not in metafunc.fixturenames:
        return
    module = Path(str(metafunc.module.__file__)).name
    core = any(fnmatch.fnmatch(module, p) for p in CLUSTER_BY_DEFAULT)
    params = []
    for mode in _modes():
        marks = [pytest.mark.local_cluster] if mode == "cluster" else []
        if mode == "cluster" and not core:
            marks.append(pytest.mark.slow)
        params.append(pytest.param(mode, id=mode, marks=marks))
    metafunc.parametrize("spark", params, indirect=True, scope="session")


def start_session(master: str) -> Any:
    """A SparkSession on ``master`` with ``lance_ns`` registered (one per process at a time)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pyspark
    from pyspark.sql import SparkSession

    import lance_sql.engines.spark as lance_spark

    os.environ.setdefault("SPARK_HOME", os.path.dirname(pyspark.__file__))
    session = (
        SparkSession.builder.master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    lance_spark.register(session)
    return session


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest) -> Iterator[Any]:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("java is not installed")
    mode = getattr(request, "param", "local")
    session = start_session(MASTERS[mode])
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(name="make_ns")
def make_ns_fixture() -> Any:
    return make_ns
