"""``benchmarks/bench_scale.py``'s dynamic overwrite step runs at a tiny size (no timing
assertions): both floors are timed and the overwritten partition holds the new rows."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pyarrow.compute as pc


def _module():
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_scale.py"
    spec = importlib.util.spec_from_file_location("bench_scale_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_overwrite_step_runs_tiny(tmp_path: Path) -> None:
    bench = _module()
    ns = bench.build(tmp_path / "p20", 20, 1)
    got = bench.bench_overwrite(ns, 20, 50, repeat=2)
    assert set(got) == {
        "overwrite_s",
        "overwrite_floor_s",
        "overwrite_ratio",
        "overwrite_update_floor_s",
        "overwrite_update_ratio",
    }
    assert all(v > 0 for v in got.values())
    # repeat 2 overwrote partitions 0 and 7 with 50 rows each; the other 18 keep one row
    rows = ns.to_table(columns=["pid"]).column("pid")
    assert rows.to_pylist().count(0) == 50 and rows.to_pylist().count(7) == 50
    assert len(rows) == 118 and pc.count_distinct(rows).as_py() == 20
