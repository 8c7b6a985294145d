"""Fixtures shared by every test folder: an S3-compatible server (moto) on loopback."""

from __future__ import annotations

import os

import pytest


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
