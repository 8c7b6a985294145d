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


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def s3_server():
    """An S3-compatible server (moto) on a free loopback port; stopped after the session.

    Yields Lance-style storage options (the ONE dict both pylance and the fsspec
    metadata layer are given) and a function making a fresh bucket.
    """
    pytest.importorskip("s3fs")
    server_mod = pytest.importorskip("moto.server")
    import logging

    import boto3

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = _free_port()
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    options = {
        "aws_endpoint": endpoint,
        "allow_http": "true",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
        "aws_region": "us-east-1",
    }
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )
    counter = iter(range(1_000_000))

    def bucket() -> str:
        name = f"lance-sql-{os.getpid()}-{next(counter)}"
        client.create_bucket(Bucket=name)
        return name

    try:
        yield options, bucket
    finally:
        server.stop()
