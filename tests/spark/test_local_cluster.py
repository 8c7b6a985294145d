"""``local-cluster[2,1,1024]`` (separate executor JVMs and Python workers): one session per module.

The session runs in a subprocess (``cluster_checks.py``) whose working directory
is the data folder, so relative roots are resolved by the driver as Spark
resolves them. Every other Spark test runs in this mode too through the
``spark`` fixture (``conftest.py``): the reused-DataFrame and ``where`` checks
in ``test_filter_scope.py[cluster]``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.local_cluster]

SCRIPT = Path(__file__).with_name("cluster_checks.py")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: Any) -> dict[str, Any]:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("java is not installed")
    base = tmp_path_factory.mktemp("cluster")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), str(base)],
        cwd=base,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    lines = [x for x in proc.stdout.splitlines() if x.startswith("CHECKS-JSON ")]
    assert proc.returncode == 0 and lines, proc.stdout[-3000:] + proc.stderr[-5000:]
    return json.loads(lines[-1][len("CHECKS-JSON ") :])


def _check(cluster: dict[str, Any], prefix: str) -> None:
    selected = [c for c in cluster["checks"] if c[0].startswith(prefix)]
    assert selected, f"no check named {prefix}"
    wrong = [c for c in selected if c[1] != c[2]]
    assert not wrong, wrong


def test_where_option_on_timestamps(cluster: dict[str, Any]) -> None:
    _check(cluster, "where option")


def test_driver_plans_tasks_scan_with_map_in_arrow(cluster: dict[str, Any]) -> None:
    _check(cluster, "recipe")


def test_uri_forms(cluster: dict[str, Any]) -> None:
    assert not {k: v for k, v in cluster["errors"].items() if k != "create table"}, cluster[
        "errors"
    ]
    _check(cluster, "load ")
    _check(cluster, "save file: and relative")
    _check(cluster, "temporary view file: path")


def test_create_table_location(cluster: dict[str, Any]) -> None:
    if "create table" in cluster["errors"]:  # the error says what to use instead
        assert "CREATE TEMPORARY VIEW" in cluster["errors"]["create table"]
        pytest.xfail("pyspark 4.3 hands a Python data source no options for a catalog table")
    _check(cluster, "create table location")
