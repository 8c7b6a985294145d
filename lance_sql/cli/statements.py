"""Split SQL text into statements and read the header comments of example files.

A scanner, not ``str.split(";")``: a ``;`` in a literal, quoted identifier or comment ends nothing.
"""

from __future__ import annotations

import re


def split_statements(text: str) -> list[str]:
    """Return the non-empty statements of ``text`` (``;``-separated), comments kept."""
    out: list[str] = []
    buf: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in ("'", '"'):
            j = i + 1
            while j < n:
                if text[j] == ch:
                    if j + 1 < n and text[j + 1] == ch:  # doubled quote escapes itself
                        j += 2
                        continue
                    break
                j += 1
            buf.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("--", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            buf.append(text[i:j])
            i = j
        elif text.startswith("/*", i):  # a block comment: a ';' inside ends nothing
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            buf.append(text[i:j])
            i = j
        elif ch == ";":
            out.append("".join(buf))
            buf = []
            i += 1
        else:
            buf.append(ch)
            i += 1
    out.append("".join(buf))
    return [s.strip() for s in out if _has_code(s)]


def _has_code(stmt: str) -> bool:
    return any(line.strip() and not line.strip().startswith("--") for line in stmt.splitlines())


_TAG = re.compile(r"^--\s*([A-Za-z][A-Za-z ]*):\s*(.*)$")


def header_tags(text: str) -> dict[str, str]:
    """``-- Key: value`` lines of the leading comment block, keys lower-cased."""
    tags: dict[str, str] = {}
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if not s.startswith("--"):
            break
        m = _TAG.match(s)
        if m:
            tags[m.group(1).strip().lower()] = m.group(2).strip()
    return tags
