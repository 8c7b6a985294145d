"""A process whose last query stopped early (LIMIT) exits cleanly.

Without :mod:`lance_sql.engines.datafusion.shutdown`, DataFusion's workers
were still pulling scan batches from Python while the interpreter finalized,
and the process aborted (exit 134) in 10 of 12 runs.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa

SCRIPT = textwrap.dedent(
    """
    import sys
    import lance_sql
    ctx = lance_sql.SessionContext()
    ctx.register_lance("t", sys.argv[1])
    print(ctx.sql(sys.argv[2]).to_arrow_table().num_rows)
    """
)


def test_exit_after_limit_does_not_abort(tmp_path: Path) -> None:
    n = 2_000_000
    uri = str(tmp_path / "t.lance")
    words = pa.array([f"v{i}" for i in range(1000)])
    table = pa.table(
        {
            "x": np.arange(n),
            "y": np.random.default_rng(0).random(n),
            "s": words.take(pa.array(np.arange(n) % 1000)),
        }
    )
    lance.write_dataset(table, uri)
    script = tmp_path / "early_stop.py"
    script.write_text(SCRIPT)
    codes = []
    for sql in ["SELECT * FROM t LIMIT 10", "SELECT x FROM t WHERE y < 0.5 LIMIT 3"] * 3:
        run = subprocess.run(
            [sys.executable, str(script), uri, sql], capture_output=True, text=True, timeout=120
        )
        codes.append((run.returncode, run.stdout.strip(), run.stderr[-300:]))
    assert all(c == 0 for c, _, _ in codes), codes
    assert [out for _, out, _ in codes] == ["10", "3"] * 3
