"""Build a :class:`lance_sql.SessionContext` from ``--ns`` / ``--lance`` flags."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lance_sql.errors import NotFoundError


class UsageError(Exception):
    """A malformed command line (exit code 2), detected after argparse."""


def parse_binding(text: str, flag: str) -> tuple[str, str]:
    """``NAME=URI`` -> ``(NAME, URI)``; anything else is a usage error naming the flag."""
    name, sep, uri = text.partition("=")
    if not sep or not name.strip() or not uri.strip():
        raise UsageError(f"{flag} expects NAME=PATH, got {text!r}")
    return name.strip(), uri.strip()


def check_local_root(root: str, what: str) -> None:
    """A one-line error for a missing local path (pylance's spans lines of Rust locations);
    URIs with a scheme are left to the engine."""
    if "://" not in root and not Path(root).exists():
        raise NotFoundError(f"{what} {root!r} does not exist")


def open_namespace(root: str, *, repair: bool = False) -> Any:
    """The partitioned namespace at ``root`` (``repair``: its ``__manifest`` rebuilt first,
    :meth:`PartitionedNamespace.repair`); a one-line error when there is none."""
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    check_local_root(root, "namespace")
    if "://" not in root and not (Path(root) / "__manifest").exists():
        raise NotFoundError(f"{root!r} is not a partitioned namespace (it has no __manifest)")
    return PartitionedNamespace.repair(root) if repair else PartitionedNamespace.open(root)


def make_context(ns: Sequence[str] = (), lance: Sequence[str] = ()) -> Any:
    """A session with every ``--ns`` namespace and ``--lance`` dataset registered."""
    from lance_sql.engines.datafusion.context import SessionContext

    ctx = SessionContext()
    for item in ns:
        name, root = parse_binding(item, "--ns")
        check_local_root(root, "namespace")
        ctx.register_namespace(name, root)
    for item in lance:
        name, uri = parse_binding(item, "--lance")
        check_local_root(uri, "Lance dataset")
        ctx.register_lance(name, uri)
    return ctx
