"""A fresh process's first hashing runs on several threads at once (bucket partitioning of a
large append): numba's registries must be initialised once, not by two threads together.

Before the fix one fresh process in 3-6 failed with "ValueError: generator already
executing", surfacing as a SpecError from ``ns.append`` on a bucket spec.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import numpy as np, pyarrow as pa
import lance_sql
from lance_sql.tables.namespace import writer  # noqa: F401  (what the failing runs imported)
import udfs
out = udfs.murmur3(pa.array(np.arange(3_000_000, dtype=np.int64)))
assert len(out) == 3_000_000 and out.null_count == 0
print("ok")
"""


@pytest.mark.parametrize("run", range(4))
def test_first_parallel_murmur3_in_a_fresh_process(run: int) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
