"""numba loads only when a hash or transform kernel first runs."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
import lance_sql
ctx = lance_sql.SessionContext()
ctx.sql("SELECT 1 + 1").collect()
before = "numba" in sys.modules
value = ctx.sql("SELECT murmur3(CAST(34 AS BIGINT)) AS h").to_pylist()[0]["h"]
print(before, "numba" in sys.modules, value)
"""


def test_numba_is_imported_on_first_kernel_call() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], check=True, capture_output=True, text=True
    ).stdout.split()
    assert out == ["False", "True", "2017239379"]  # the Iceberg spec: hash(34) for int and long
