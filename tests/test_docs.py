"""Docs as tests: every ```python and ```bash block of README.md and docs/*.md runs.

Each file's blocks run in order in one fresh temporary folder: the python blocks
in one interpreter (state shared, like a notebook), the bash blocks in the same
folder with ``lance-sql`` on PATH. A failure names the file and the block's
line. Blocks marked ``no-run`` are illustrative and skipped; blocks marked
``spark`` run only in the spark-marked test.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from docs_blocks import REPO, Block, blocks, doc_files

RUNNER = Path(__file__).with_name("docs_runner.py")
FILES = doc_files()
IDS = [str(p.relative_to(REPO)) for p in FILES]
SPARK_FILES = [p for p in FILES if any(b.needs_spark and b.runs for b in blocks(p))]


def _bin_dir(tmp: Path) -> Path:
    """A PATH entry whose ``lance-sql`` and ``python`` run this checkout's code."""
    bin_dir = tmp / "_bin"
    bin_dir.mkdir()
    launcher = bin_dir / "lance-sql"
    launcher.write_text(
        f'#!/bin/sh\nexec "{sys.executable}" -c '
        "'import sys; from lance_sql.cli.main import main; sys.exit(main())' \"$@\"\n"
    )
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    for f in (launcher, python):
        f.chmod(f.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def _run(path: Path, chosen: list[Block], tmp: Path, timeout: float) -> None:
    work = tmp / "work"
    work.mkdir()
    spec = tmp / "blocks.json"
    spec.write_text(json.dumps([b.__dict__ | {"flags": sorted(b.flags)} for b in chosen]))
    env = dict(os.environ)
    env["PATH"] = f"{_bin_dir(tmp)}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("LANCE_LOG", None)  # the docs show what a user sees
    proc = subprocess.run(
        [sys.executable, str(RUNNER), str(spec)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        failed = [ln for ln in proc.stderr.splitlines() if ln.startswith("FAILED ")]
        head = failed[0][len("FAILED ") :] if failed else f"{path.name}: runner crashed"
        pytest.fail(
            f"doc block failed: {head}\n--- stdout (tail) ---\n{proc.stdout[-3000:]}"
            f"\n--- stderr (tail) ---\n{proc.stderr[-4000:]}",
            pytrace=False,
        )


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_doc_blocks_run(path: Path, tmp_path: Path) -> None:
    chosen = [b for b in blocks(path) if b.runs and not b.needs_spark]
    if not chosen:
        pytest.skip("no runnable blocks")
    _run(path, chosen, tmp_path, timeout=600)  # a loaded 2-core machine: ~10x idle time


@pytest.mark.spark
@pytest.mark.parametrize("path", SPARK_FILES, ids=[p.name for p in SPARK_FILES])
def test_doc_blocks_run_with_spark(path: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    _run(path, [b for b in blocks(path) if b.runs], tmp_path, timeout=600)


def test_no_run_blocks_are_few() -> None:
    """Illustrative blocks stay the exception: at most a few per file."""
    for path in FILES:
        skipped = [b.line for b in blocks(path) if b.lang in ("python", "bash") and not b.runs]
        assert len(skipped) <= 3, f"{path.name}: no-run blocks at lines {skipped}"


def test_docs_name_no_development_bookkeeping() -> None:
    """User docs carry no issue numbers or work-log labels (session N, helper X)."""
    import re

    pattern = re.compile(
        r"\b(issues? ?#?\d+|session[ -]\d+|helper [A-Z]\b|brief s\d+)"
        r"|(?<![\w/#])#\d{1,2}\b(?![\w-])",
        re.IGNORECASE,
    )
    bench = [REPO / "docs" / "benchmarks.md", *sorted((REPO / "docs").glob("benchmarks/*.md"))]
    docs = [*FILES, *bench]
    found = []
    for path in docs:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in pattern.finditer(line):
                found.append(f"{path.relative_to(REPO)}:{n}: {m.group(0)}")
    assert not found, "\n".join(found[:40]) + f"\n({len(found)} in all)"
