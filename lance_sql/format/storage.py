"""Where bytes come from: a URI plus storage options, resolved to an fsspec filesystem.

Every metadata read goes through here so that local paths and any fsspec URL behave
alike, and a missing file surfaces as :class:`~lance_sql.errors.NotFoundError` naming
the full URL the user gave (not fsspec's stripped path).
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime, timezone
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
    """
    text = os.fspath(uri)
    if not isinstance(text, str):  # bytes paths
        text = os.fsdecode(text)
    if "://" not in text and not text.startswith("memory:"):
        text = os.path.abspath(os.path.expanduser(text))
    fs, path = fsspec.core.url_to_fs(text, **fsspec_options(text, storage_options))
    url = text.rstrip("/") if len(text) > 1 else text
    return Location(fs, path.rstrip("/") or path, url)


# Lance (object_store) option names -> what they mean, per backend. Both the bare and the
# ``aws_``-prefixed spellings are accepted, as object_store does.
_S3_KEYS = {
    "endpoint": ("aws_endpoint", "endpoint", "aws_endpoint_url", "endpoint_url"),
    "key": ("aws_access_key_id", "access_key_id"),
    "secret": ("aws_secret_access_key", "secret_access_key"),
    "token": ("aws_session_token", "session_token", "aws_token", "token"),
    "region": ("aws_region", "region", "aws_default_region"),
    "allow_http": ("allow_http", "aws_allow_http"),
    "virtual_hosted": ("aws_virtual_hosted_style_request", "virtual_hosted_style_request"),
}
_LANCE_ONLY_KEYS = frozenset(
    k for names in _S3_KEYS.values() for k in names if k not in ("key", "secret", "token")
)


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def fsspec_options(uri: str, storage_options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The fsspec constructor arguments meaning what Lance-style ``storage_options`` mean.

    One dict serves pylance (object_store names: ``aws_endpoint``, ``allow_http``...) and
    fsspec: for ``s3://`` / ``s3a://`` the Lance names are translated (native s3fs
    arguments given alongside win); other schemes get the options unchanged.
    """
    opts = dict(storage_options or {})
    scheme = uri.split("://", 1)[0].lower() if "://" in uri else ""
    if scheme not in ("s3", "s3a"):
        return opts
    found: dict[str, Any] = {}
    for meaning, names in _S3_KEYS.items():
        for name in names:
            if name in opts:
                found.setdefault(meaning, opts[name])
    out = {k: v for k, v in opts.items() if k not in _LANCE_ONLY_KEYS}
    client = dict(out.pop("client_kwargs", None) or {})
    endpoint = found.get("endpoint")
    if endpoint:
        endpoint = str(endpoint)
        if "://" not in endpoint:
            scheme_ = "http" if _truthy(found.get("allow_http", False)) else "https"
            endpoint = f"{scheme_}://{endpoint}"
        client.setdefault("endpoint_url", endpoint)
    if found.get("region"):
        client.setdefault("region_name", str(found["region"]))
    if client:
        out["client_kwargs"] = client
    for meaning in ("key", "secret", "token"):
        if meaning in found and meaning not in out:
            out[meaning] = found[meaning]
    # pylance writes behind fsspec's back: a cached listing would hide new versions.
    out.setdefault("use_listings_cache", False)
    if "virtual_hosted" in found and "config_kwargs" not in out:
        style = "virtual" if _truthy(found["virtual_hosted"]) else "path"
        out["config_kwargs"] = {"s3": {"addressing_style": style}}
    return out


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
    """The entries directly inside the directory at ``loc``, sorted by name (NotFoundError
    when missing; fsspec's ``ls`` of a file returning the file itself is normalised away)."""
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


@dataclass(frozen=True)
class FileInfo:
    """One file found by :func:`walk_files`: where, how big, when last modified."""

    location: Location
    relative: str  # path below the walked directory, ``/``-separated
    size: int
    mtime: datetime | None  # timezone-aware UTC; None when the backend does not say


def _mtime(info: Mapping[str, Any]) -> datetime | None:
    """Modification time from an fsspec info dict (local: ``mtime``; S3: ``LastModified``)."""
    for key in ("mtime", "LastModified", "last_modified", "modified", "updated", "created"):
        value = info.get(key)
        if value is None:
            continue
        if isinstance(value, (int, float)):
            return datetime.fromtimestamp(float(value), tz=timezone.utc)
        if isinstance(value, str):
            try:
                value = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                continue
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    return None


def walk_files(loc: Location) -> list[FileInfo]:
    """Every file below the directory at ``loc`` (recursively), sorted by relative path;
    a missing directory gives an empty list ("nothing to clean up")."""
    try:
        found = loc.fs.find(loc.path, detail=True)
    except FileNotFoundError:
        return []
    base = loc.path.rstrip("/")
    out = []
    for full, info in found.items():
        full = str(full).rstrip("/")
        if info.get("type") == "directory" or full == base or not full.startswith(base + "/"):
            continue
        rel = full[len(base) + 1 :]
        out.append(
            FileInfo(
                location=loc.join(rel),
                relative=rel,
                size=int(info.get("size") or 0),
                mtime=_mtime(info),
            )
        )
    out.sort(key=lambda f: f.relative)
    return out


def remove_file(loc: Location) -> None:
    """Delete the file at ``loc`` (a file already gone is not an error)."""
    with suppress(FileNotFoundError):
        loc.fs.rm_file(loc.path)
