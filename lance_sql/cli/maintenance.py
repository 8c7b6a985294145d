"""The ``compact`` and ``expire`` subcommands, and the per-partition storage columns of
``inspect`` (fragments, deleted rows, reclaimable bytes)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any, TextIO

from lance_sql.cli.session import UsageError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> timedelta:
    """``30s``, ``15m``, ``12h``, ``7d``, ``2w`` (a bare number is seconds)."""
    m = _DURATION.match(text)
    if m is None:
        raise UsageError(f"not a duration: {text!r} (examples: 30s, 15m, 12h, 7d, 2w)")
    return timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])


def _open(root: str) -> Any:
    from lance_sql.cli.commands import _open_namespace

    return _open_namespace(root)


def cmd_compact(args: Any, out: TextIO) -> int:
    ns = _open(args.root)
    report = ns.compact(target_rows_per_fragment=args.target_rows_per_fragment)
    out.write(f"{report}\n")
    return 0


def cmd_expire(args: Any, out: TextIO) -> int:
    ns = _open(args.root)
    report = ns.expire_versions(older_than=parse_duration(args.older_than))
    out.write(f"{report}\n")
    return 0


def storage_by_partition(ns: Any) -> dict[str, dict[str, Any]]:
    """``object_id -> {fragments, rows, deleted_rows, versions, reclaimable_bytes}``."""
    from lance_sql.tables.namespace.maintenance import table_stats

    return {s.pop("object_id"): s for s in table_stats(ns)}


__all__ = ["cmd_compact", "cmd_expire", "parse_duration", "storage_by_partition"]
