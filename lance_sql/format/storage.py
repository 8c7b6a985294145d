"""Where bytes come from: a URI plus storage options, resolved to an fsspec filesystem.

Every read of Lance metadata (and of namespace files in higher layers) goes
through this module so that local paths, ``file://``, ``memory://`` and any
other fsspec URL behave alike, and so that a missing file always surfaces as
:class:`~lance_sql.errors.NotFoundError` naming the path the user would
recognise (the full URL, not fsspec's stripped path).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import fsspec
from fsspec import AbstractFileSystem

from lance_sql.errors import NotFoundError


@dataclass(frozen=True)
class Location:
    """A directory or file on some filesystem: the fs, its own path, and the URL for messages."""

    fs: AbstractFileSystem = field(repr=False, compare=False)
    path: str
    url: str

    def join(self, *parts: str) -> Location:
        """The location ``parts`` below this one (plain ``/`` joins; no normalisation)."""
        rel = "/".join(p.strip("/") for p in parts if p)
        if not rel:
            return self
        return Location(
            self.fs,
            f"{self.path.rstrip('/')}/{rel}",
            f"{self.url.rstrip('/')}/{rel}",
        )

    @property
    def name(self) -> str:
        """The last path component."""
        return posixpath.basename(self.path.rstrip("/"))


def resolve(
    uri: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None
) -> Location:
    """Resolve a URI (local path, ``file://``, ``memory://``, any fsspec URL) to a Location.

    Local paths are made absolute so that messages name an unambiguous file.
    ``storage_options`` are passed to the fsspec filesystem constructor.
    """
    text = os.fspath(uri)
    if not isinstance(text, str):  # bytes paths
        text = os.fsdecode(text)
    if "://" not in text and not text.startswith("memory:"):
        text = os.path.abspath(os.path.expanduser(text))
    fs, path = fsspec.core.url_to_fs(text, **dict(storage_options or {}))
    url = text.rstrip("/") if len(text) > 1 else text
    return Location(fs, path.rstrip("/") or path, url)


@contextmanager
def _not_found_as_error(loc: Location) -> Iterator[None]:
    """Turn the ways fsspec reports a missing file into NotFoundError naming ``loc``."""
    try:
        yield
    except NotFoundError:
        raise
    except FileNotFoundError as exc:
        raise NotFoundError("no such file or directory", path=loc.url) from exc
    except NotADirectoryError as exc:
        raise NotFoundError("not a directory", path=loc.url) from exc
    except IsADirectoryError as exc:
        raise NotFoundError("is a directory, not a file", path=loc.url) from exc


def file_size(loc: Location) -> int:
    """Size in bytes of the file at ``loc``."""
    with _not_found_as_error(loc):
        size = loc.fs.size(loc.path)
    if size is None:
        raise NotFoundError("size unknown (not a file?)", path=loc.url)
    return int(size)


def read_file(loc: Location) -> bytes:
    """The whole file at ``loc``."""
    with _not_found_as_error(loc):
        return bytes(loc.fs.cat_file(loc.path))


def read_range(loc: Location, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of the file at ``loc`` (fewer if the file is shorter)."""
    if start < 0 or end < start:
        raise ValueError(f"invalid byte range [{start}, {end}) for {loc.url}")
    if end == start:
        return b""
    with _not_found_as_error(loc):
        return bytes(loc.fs.cat_file(loc.path, start=start, end=end))


@dataclass(frozen=True)
class Entry:
    """One directory entry: its name, location, kind and size (files only)."""

    name: str
    location: Location
    is_dir: bool
    size: int | None


def list_dir(loc: Location) -> list[Entry]:
    """The entries directly inside the directory at ``loc``, sorted by name.

    A missing directory raises NotFoundError; fsspec's per-backend quirks
    (``ls`` of a file returning the file itself) are normalised away.
    """
    with _not_found_as_error(loc):
        raw = loc.fs.ls(loc.path, detail=True)
    base = loc.path.rstrip("/")
    entries = []
    for info in raw:
        full = str(info.get("name", "")).rstrip("/")
        name = posixpath.basename(full)
        if not name or full == base:
            continue
        kind = info.get("type")
        size = info.get("size")
        entries.append(
            Entry(
                name=name,
                location=Location(loc.fs, full, f"{loc.url.rstrip('/')}/{name}"),
                is_dir=kind == "directory",
                size=int(size) if size is not None and kind != "directory" else None,
            )
        )
    entries.sort(key=lambda e: e.name)
    return entries


def exists(loc: Location) -> bool:
    """Whether anything exists at ``loc``."""
    return bool(loc.fs.exists(loc.path))


__all__ = [
    "Entry",
    "Location",
    "exists",
    "file_size",
    "list_dir",
    "read_file",
    "read_range",
    "resolve",
]
