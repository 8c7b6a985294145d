"""``lance-sql compact``, ``expire`` and the storage columns of ``inspect``."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pyarrow as pa

import lance_sql
from lance_sql.cli.main import main

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("region", pa.string())])
SPEC = [{"field_id": "region", "source": "region", "transform": {"type": "identity"}}]


def _run(*argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = main(list(argv))
    return rc, buf.getvalue()


def test_compact_expire_and_inspect(tmp_path: Path) -> None:
    root = str(tmp_path / "ns")
    ns = lance_sql.PartitionedNamespace.create(root, SCHEMA, SPEC)
    for i in range(4):
        rows = {"id": [i, 10 + i, 20 + i], "region": ["a", "b", "b"]}
        ns.append(pa.table(rows, schema=SCHEMA))
    ns.delete("id = 11")
    rc, text = _run("inspect", root, "--json")
    assert rc == 0
    rep = json.loads(text)
    by_region = {p["values"]["region"]: p for p in rep["partitions"]}
    assert by_region["a"]["fragments"] == 4 and by_region["b"]["deleted_rows"] == 1
    rc, text = _run("compact", root, "--target-rows-per-fragment", "1000")
    assert rc == 0 and "compacted 2 partition tables" in text
    rc, text = _run("inspect", root)
    assert rc == 0 and "fragments=1" in text and "reclaimable" in text
    before = json.loads(_run("inspect", root, "--json")[1])["reclaimable_bytes"]
    assert before > 0  # the pre-compaction files
    rc, text = _run("expire", root, "--older-than", "0s")
    assert rc == 0 and "removed" in text
    after = json.loads(_run("inspect", root, "--json")[1])
    assert after["reclaimable_bytes"] < before and after["rows"] == 11
    assert main(["expire", root, "--older-than", "soon"]) == 2
