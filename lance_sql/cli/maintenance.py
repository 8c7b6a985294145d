"""The ``compact`` and ``expire`` subcommands, and the per-partition storage and index
columns of ``inspect`` (fragments, deleted rows, reclaimable bytes, index coverage)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any, TextIO

from lance_sql.cli.output import human_size
from lance_sql.cli.session import UsageError, open_namespace

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> timedelta:
    """``30s``, ``15m``, ``12h``, ``7d``, ``2w`` (a bare number is seconds)."""
    m = _DURATION.match(text)
    if m is None:
        raise UsageError(f"not a duration: {text!r} (examples: 30s, 15m, 12h, 7d, 2w)")
    return timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])


def cmd_compact(args: Any, out: TextIO) -> int:
    ns = open_namespace(args.root)
    report = ns.compact(target_rows_per_fragment=args.target_rows_per_fragment)
    out.write(f"{report}\n")
    return 0


def cmd_expire(args: Any, out: TextIO) -> int:
    ns = open_namespace(args.root)
    r = ns.expire_versions(older_than=parse_duration(args.older_than))
    out.write(
        f"removed {r.manifest_versions_removed} __manifest versions and "
        f"{r.table_versions_removed} versions of {r.tables} partition tables "
        f"({human_size(r.bytes_removed)})\n"
    )
    return 0


def indexes_by_partition(ns: Any) -> dict[str, dict[str, Any]]:
    """``object_id -> {"indexes": {name: "indexed/rows" or "missing"}}`` per partition table.

    ``indexed/rows`` as pylance counts them at the pinned version; a table with
    unindexed fragments adds ``+N unindexed fragments``.
    """
    out: dict[str, dict[str, Any]] = {}
    for r in ns.index_coverage().to_pylist():
        if not r["present"]:
            text = "missing"
        else:
            text = f"{r['indexed_rows']}/{r['rows']}"
            if r["unindexed_fragments"]:
                text += f" +{r['unindexed_fragments']} unindexed fragments"
        out.setdefault(r["object_id"], {"indexes": {}})["indexes"][r["index"]] = text
    return out


def describe_indexes(indexes: dict[str, str]) -> str:
    """``  indexes: id_idx=40/40, region_idx=missing`` for one partition line (or '')."""
    if not indexes:
        return ""
    return "  indexes: " + ", ".join(f"{k}={v}" for k, v in sorted(indexes.items()))
