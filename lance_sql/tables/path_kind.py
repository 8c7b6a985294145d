"""What a path holds (nothing, a file, a Lance dataset, a partitioned namespace, a folder).

Turns a failed open or create into an error saying what the path is and what to call
instead; only metadata listings are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from lance_sql.errors import IsADatasetError, IsANamespaceError, PathIsAFileError

Kind = Literal["missing", "file", "dataset", "namespace", "folder", "unknown"]

DATASET_HINT = "this is a Lance dataset: use --lance NAME=PATH / ctx.register_lance"
NAMESPACE_HINT = (
    "this is a partitioned namespace: use --ns NAME=PATH / ctx.register_namespace "
    "(PartitionedNamespace.open)"
)


def path_kind(uri: str, storage_options: Mapping[str, Any] | None = None) -> Kind:
    """Classify ``uri`` from a few existence checks; ``unknown`` when they fail."""
    from lance_sql.format.storage import resolve

    try:
        loc = resolve(uri, storage_options)
        fs, path = loc.fs, loc.path
        if not fs.exists(path):
            return "missing"
        if fs.isfile(path):
            return "file"
        if fs.exists(f"{path}/__manifest"):
            return "namespace"
        if fs.exists(f"{path}/_versions"):
            return "dataset"
        return "folder"
    except Exception:
        return "unknown"


def wrong_kind(
    uri: str,
    wanted: Literal["dataset", "namespace"],
    storage_options: Mapping[str, Any] | None = None,
) -> Exception | None:
    """The error for a ``wanted`` expected at ``uri`` where the other kind or a file is, or None."""
    kind = path_kind(uri, storage_options)
    if kind == "file":
        if wanted == "dataset":
            return PathIsAFileError(f"{uri} is an existing file, not a Lance dataset folder")
        return PathIsAFileError(
            f"{uri} is an existing file, not a partitioned namespace folder: "
            "give the path of a folder (a new one to create a namespace)"
        )
    if kind == "namespace" and wanted == "dataset":
        return IsANamespaceError(f"{uri} is not a Lance dataset; {NAMESPACE_HINT}")
    if kind == "dataset" and wanted == "namespace":
        return IsADatasetError(f"{uri} is not a partitioned namespace; {DATASET_HINT}")
    return None


def prepare_root(uri: str, mode: str, storage_options: Mapping[str, Any] | None = None) -> bool:
    """Check ``uri`` before a namespace is created there; True when ``mode`` says open it.

    A namespace there: ``create`` raises :class:`NamespaceExistsError`, ``exist_ok``
    opens it, ``overwrite`` removes it. A file or Lance dataset is always refused.
    """
    from lance_sql.errors import NamespaceExistsError

    if mode not in ("create", "exist_ok", "overwrite"):
        raise ValueError(f"mode must be 'create', 'exist_ok' or 'overwrite', got {mode!r}")
    kind = path_kind(uri, storage_options)
    if kind == "file":
        raise PathIsAFileError(
            f"cannot create a namespace at {uri}: it is an existing file; choose a folder path"
        )
    if kind == "dataset":
        raise IsADatasetError(
            f"cannot create a namespace at {uri}: {DATASET_HINT}, or choose another path"
        )
    if kind != "namespace":
        return False
    if mode == "exist_ok":
        return True
    if mode == "create":
        raise NamespaceExistsError(
            f"a namespace already exists at {uri}: open it with PartitionedNamespace.open, "
            "or pass mode='exist_ok' (keep it) or mode='overwrite' (replace it)"
        )
    from lance_sql.format.storage import resolve

    loc = resolve(uri, storage_options)
    loc.fs.rm(loc.path, recursive=True)
    return False
