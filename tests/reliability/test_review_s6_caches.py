"""Adversarial review (session 6): process-wide caches keyed by version vs a root restored
from a backup copy (same partition table locations and version numbers, other rows).

A namespace root is copied (a backup), written on, then deleted and replaced by the
copy, which is written on again: a partition table now has, at the same uri and
version number, different rows than before. The truth is what a fresh process reads.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

import lance_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SPEC = [{"field_id": "k", "source": "k", "transform": {"type": "identity"}}]
SCHEMA = pa.schema([("k", pa.int64()), ("x", pa.int64())])
# Found by this review: reader._OPENED (0107d35) cached opened partition tables by (uri,
# version) only, so a root restored from a copy reused the old rows; cached opens are now
# checked against the version's manifest file (dataset_cache.version_token).


def _rows(xs: list[int]) -> pa.Table:
    return pa.table({"k": [1] * len(xs), "x": xs}, schema=SCHEMA)


def _fresh_process_rows(root: str) -> list[int]:
    code = (
        "from lance_sql.tables.namespace.namespace import PartitionedNamespace as P\n"
        f"print(sorted(P.open({root!r}).to_table()['x'].to_pylist()))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return eval(out.stdout)  # a list of ints printed by the child


def _restore_story(tmp_path: Path) -> str:
    root, backup = str(tmp_path / "ns"), str(tmp_path / "backup")
    ns = PartitionedNamespace.create(root, SCHEMA, SPEC)
    ns.append(_rows([1, 2]))
    shutil.copytree(root, backup)
    PartitionedNamespace.open(root).append(_rows([100]))
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)  # this process reads the table at its new version
    assert ctx.sql("SELECT x FROM t WHERE x = 100").to_arrow_table().num_rows == 1
    shutil.rmtree(root)
    shutil.copytree(backup, root)  # restore the backup
    PartitionedNamespace.open(root).append(_rows([200]))  # same table version as x = 100's
    return root


def test_reads_after_a_root_is_restored_from_a_copy(tmp_path: Path) -> None:
    root = _restore_story(tmp_path)
    assert _fresh_process_rows(root) == [1, 2, 200]
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    got = ctx.sql("SELECT x FROM t ORDER BY x").to_arrow_table()["x"].to_pylist()
    assert got == [1, 2, 200]


def test_delete_after_a_root_is_restored_from_a_copy(tmp_path: Path) -> None:
    root = _restore_story(tmp_path)
    deleted = PartitionedNamespace.open(root).delete("x = 100")  # no such row now
    assert _fresh_process_rows(root) == [1, 2, 200]
    assert deleted == 0


def test_two_roots_with_identical_content_then_diverging(tmp_path: Path) -> None:
    """A copied root has the same table locations and versions under another uri."""
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    ns = PartitionedNamespace.create(a, SCHEMA, SPEC)
    ns.append(_rows([1, 2]))
    shutil.copytree(a, b)
    ctxs = {}
    for root in (a, b):
        ctxs[root] = lance_sql.SessionContext()
        ctxs[root].register_namespace("t", root)
        assert ctxs[root].sql("SELECT x FROM t WHERE x = 2").to_arrow_table().num_rows == 1
    PartitionedNamespace.open(a).append(_rows([100]))
    PartitionedNamespace.open(b).append(_rows([200]))  # the same table version as a's
    PartitionedNamespace.open(b).delete("x = 1")
    PartitionedNamespace.open(a).update({"x": "x + 10"}, where="x = 2")
    for root, want in ((a, [1, 12, 100]), (b, [2, 200])):
        for ctx in (ctxs[root], None):
            if ctx is None:
                ctx = lance_sql.SessionContext()
                ctx.register_namespace("t", root)
            got = ctx.sql("SELECT x FROM t ORDER BY x").to_arrow_table()["x"].to_pylist()
            assert got == want, root
            for v in (1, 2, 12, 100, 200):
                n = ctx.sql(f"SELECT x FROM t WHERE x = {v}").to_arrow_table().num_rows
                assert n == (v in want), (root, v)
        assert sorted(PartitionedNamespace.open(root).to_table()["x"].to_pylist()) == want
