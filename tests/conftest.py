"""Fixtures shared by every test folder: an S3-compatible server (moto) on loopback.

Also the hypothesis profile. ``ci``, the default suite's, is derandomized: every run
draws the same examples, so a red CI means that a change broke something, not that a
new random draw found an old problem. ``explore`` draws new examples on every run; it
is the profile of ``-m slow`` runs (the 5,000-20,000-example differentials) and of
``LANCE_SQL_HYPOTHESIS_PROFILE=explore``. Neither has a per-example deadline: a loaded
CI machine must not fail a test for being slow.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)


def pytest_configure(config: pytest.Config) -> None:
    marks = config.getoption("markexpr", "") or ""
    slow = "slow" in marks and "not slow" not in marks
    profile = os.environ.get("LANCE_SQL_HYPOTHESIS_PROFILE") or ("explore" if slow else "ci")
    settings.load_profile(profile)


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
