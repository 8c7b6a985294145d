"""Per-table Lance scan options: pylance scanner settings a table's scans use.

Given as ``scan_options={...}`` to ``register_lance`` / ``register_namespace`` and passed
to every pylance scanner of the table; docs/scan_options.md describes each option.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lance_sql.errors import LanceSqlError

#: option -> the types it accepts
OPTIONS: dict[str, tuple[type, ...]] = {
    "batch_size": (int,),
    "batch_readahead": (int,),
    "fragment_readahead": (int,),
    "io_buffer_size": (int,),
    "late_materialization": (bool, list, tuple),
}


class ScanOptionsError(LanceSqlError, ValueError):
    """A scan option that does not exist or has a value of the wrong kind."""


def checked_scan_options(options: Mapping[str, Any] | None, what: str) -> dict[str, Any] | None:
    """``options`` validated (None when empty); ``what`` names the table in errors."""
    if not options:
        return None
    out: dict[str, Any] = {}
    for key, value in options.items():
        kinds = OPTIONS.get(key)
        if kinds is None:
            raise ScanOptionsError(
                f"{what}: unknown scan option {key!r}; known: {', '.join(sorted(OPTIONS))}"
            )
        ok = isinstance(value, kinds) and (kinds == (bool, list, tuple) or type(value) is int)
        if not ok or (type(value) is int and value < 1):
            want = "True, False or a list of column names" if int not in kinds else "an int >= 1"
            raise ScanOptionsError(f"{what}: scan option {key} must be {want}, got {value!r}")
        out[key] = list(value) if isinstance(value, tuple) else value
    return out
