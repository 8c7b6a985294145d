"""The udfs benchmark runs end to end at a tiny size (no timing assertions)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_bench_udfs_tiny(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location(
        "bench_udfs", ROOT / "benchmarks" / "bench_udfs.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--rows", "3000", "--repeats", "1", "--loop-rows", "500"]) == 0
    out = capsys.readouterr().out
    assert "int64: speed-up over loop A" in out
    assert "ratio SQL / direct" in out
