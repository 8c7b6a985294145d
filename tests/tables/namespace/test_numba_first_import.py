"""numba compiles in a process with no numba cache, whatever imported numba first.

lance-sql wraps ``operator.and_`` & co. for datafusion-python's pushed filters;
numba captures those functions when it is imported and asserts they are
builtins when it compiles ``&``. The writer's regrouping kernels imported numba
on their own, after the wrap: in a fresh environment (CI's new virtualenv, no
numba cache) the next compile of a hashing kernel failed with AssertionError
(``lance-sql demo`` did). Every numba import now goes through
``udfs._kernels_proxy.ensure_numba``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import os, sys
import numpy as np, pyarrow as pa
import operator
import lance_sql.engines.datafusion.provider  # noqa: F401  (wraps the operator functions)
assert hasattr(operator.and_, "__wrapped__")
from lance_sql.tables.namespace.namespace import PartitionedNamespace
root = sys.argv[1]
schema = pa.schema([("k", pa.int64()), ("s", pa.utf8())])
rows = pa.table({"k": np.arange(2000), "s": [f"c{i % 7}" for i in range(2000)]}, schema=schema)
a = PartitionedNamespace.create(os.path.join(root, "a"), schema, "s")  # regroups: numba first
a.append(rows)
b = PartitionedNamespace.create(os.path.join(root, "b"), schema, "bucket(4, k)")  # then hashes
b.append(rows)
import udfs
udfs.murmur3(pa.array([1, 2], pa.int16()))  # another signature compiled later
assert b.to_table().num_rows == 2000
print("ok")
"""


def test_regrouping_first_then_hashing_compiles(tmp_path: Path) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
