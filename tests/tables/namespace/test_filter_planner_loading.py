"""Row operations prune even when ``PartitionedNamespace`` is imported from its module.

The pruning planner lives in the planning layer and registers itself on import;
the tables layer asks the package root to load it on first use. Checked in a
fresh process, where nothing else imported the planning layer.
"""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import sys, tempfile
import pyarrow as pa
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.namespace.filter_hook import NoPruning, filter_planner

assert "lance_sql.planning.mutation_plan" not in sys.modules
schema = pa.schema([pa.field("id", pa.int64(), nullable=False), ("k", pa.string())])
spec = [{"field_id": "k", "source": "k", "transform": {"type": "identity"}}]
ns = PartitionedNamespace.create(tempfile.mkdtemp() + "/ns", schema, spec)
ns.append(pa.table({"id": [1, 2, 3], "k": ["a", "b", "b"]}, schema=schema))
cls = filter_planner().classify(ns, "k = 'b' AND id = 2")
assert not isinstance(filter_planner(), NoPruning)
assert len(cls.partial) == 1 and cls.expression is not None, cls
assert ns.delete("k = 'a'") == 1
print("ok")
"""


def test_module_import_gets_the_pruning_planner() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
