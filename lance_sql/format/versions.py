"""Which manifest files a dataset has, and which one a version or a tag means.

Version file naming (V1/V2, detached versions ignored) is described in
``docs/format.md``; ``latest_version_hint.json`` is never trusted. Tags live in
``{root}/_refs/tags/{name}.json`` (``version``, ``branch``); a branch's versions under
``{root}/tree/{branch}/``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from lance_sql.errors import FormatError, NotFoundError
from lance_sql.format._pb import table_pb2
from lance_sql.format.manifest import read_manifest
from lance_sql.format.storage import Entry, Location, list_dir, read_file, resolve

U64_MAX = (1 << 64) - 1
DETACHED_BIT = 1 << 63
V2_DIGITS = 20
MAX_TAG_FILE = 1 << 20

_V1_NAME = re.compile(r"^(\d{1,20})\.manifest$")


@dataclass(frozen=True)
class ManifestFile:
    """One manifest file found in ``_versions/``."""

    version: int
    location: Location
    size: int | None


@dataclass(frozen=True)
class TagInfo:
    """A tag as stored in ``_refs/tags/{name}.json``: the version (on a branch) it names."""

    name: str
    version: int
    branch: str | None


def manifest_name_v2(version: int) -> str:
    """File name of ``version`` in the V2 scheme."""
    return f"{U64_MAX - version:020d}.manifest"


def manifest_name_v1(version: int) -> str:
    """File name of ``version`` in the V1 scheme."""
    return f"{version}.manifest"


def branch_root(root: Location, branch: str | None) -> Location:
    """The directory holding a branch's ``_versions/`` (the root itself for main)."""
    if not branch:
        return root
    if not _valid_ref_name(branch):
        raise NotFoundError(f"invalid branch name {branch!r}", path=root.url)
    return root.join("tree", branch)


def _valid_ref_name(name: str) -> bool:
    """A tag or branch name that stays inside its directory (``/`` nests, ``..`` never)."""
    if not name or "\\" in name or "\x00" in name:
        return False
    return all(part and part not in (".", "..") for part in name.split("/"))


def list_manifests(root: Location) -> list[ManifestFile]:
    """All main-lineage manifests of the dataset at ``root``, oldest first.

    Raises NotFoundError naming the dataset when ``_versions/`` is missing or empty.
    """
    versions_dir = root.join("_versions")
    try:
        entries = list_dir(versions_dir)
    except NotFoundError as exc:
        raise NotFoundError(
            "no Lance dataset here (no _versions/ directory)", path=root.url
        ) from exc
    parsed: list[tuple[str, int, Entry]] = []
    for entry in entries:
        if entry.is_dir:
            continue
        match = _V1_NAME.match(entry.name)
        if match:
            digits = match.group(1)
            parsed.append((digits, int(digits), entry))
    has_v2 = any(len(d) == V2_DIGITS for d, _, _ in parsed)
    found: dict[int, ManifestFile] = {}
    for digits, number, entry in parsed:
        if has_v2 and (len(digits) != V2_DIGITS or number > U64_MAX):
            continue  # in a V2 directory only 20-digit names count
        version = U64_MAX - number if has_v2 else number
        if version & DETACHED_BIT:
            continue
        found[version] = ManifestFile(version, entry.location, entry.size)
    if not found:
        raise NotFoundError("no Lance dataset here (no manifests in _versions/)", path=root.url)
    return [found[v] for v in sorted(found)]


def find_manifest(root: Location, version: int | None) -> ManifestFile:
    """The manifest of ``version`` (the latest when None); NotFoundError if absent."""
    manifests = list_manifests(root)
    if version is None:
        return manifests[-1]
    for manifest in manifests:
        if manifest.version == version:
            return manifest
    known = f"{manifests[0].version}..{manifests[-1].version}"
    raise NotFoundError(f"version {version} does not exist (versions {known})", path=root.url)


def tag_location(root: Location, name: str) -> Location:
    """Where the tag ``name`` is stored; NotFoundError for names that cannot be tags."""
    if not _valid_ref_name(name):
        raise NotFoundError(f"invalid tag name {name!r}", path=root.url)
    return root.join("_refs", "tags", f"{name}.json")


def read_tag(root: Location, name: str) -> TagInfo:
    """The tag ``name`` of the dataset at ``root``."""
    loc = tag_location(root, name)
    try:
        data = read_file(loc)
    except NotFoundError as exc:
        raise NotFoundError(f"tag {name!r} does not exist", path=root.url) from exc
    return _parse_tag(name, data, loc)


def list_tag_infos(root: Location) -> dict[str, TagInfo]:
    """All tags of the dataset at ``root`` by name (empty when there are none)."""
    try:
        entries = list_dir(root.join("_refs", "tags"))
    except NotFoundError:
        return {}
    tags = {}
    for entry in entries:
        if entry.is_dir or not entry.name.endswith(".json"):
            continue
        name = entry.name[: -len(".json")]
        tags[name] = _parse_tag(name, read_file(entry.location), entry.location)
    return tags


def _parse_tag(name: str, data: bytes, loc: Location) -> TagInfo:
    if len(data) > MAX_TAG_FILE:
        raise FormatError(f"tag file is {len(data)} bytes, too large", path=loc.url)
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise FormatError(f"tag {name!r} is not valid JSON: {exc}", path=loc.url) from exc
    if not isinstance(doc, dict):
        raise FormatError(f"tag {name!r} is not a JSON object", path=loc.url)
    version = doc.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= U64_MAX:
        raise FormatError(f"tag {name!r} has no valid 'version'", path=loc.url)
    branch = doc.get("branch")
    if branch is not None and not isinstance(branch, str):
        raise FormatError(f"tag {name!r} has an invalid 'branch'", path=loc.url)
    return TagInfo(name=name, version=version, branch=branch or None)


@dataclass(frozen=True)
class VersionInfo:
    """One version listed by :func:`list_versions`."""

    version: int
    timestamp: datetime | None
    manifest_path: str
    tag: str | None = None


def _timestamp(m: table_pb2.Manifest, path: str) -> datetime | None:
    if not m.HasField("timestamp"):
        return None
    ts = m.timestamp
    try:
        return datetime.fromtimestamp(ts.seconds, tz=timezone.utc).replace(
            microsecond=ts.nanos // 1000 if 0 <= ts.nanos < 1_000_000_000 else 0
        )
    except (ValueError, OverflowError, OSError) as exc:
        raise FormatError(f"manifest timestamp out of range: {exc}", path=path) from None


def list_versions(
    uri: str | os.PathLike[str],
    *,
    branch: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> list[VersionInfo]:
    """Every version of the dataset (oldest first) with its timestamp and manifest path."""
    root = resolve(uri, storage_options)
    base = branch_root(root, branch)
    tags_by_version: dict[int, str] = {}
    for name, info in sorted(list_tag_infos(root).items()):
        if info.branch == branch:
            tags_by_version.setdefault(info.version, name)
    result = []
    for found in list_manifests(base):
        m = read_manifest(found.location, size=found.size)
        result.append(
            VersionInfo(
                version=found.version,
                timestamp=_timestamp(m, found.location.url),
                manifest_path=found.location.url,
                tag=tags_by_version.get(found.version),
            )
        )
    return result


def list_tags(
    uri: str | os.PathLike[str], *, storage_options: Mapping[str, Any] | None = None
) -> dict[str, TagInfo]:
    """All tags of the dataset by name (``_refs/tags/*.json``); empty when there are none."""
    root = resolve(uri, storage_options)
    list_manifests(root)  # a missing dataset is an error, not "no tags"
    return list_tag_infos(root)
