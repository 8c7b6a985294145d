"""Shared helpers of the reliability tests: run the worker script, build the namespace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
WORKERS = HERE / "workers.py"
REPO = HERE.parent.parent

sys.path.insert(0, str(HERE))


def worker_env(storage_options: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    if storage_options:
        env["LANCE_SQL_TEST_STORAGE_OPTIONS"] = json.dumps(storage_options)
    return env


def start_worker(*args: object, storage_options: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(WORKERS), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=worker_env(storage_options),
    )


def read_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.fixture
def make_namespace(tmp_path):
    """A fresh namespace with the workers' schema and identity spec; returns its root."""

    def make(name: str = "ns") -> str:
        from workers import SCHEMA, SPEC

        from lance_sql.tables.namespace.namespace import PartitionedNamespace

        root = str(tmp_path / name)
        PartitionedNamespace.create(root, SCHEMA, SPEC)
        return root

    return make
