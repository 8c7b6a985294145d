"""TPC-H test support: the data module, the scale factor and the oracles (DuckDB, DataFusion).

lineitem is a namespace bucket[16] on l_orderkey, orders bucket[8] on
o_orderkey, the other tables plain Lance datasets (``benchmarks/tpch_data.py``).
DuckDB over the same Parquet files is the oracle for rows; DataFusion over the
Parquet files is the reference for the output schema.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pyarrow as pa

SCALE_FACTOR = 0.1
ROOT = Path(__file__).resolve().parents[2]


def _load_tpch_data() -> ModuleType:
    name = "tpch_data"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / "tpch_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


tpch_data = _load_tpch_data()


class Oracle:
    """Results of DuckDB (rows) and of DataFusion over Parquet (schema), computed once per query."""

    def __init__(self, parquet_dir: Path) -> None:
        import datafusion
        import duckdb

        self._duck = duckdb.connect()
        for table in tpch_data.TABLES:
            path = parquet_dir / f"{table}.parquet"
            self._duck.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{path}')")
        self._datafusion = datafusion.SessionContext()
        tpch_data.register_parquet(self._datafusion, parquet_dir)
        self._rows: dict[str, pa.Table] = {}
        self._schemas: dict[str, pa.Schema] = {}

    def rows(self, key: str, text: str) -> pa.Table:
        """DuckDB's answer to ``text`` (every statement run in order; the SELECT's rows)."""
        if key not in self._rows:
            result = None
            for stmt in tpch_data.statements(text):
                relation = self._duck.sql(stmt)
                if stmt.lower().split()[0] not in ("create", "drop"):
                    result = relation.to_arrow_table()
            assert result is not None
            self._rows[key] = result
        return self._rows[key]

    def schema(self, key: str, text: str) -> pa.Schema:
        """The output schema of ``text`` in plain DataFusion over the Parquet files."""
        if key not in self._schemas:
            self._schemas[key] = tpch_data.run_query(self._datafusion, text).schema
        return self._schemas[key]
