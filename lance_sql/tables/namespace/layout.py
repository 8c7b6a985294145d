"""Names and paths of a (partitioned) directory namespace (docs/namespaces.md).

Readers never recompute a directory name: they resolve the stored ``location``, and
:func:`resolve_location` refuses any location that could escape the root.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import string
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import LanceSqlError, UnsafeLocationError
from lance_sql.format.storage import resolve

DELIMITER = "$"
MANIFEST_NAME = "__manifest"
TABLE_NAME = "dataset"
NAMESPACE = "namespace"
TABLE = "table"

_BASE36 = string.ascii_lowercase + string.digits
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_V = r"v(?P<v>[1-9][0-9]{0,8})"  # a v{N} spec version namespace: ASCII digits, no leading 0
_HEAD_RE = re.compile(_V)


def random_namespace_name() -> str:
    """16 random characters from ``a-z0-9`` (~83 bits; spec: Partition Namespace Naming)."""
    return "".join(secrets.choice(_BASE36) for _ in range(16))


def derived_namespace_name(seed: str) -> str:
    """16 ``a-z0-9`` characters derived from ``seed`` (a write id and a partition key), so
    every task of a distributed write names a new partition namespace alike."""
    digest = int.from_bytes(hashlib.sha256(seed.encode()).digest(), "big")
    out = []
    for _ in range(16):
        digest, r = divmod(digest, len(_BASE36))
        out.append(_BASE36[r])
    return "".join(out)


def join_object_id(*parts: str) -> str:
    return DELIMITER.join(parts)


def spec_version_of(object_id: str) -> int | None:
    """N when ``object_id`` lies under the ``v{N}`` spec version namespace (``v{N}$...``),
    else None: a table at the root named ``v3`` is not under namespace ``v3``."""
    head, under, _ = object_id.partition(DELIMITER)
    return spec_namespace_version(head) if under else None


def spec_namespace_version(name: str) -> int | None:
    """N when ``name`` is the name of the ``v{N}`` spec version namespace itself."""
    found = _HEAD_RE.fullmatch(name)
    return int(found.group(1)) if found else None


_VERSION_RE = rf"^{_V}\$"
_VERSION = re.compile(_VERSION_RE)
_FEW = 64  # up to this many ids, Python's compiled regex is cheaper than pyarrow's


def spec_ids_of(object_ids: Any) -> np.ndarray:
    """:func:`spec_version_of` of every id of an ``object_id`` column below a spec version
    namespace, else -1 (``v1`` itself too); one vectorised regex, no Python loop."""
    if len(object_ids) == 0:
        return np.zeros(0, dtype=np.int64)
    if len(object_ids) <= _FEW:  # pyarrow compiles the regex per call: 0.2 ms
        matches = (None if i is None else _VERSION.match(i) for i in object_ids.to_pylist())
        return np.array([int(m.group("v")) if m else -1 for m in matches], dtype=np.int64)
    found = pc.extract_regex(object_ids, _VERSION_RE)
    versions = pc.struct_field(found, "v").cast(pa.int64()).fill_null(-1)
    return np.asarray(versions.to_numpy(zero_copy_only=False), dtype=np.int64)


def table_dir_name(object_id: str, seed: str | None = None) -> str:
    """``{8 hex}_{object_id}``: hash of a random number (or of a distributed write's
    ``seed``, so all its tasks agree) and the id, as pylance does."""
    salt = secrets.token_bytes(8) if seed is None else seed.encode()
    digest = hashlib.sha256(salt + object_id.encode()).hexdigest()
    return f"{digest[:8]}_{object_id}"


def data_dir_uri(root: str, location: str, branch: str | None = None) -> str:
    """Where a table's data files live: ``{location}[/tree/{branch}]/data``."""
    base = child_uri(root, location)
    return f"{base}/tree/{branch}/data" if branch else f"{base}/data"


def root_uri(root: str | os.PathLike[str]) -> str:
    """A root URI pylance and fsspec agree on: local paths absolute, no trailing slash."""
    text = os.fspath(root)
    if "://" not in text:
        text = os.path.abspath(os.path.expanduser(text))
    return text.rstrip("/") if len(text) > 1 else text


def child_uri(root: str, relative: str) -> str:
    return f"{root.rstrip('/')}/{relative}"


def manifest_uri(root: str) -> str:
    return child_uri(root, MANIFEST_NAME)


def resolve_location(root: str, location: str | None, object_id: str) -> str:
    """The URI of a table stored at ``location`` (relative to ``root``); absolute paths,
    URLs, drive letters, backslashes and ``..``/``.`` segments raise
    :class:`UnsafeLocationError` (a foreign ``__manifest`` must not reach outside)."""
    if location is None or location == "":
        raise UnsafeLocationError(f"table {object_id!r} has no location in __manifest")
    reason = None
    if location.startswith(("/", "~")) or _SCHEME_RE.match(location):
        reason = "is absolute or has a scheme"
    elif "\\" in location or "\x00" in location:
        reason = "contains a backslash or NUL"
    else:
        segments = location.split("/")
        if any(s in ("", ".", "..") for s in segments):
            reason = "has an empty, '.' or '..' path segment"
    if reason:
        raise UnsafeLocationError(
            f"location {location!r} of table {object_id!r} {reason}; "
            f"it must stay inside the namespace root {root}"
        )
    return child_uri(root, location)


def remove_quietly(
    uri: str, names: Iterable[str] | None, storage_options: Mapping[str, str] | None
) -> None:
    """Best-effort deletion of the files ``names`` (relative to ``uri``) or, with None,
    of ``uri`` and everything below it (cleanup() finds what is left)."""
    try:
        loc = resolve(uri, storage_options)
        for path in [loc.path] if names is None else [f"{loc.path}/{n}" for n in names]:
            if loc.fs.exists(path):
                loc.fs.rm(path, recursive=names is None)
    except (OSError, LanceSqlError):
        pass
