"""The ``lance_ns`` options every Spark entry point reads: namespace root, version,
storage options (reader, writer and write planning share them)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from lance_sql.engines.spark.paths import normalize_root
from lance_sql.errors import LanceSqlError


def _root(options: Mapping[str, str]) -> str:
    root = options.get("path")
    if not root:
        hint = (
            " Spark passed no options at all: pyspark 4.3 gives a Python data source none "
            "for a catalog table (CREATE TABLE ... USING lance_ns LOCATION/OPTIONS); use "
            "CREATE TEMPORARY VIEW v USING lance_ns OPTIONS (path '/data/ns')"
            if not options
            else f" (options given: {sorted(options)})"
        )
        raise LanceSqlError(f"lance_ns: give the namespace root, e.g. .load('/data/ns').{hint}")
    return normalize_root(root)


def int_option(
    options: Mapping[str, str],
    key: str,
    *,
    parse: Callable[[str], int] = int,
    noun: str = "integer",
    zero: bool | None = None,
) -> int | None:
    """A positive whole-number option (``zero``: non-negative, the default for ``version``),
    read by ``parse``; None when absent."""
    raw = options.get(key)
    if raw is None or str(raw).strip() == "":
        return None
    try:
        value = parse(str(raw).strip())
    except ValueError:
        value = -1
    zero = key == "version" if zero is None else zero
    if value < (0 if zero else 1):
        raise LanceSqlError(
            f"lance_ns {options.get('path')}: option {key}={raw!r} is not a "
            f"{'non-negative' if zero else 'positive'} {noun}"
        )
    return value


def text_option(options: Mapping[str, str], key: str) -> str | None:
    """The option ``key`` in any case (Spark lower-cases option keys), stripped; None if blank."""
    lower = {str(k).lower(): str(v) for k, v in options.items()}
    return lower.get(key.lower(), "").strip() or None


def storage_options(options: Mapping[str, str]) -> dict[str, str] | None:
    """The ``storage_options`` option (a JSON object of strings), or None."""
    raw = options.get("storage_options")
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError as e:
        raise LanceSqlError(
            f"lance_ns {options.get('path')}: option storage_options is not JSON: {e}"
        ) from e
    if not isinstance(value, dict):
        raise LanceSqlError(
            f"lance_ns {options.get('path')}: option storage_options must be a JSON object, "
            f"got {type(value).__name__}"
        )
    return {str(k): str(v) for k, v in value.items()}


def read_options(
    root: str,
    version: int | None = None,
    storage_options: Mapping[str, str] | None = None,
    **extra: str,
) -> dict[str, str]:
    """The ``lance_ns`` options naming ``root`` at ``version`` (read by :func:`open_namespace`)."""
    options = {"path": root}
    if version is not None:
        options["version"] = str(version)
    if storage_options:
        options["storage_options"] = json.dumps(dict(storage_options))
    return options | {k: v for k, v in extra.items() if v}


def open_at(
    root: str, version: int | None = None, storage_options: Mapping[str, str] | None = None
) -> Any:
    """The namespace at ``root`` (any form Spark writes, :mod:`.paths`) at ``version``."""
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    opts = dict(storage_options) if storage_options else None
    return PartitionedNamespace.open(normalize_root(root), version=version, storage_options=opts)


def open_namespace(options: Mapping[str, str], version: int | None = None) -> Any:
    """The namespace the options name, at ``version`` (else the ``version`` option, else latest)."""
    if version is None:
        version = int_option(options, "version")
    return open_at(_root(options), version, storage_options(options))
