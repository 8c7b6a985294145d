"""numba loads only when a hash or transform kernel first runs.

Arrays of at most 16 values are hashed in Python (equal to the kernels, so a
planner hashing a few literals never loads numba): the query hashes 100 rows.
"""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys
import lance_sql
ctx = lance_sql.SessionContext()
ctx.sql("SELECT 1 + 1").collect()
before = "numba" in sys.modules
query = "SELECT murmur3(CAST(value AS BIGINT)) AS h FROM range(34, 134)"
value = ctx.sql(query).to_pylist()[0]["h"]
print(before, "numba" in sys.modules, value)
"""


def test_numba_is_imported_on_first_kernel_call() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], check=True, capture_output=True, text=True
    ).stdout.split()
    assert out == ["False", "True", "2017239379"]  # the Iceberg spec: hash(34) for int and long
