"""Shared demo data for the CLI tests: built once per session (about 1 s)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lance_sql.cli.demo_data import build_demo


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder, created = build_demo(tmp_path_factory.mktemp("cli-demo") / "demo")
    assert created
    return folder
