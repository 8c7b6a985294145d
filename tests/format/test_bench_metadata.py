"""The metadata benchmark runs end to end at a tiny size (no timing assertions)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_bench_metadata_tiny(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location(
        "bench_metadata", ROOT / "benchmarks" / "bench_metadata.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--rows", "50", "--repeats", "2", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "5 fragments" in out
    assert "ratio lance-sql / pylance" in out
