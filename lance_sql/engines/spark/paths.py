"""Namespace roots as Spark and Hadoop write them -> URIs pylance and fsspec open.

A relative path is resolved where the data source is created (the driver), so executors,
whose working directories differ, receive the absolute path.
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote

from lance_sql.errors import LanceSqlError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_S3_ALIASES = ("s3a", "s3n")


def normalize_root(root: str, cwd: str | None = None) -> str:
    """``root`` as an absolute local path or an object-store URI."""
    text = root.strip()
    if not text:
        raise LanceSqlError("lance_ns: empty namespace root")
    m = _SCHEME.match(text)
    scheme = m.group(1).lower() if m else None
    if scheme is not None and len(scheme) == 1:
        scheme = None  # a Windows drive letter, not a scheme
    if scheme == "file":
        rest = text[len("file:") :]
        if rest.startswith("//"):
            host, sep, path = rest[2:].partition("/")
            if host not in ("", "localhost"):
                raise LanceSqlError(
                    f"lance_ns: {root!r} names host {host!r}; give a local path or an "
                    "object-store URI"
                )
            rest = "/" + path if sep else "/"
        return os.path.normpath(unquote(rest)) if rest.startswith("/") else _resolve(rest, cwd)
    if scheme in _S3_ALIASES:
        return "s3" + text[len(scheme) :]
    if scheme is not None:
        return text
    return _resolve(text, cwd)


def _resolve(path: str, cwd: str | None) -> str:
    if os.path.isabs(path):
        return os.path.normpath(path)
    return os.path.normpath(os.path.join(cwd or os.getcwd(), path))
