"""Code blocks of the user docs (README.md, docs/*.md), as the docs test runs them.

A fenced block whose info string starts with ``python`` or ``bash`` / ``sh``
runs; ``no-run`` after the language marks an illustrative block (skipped) and
``spark`` one that needs Spark (run only by the spark-marked test). Other
fences (output, ``text``, ``sql``, ``json``, ``console``) are not code to run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^`]*)$")
_LANGS = {"python": "python", "py": "python", "bash": "bash", "sh": "bash"}


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, flags, first code line (1-based) and code."""

    path: str
    line: int
    lang: str
    flags: frozenset[str]
    code: str

    @property
    def runs(self) -> bool:
        return self.lang in ("python", "bash") and "no-run" not in self.flags

    @property
    def needs_spark(self) -> bool:
        return "spark" in self.flags


def doc_files() -> list[Path]:
    """README.md and docs/*.md, without the benchmark records (docs/benchmarks*)."""
    docs = sorted(p for p in (REPO / "docs").glob("*.md") if not p.name.startswith("benchmarks"))
    return [REPO / "README.md", *docs]


def blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path`` in order; an unclosed fence is an error."""
    rel = str(path.relative_to(REPO))
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3).split()
        start = i + 1
        j = start
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        if j == len(lines):
            raise ValueError(f"{rel}:{i + 1}: code fence is never closed")
        body = [ln[len(indent) :] if ln.startswith(indent) else ln for ln in lines[start:j]]
        lang = _LANGS.get(info[0].lower(), info[0].lower()) if info else ""
        out.append(Block(rel, start + 1, lang, frozenset(info[1:]), "\n".join(body) + "\n"))
        i = j + 1
    return out
