"""lance-sql works where pandas is not installed (pylance does not depend on it).

pylance 14's ``lance.arrow`` cannot be imported without pandas; every test here
runs a child interpreter in which ``import pandas`` fails.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_BLOCK_PANDAS = """
import sys
class _NoPandas:
    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _NoPandas())
"""


def _run_without_pandas(body: str, tmp_path: Path) -> str:
    code = _BLOCK_PANDAS + textwrap.dedent(body)
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_open_metadata_of_bfloat16_and_blob_datasets_without_pandas(tmp_path):
    out = _run_without_pandas(
        """
        import pyarrow as pa, lance, lance_sql
        from lance._arrow.bf16 import BFloat16Type
        bf = pa.ExtensionArray.from_storage(BFloat16Type(), pa.array([b"\\0\\0"], pa.binary(2)))
        lance.write_dataset(pa.table({"x": bf}), "bf")
        print(lance_sql.open_metadata("bf").schema.field("x").type)
        schema = pa.schema([("id", pa.int64()), lance.blob_field("payload")])
        rows = pa.table({"id": [1], "payload": lance.blob_array([b"abc"])}).cast(schema)
        lance.write_dataset(rows, "blob")
        print(lance_sql.open_metadata("blob").schema.names)
        """,
        tmp_path,
    )
    assert "bfloat16" in out
    assert "['id', 'payload']" in out


def test_namespace_with_a_blob_column_appends_twice_without_pandas(tmp_path):
    out = _run_without_pandas(
        """
        import pyarrow as pa, lance_sql
        schema = pa.schema([
            ("id", pa.int64()), ("region", pa.string()),
            pa.field("payload", pa.large_binary(), metadata={"lance-encoding:blob": "true"}),
        ])
        ns = lance_sql.PartitionedNamespace.create(
            "ns", schema, [{"source": "region", "transform": "identity"}])
        rows = pa.table({"id": [1], "region": ["eu"], "payload": [b"abc"]}, schema=schema)
        ns.append(rows)
        ns.append(rows)
        print(ns.count_rows(), ns.to_table().column("payload").to_pylist()[0]["size"])
        """,
        tmp_path,
    )
    assert out.split() == ["2", "3"]
