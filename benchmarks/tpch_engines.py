"""Engines other than lance-sql over the same Lance files, for ``bench_tpch.py``.

- ``duckdb``: DuckDB in this process over ``lance.dataset`` objects (all 8 tables
  plain datasets: lineitem and orders from the ``lance_plain`` directory),
  registered with ``DuckDBPyConnection.register`` (DuckDB scans them through
  pylance's pyarrow-dataset interface, filters and projections pushed).
- ``ffi54``: pylance's compiled ``FFILanceTableProvider`` over the same
  datasets, in DataFusion 54 (pylance 14 is built against it; DataFusion 55
  refuses the provider). DataFusion 54 cannot share a process with 55, so it
  runs in a worker process of its own virtual environment
  (:func:`ffi_python` creates it once: ``datafusion==54.1.0`` with no
  dependencies, everything else seen through a ``.pth`` file from this
  environment). The worker times each query itself (the pipe is not timed).

Both are objects with ``timed(text) -> (table, seconds)``; a DataFusion-style
context is timed by ``bench_tpch.time_query`` around ``tpch_data.run_query``.
"""

from __future__ import annotations

import json
import site
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

FFI_DATAFUSION = "datafusion==54.1.0"
EXTERNAL = ("duckdb", "ffi54")


def dataset_paths(lance_dir: Path, plain_dir: Path, tables: tuple[str, ...]) -> dict[str, str]:
    """Every TPC-H table as a plain Lance dataset path (lineitem and orders from ``plain_dir``)."""
    from tpch_data import NAMESPACES

    return {t: str((plain_dir if t in NAMESPACES else lance_dir) / f"{t}.lance") for t in tables}


class DuckDBOverLance:
    """DuckDB over ``lance.dataset`` objects (one connection, tables registered once)."""

    def __init__(self, paths: dict[str, str]) -> None:
        import duckdb
        import lance

        self.con = duckdb.connect()
        self.datasets = {t: lance.dataset(p) for t, p in paths.items()}
        for table, ds in self.datasets.items():
            self.con.register(table, ds)

    def timed(self, text: str) -> tuple[pa.Table, float]:
        from tpch_data import statements

        start = time.perf_counter()
        result = None
        for stmt in statements(text):
            relation = self.con.sql(stmt)
            if stmt.lower().split()[0] not in ("create", "drop"):
                result = relation.to_arrow_table()
        seconds = time.perf_counter() - start
        assert result is not None
        return result, seconds

    def close(self) -> None:
        self.con.close()


def ffi_python(venv: Path) -> Path:
    """The Python of a DataFusion 54 virtual environment at ``venv`` (created once).

    Raises ``RuntimeError`` when ``datafusion==54.1.0`` cannot be installed (offline).
    """
    python = venv / "bin" / "python"
    marker = venv / ".done"
    if marker.exists():
        return python
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", FFI_DATAFUSION],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise RuntimeError(f"cannot install {FFI_DATAFUSION}: {done.stderr.strip()[-300:]}")
    own = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # this environment's packages (pylance, pyarrow) after the venv's own DataFusion 54
    Path(own, "zz_lance_sql_bench.pth").write_text(site.getsitepackages()[0] + "\n")
    marker.write_text(FFI_DATAFUSION + "\n")
    return python


class FFIWorker:
    """A DataFusion 54 process running queries over ``FFILanceTableProvider`` tables."""

    def __init__(self, python: Path, paths: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [str(python), str(Path(__file__).resolve()), "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=str(Path(__file__).resolve().parent),
        )
        self._out = Path(tempfile.mkdtemp(prefix="tpch-ffi-")) / "answer.arrow"
        self._call({"paths": paths})

    def _call(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the DataFusion 54 worker died")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"DataFusion 54 worker: {reply['error']}")
        return reply

    def timed(self, text: str) -> tuple[pa.Table, float]:
        reply = self._call({"text": text, "out": str(self._out)})
        with pa.memory_map(str(self._out)) as source:
            table = pa.ipc.open_file(source).read_all()
        return table, reply["seconds"]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _worker() -> None:
    """The worker loop (runs under DataFusion 54): one JSON request per line on stdin."""
    import datafusion
    import lance
    from tpch_data import run_query

    ctx = datafusion.SessionContext()
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if "paths" in request:
                for table, path in request["paths"].items():
                    ctx.register_table(table, lance.FFILanceTableProvider(lance.dataset(path)))
                reply: dict[str, Any] = {"ok": datafusion.__version__}
            else:
                start = time.perf_counter()
                table = run_query(ctx, request["text"])
                reply = {"seconds": time.perf_counter() - start}
                with (
                    pa.OSFile(request["out"], "wb") as sink,
                    pa.ipc.new_file(sink, table.schema) as writer,
                ):
                    writer.write_table(table)
        except Exception as exc:  # reported to the parent, which stops the run
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(reply), flush=True)


if __name__ == "__main__" and sys.argv[1:] == ["--worker"]:
    _worker()
