"""``lance-sql demo`` end to end, and the installed console script."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from lance_sql.cli.main import main

SCRIPT = Path(sys.executable).with_name("lance-sql")


def test_demo_in_fresh_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "lance-sql-demo" / "events" / "__manifest").is_dir()
    assert out.startswith("created demo namespaces")
    for name in (
        "01_partition_pruning.sql",
        "02_storage_partitioned_join.sql",
        "03_spec_evolution.sql",
        "04_murmur3.sql",
        "05_time_range.sql",
    ):
        assert f"=== {name}" in out
    assert "pruning: events: 2/19 partition tables read" in out
    assert "storage-partitioned: " in out
    assert "-629525236" in out
    # second run reuses the valid folder
    assert main(["demo"]) == 0
    assert capsys.readouterr().out.startswith("reusing demo namespaces")


def test_demo_rebuilds_damaged_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "d" / "events").mkdir(parents=True)
    (tmp_path / "d" / "events" / "junk").write_text("x")
    assert main(["demo", "--dir", str(tmp_path / "d"), "--max-rows", "2"]) == 0
    assert capsys.readouterr().out.startswith("created demo namespaces")


def _cli() -> list[str]:
    if SCRIPT.exists():
        return [str(SCRIPT)]
    return [sys.executable, "-m", "lance_sql.cli.main"]


def test_console_script(demo_dir: Path) -> None:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    ok = subprocess.run(
        [*_cli(), "sql", "--ns", f"o={demo_dir / 'orders'}", "SELECT count(*) AS n FROM o"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert ok.returncode == 0, ok.stderr
    assert "4000" in ok.stdout
    bad = subprocess.run(
        [*_cli(), "sql", "--ns", f"o={demo_dir / 'orders'}", "SELECT * FROM nope"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert bad.returncode == 1
    assert bad.stderr.strip().startswith("lance-sql: error: ")
    assert "Traceback" not in bad.stderr
    usage = subprocess.run(
        [*_cli(), "sql", "--bogus"], capture_output=True, text=True, env=env, timeout=120
    )
    assert usage.returncode == 2
