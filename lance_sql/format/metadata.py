"""Open one version of a Lance dataset's metadata: schema, fragments, deletions, config.

``open_metadata`` lists ``_versions/`` (never trusting ``latest_version_hint.json``),
reads one manifest, refuses unknown reader feature flags and returns a frozen
:class:`DatasetMetadata` whose schema and fragments are built on first access.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa

from lance_sql.errors import FormatError, NotFoundError
from lance_sql.format import deletions
from lance_sql.format._pb import table_pb2
from lance_sql.format.feature_flags import check_reader_flags
from lance_sql.format.manifest import read_manifest
from lance_sql.format.schema import LanceField, LogicalTypeError, as_format_error, to_arrow_schema
from lance_sql.format.storage import Location, resolve
from lance_sql.format.versions import (
    TagInfo,
    VersionInfo,
    _timestamp,
    branch_root,
    find_manifest,
    list_tags,
    list_versions,
    read_tag,
)

Uri = str | os.PathLike[str]
_FILE_TYPES = {0: deletions.ARROW, 1: deletions.BITMAP}


@dataclass(frozen=True)
class DataFileMetadata:
    """One data file of a fragment (``path`` is relative to ``{base}/data``)."""

    path: str
    fields: tuple[int, ...]
    column_indices: tuple[int, ...]
    file_major_version: int
    file_minor_version: int
    file_size_bytes: int
    base_id: int | None


@dataclass(frozen=True)
class DeletionFileMetadata:
    """A fragment's deletion file (``path`` is relative to its base, e.g. the dataset root)."""

    file_type: str  # "arrow" or "bitmap"
    read_version: int
    id: int
    num_deleted_rows: int
    base_id: int | None
    path: str


@dataclass(frozen=True)
class FragmentMetadata:
    """One fragment: rows written, rows deleted, its data files and deletion file."""

    id: int
    physical_rows: int
    num_deleted_rows: int
    files: tuple[DataFileMetadata, ...]
    deletion_file: DeletionFileMetadata | None

    @property
    def num_rows(self) -> int:
        """Rows visible in this version."""
        return self.physical_rows - self.num_deleted_rows


@dataclass(frozen=True)
class WriterVersion:
    """Library and version that wrote the manifest."""

    library: str
    version: str
    prerelease: str | None = None
    build_metadata: str | None = None


@dataclass(frozen=True)
class DataStorageFormat:
    """Format of the data files, e.g. ``("lance", "2.2")``."""

    file_format: str
    version: str


@dataclass(frozen=True)
class BasePath:
    """Another location data or deletion files may live under (shallow clones, imports)."""

    id: int
    name: str | None
    is_dataset_root: bool
    path: str


@dataclass(frozen=True)
class PrimaryKeyField:
    """A field of the unenforced primary key: its path of names, id and 1-based position
    (0 when the writer gave none: ordering then follows field ids)."""

    path: tuple[str, ...]
    field_id: int
    position: int


@dataclass(frozen=True, eq=False)
class DatasetMetadata:
    """The metadata of one dataset version, as stored in its manifest."""

    uri: str
    version: int
    timestamp: datetime | None
    manifest_path: str
    table_metadata: dict[str, str]
    config: dict[str, str]
    schema_metadata: dict[str, bytes]
    writer_version: WriterVersion | None
    data_storage_format: DataStorageFormat | None
    base_paths: tuple[BasePath, ...]
    reader_feature_flags: int
    writer_feature_flags: int
    max_fragment_id: int | None
    next_row_id: int
    tag: str | None
    branch: str | None
    _manifest: table_pb2.Manifest = field(repr=False)
    _base: Location = field(repr=False)
    _storage_options: Mapping[str, Any] | None = field(repr=False, default=None)

    # -- schema -------------------------------------------------------------------------------
    @cached_property
    def lance_fields(self) -> tuple[LanceField, ...]:
        """The flat Lance field list, in manifest order."""
        return tuple(
            LanceField(
                id=f.id,
                parent_id=f.parent_id,
                name=f.name,
                logical_type=f.logical_type,
                nullable=f.nullable,
                metadata=dict(f.metadata),
                extension_name=f.extension_name,
            )
            for f in self._manifest.fields
        )

    @cached_property
    def schema(self) -> pa.Schema:
        """The Arrow schema; every field carries its id under metadata ``lance:field_id``."""
        try:
            return to_arrow_schema(self.lance_fields, self.schema_metadata)
        except LogicalTypeError as exc:
            raise as_format_error(exc, self.manifest_path) from None

    def field_ids(self) -> tuple[int, ...]:
        """Ids of all fields, nested ones included, in manifest (depth-first) order."""
        return tuple(f.id for f in self._manifest.fields)

    @cached_property
    def primary_key(self) -> tuple[PrimaryKeyField, ...]:
        """The unenforced primary key fields, in key order (empty when there is none)."""
        by_id = {f.id: f for f in self._manifest.fields}
        keys = []
        for f in self._manifest.fields:
            if not f.unenforced_primary_key:
                continue
            names, cursor, seen = [], f, set()
            while cursor is not None and cursor.id not in seen:
                seen.add(cursor.id)
                names.append(cursor.name)
                cursor = by_id.get(cursor.parent_id)
            keys.append(
                PrimaryKeyField(tuple(reversed(names)), f.id, f.unenforced_primary_key_position)
            )
        keys.sort(key=lambda k: (k.position == 0, k.position, k.field_id))
        return tuple(keys)

    # -- fragments ----------------------------------------------------------------------------
    @cached_property
    def fragments(self) -> tuple[FragmentMetadata, ...]:
        """All fragments of this version, in manifest order."""
        return tuple(self._fragment(f) for f in self._manifest.fragments)

    @cached_property
    def _fragments_by_id(self) -> dict[int, FragmentMetadata]:
        return {f.id: f for f in self.fragments}

    def fragment(self, fragment_id: int) -> FragmentMetadata:
        """The fragment ``fragment_id``; NotFoundError when this version has none such."""
        try:
            return self._fragments_by_id[fragment_id]
        except KeyError:
            raise NotFoundError(
                f"fragment {fragment_id} is not in version {self.version}", path=self.uri
            ) from None

    def _fragment(self, frag: table_pb2.DataFragment) -> FragmentMetadata:
        deletion = None
        deleted = 0
        if frag.HasField("deletion_file"):
            d = frag.deletion_file
            file_type = _FILE_TYPES.get(d.file_type)
            if file_type is None:
                raise FormatError(
                    f"fragment {frag.id} has unknown deletion file type {d.file_type}",
                    path=self.manifest_path,
                )
            name = deletions.deletion_file_name(frag.id, d.read_version, d.id, file_type)
            deletion = DeletionFileMetadata(
                file_type=file_type,
                read_version=d.read_version,
                id=d.id,
                num_deleted_rows=d.num_deleted_rows,
                base_id=d.base_id if d.HasField("base_id") else None,
                path=f"_deletions/{name}",
            )
            deleted = d.num_deleted_rows or self._read_deletions(frag.id, deletion).size
        if deleted > frag.physical_rows:
            raise FormatError(
                f"fragment {frag.id} has {deleted} deleted rows but only "
                f"{frag.physical_rows} physical rows",
                path=self.manifest_path,
            )
        files = tuple(
            DataFileMetadata(
                path=f.path,
                fields=tuple(f.fields),
                column_indices=tuple(f.column_indices),
                file_major_version=f.file_major_version,
                file_minor_version=f.file_minor_version,
                file_size_bytes=f.file_size_bytes,
                base_id=f.base_id if f.HasField("base_id") else None,
            )
            for f in frag.files
        )
        return FragmentMetadata(frag.id, frag.physical_rows, deleted, files, deletion)

    def count_rows(self) -> int:
        """Visible rows from the manifest alone (deletion files are read only where an old
        writer's manifest lacks the count)."""
        if "fragments" in self.__dict__:
            return sum(f.num_rows for f in self.fragments)
        # Hot path (benchmarks/bench_metadata.py): one pass, as few protobuf attribute
        # reads per fragment as possible. An absent deletion_file reads as count 0.
        total = 0
        for frag in self._manifest.fragments:
            rows = frag.physical_rows
            deleted = frag.deletion_file.num_deleted_rows
            if not deleted:
                if frag.HasField("deletion_file"):
                    return sum(f.num_rows for f in self.fragments)
            elif deleted > rows:
                self._fragment(frag)  # raises the FormatError naming the fragment
            total += rows - deleted
        return total

    def deleted_row_offsets(self, fragment_id: int) -> np.ndarray:
        """Sorted row offsets (uint32) deleted from fragment ``fragment_id``; empty if none."""
        frag = self.fragment(fragment_id)
        if frag.deletion_file is None:
            return np.empty(0, dtype=np.uint32)
        offsets = self._read_deletions(frag.id, frag.deletion_file)
        if offsets.size and int(offsets[-1]) >= frag.physical_rows:
            raise FormatError(
                f"deletes row {int(offsets[-1])} but fragment {frag.id} has "
                f"{frag.physical_rows} rows",
                path=self.deletion_file_uri(frag.id),
            )
        expected = frag.deletion_file.num_deleted_rows
        if expected and offsets.size != expected:
            raise FormatError(
                f"holds {offsets.size} offsets but the manifest says {expected}",
                path=self.deletion_file_uri(frag.id),
            )
        return offsets

    def _read_deletions(self, fragment_id: int, deletion: DeletionFileMetadata) -> np.ndarray:
        loc = self._file_location(deletion.base_id, deletion.path, fragment_id)
        return deletions.read_deletion_file(loc, deletion.file_type)

    # -- file locations -----------------------------------------------------------------------
    def data_file_uri(self, data_file: DataFileMetadata) -> str:
        """Full URL of a data file, following its ``base_id`` when set."""
        return self._file_location(data_file.base_id, f"data/{data_file.path}", None).url

    def deletion_file_uri(self, fragment_id: int) -> str | None:
        """Full URL of the deletion file of ``fragment_id`` (None when it has none)."""
        deletion = self.fragment(fragment_id).deletion_file
        if deletion is None:
            return None
        return self._file_location(deletion.base_id, deletion.path, fragment_id).url

    def _file_location(self, base_id: int | None, rel: str, fragment_id: int | None) -> Location:
        if base_id is None:
            return self._base.join(rel)
        base = next((b for b in self.base_paths if b.id == base_id), None)
        if base is None:
            what = f"fragment {fragment_id}" if fragment_id is not None else f"file {rel!r}"
            raise FormatError(
                f"{what} refers to unknown base path id {base_id}", path=self.manifest_path
            )
        if not base.is_dataset_root:
            rel = rel.split("/", 1)[1]
        return resolve(base.path, self._storage_options).join(rel)


# -- opening ----------------------------------------------------------------------------------
def open_metadata(
    uri: Uri,
    version: int | str | None = None,
    *,
    tag: str | None = None,
    branch: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> DatasetMetadata:
    """Read the metadata of one version of the Lance dataset at ``uri``.

    ``version`` is a version number (latest when None) or, like pylance, a tag
    name; ``tag`` names a tag explicitly; ``branch`` selects a branch's history
    (a tag on a branch selects it by itself). Raises NotFoundError for a missing
    dataset, version, tag or branch; FormatError for a damaged manifest;
    UnsupportedFeatureError for reader feature flags this reader does not know.
    """
    root = resolve(uri, storage_options)
    if tag is not None and version is not None:
        raise ValueError(f"give either a tag or a version, not both ({version!r}, {tag!r})")
    if isinstance(version, str) and not version.isdigit():
        tag, version = version, None  # like pylance, a tag name
    elif isinstance(version, str):
        version = int(version)
    if tag is not None:
        info = read_tag(root, tag)
        if branch is not None and branch != info.branch:
            raise ValueError(f"tag {tag!r} is on branch {info.branch!r}, not {branch!r}")
        version, branch = info.version, info.branch
    if version is not None and (isinstance(version, bool) or version < 0):
        raise ValueError(f"invalid version {version!r}")
    base = branch_root(root, branch)
    try:
        found = find_manifest(base, version)
    except NotFoundError as exc:
        if branch is not None and exc.path == base.url:
            raise NotFoundError(f"branch {branch!r}: {exc.args[0]}", path=root.url) from exc
        raise
    manifest = read_manifest(found.location, size=found.size)
    return _build(
        root, base, found.location.url, manifest, found.version, tag, branch, storage_options
    )


def _build(
    root: Location,
    base: Location,
    manifest_path: str,
    m: table_pb2.Manifest,
    listed_version: int,
    tag: str | None,
    branch: str | None,
    storage_options: Mapping[str, Any] | None,
) -> DatasetMetadata:
    check_reader_flags(m.reader_feature_flags, path=manifest_path)
    if m.version != listed_version:
        raise FormatError(
            f"manifest says version {m.version} but its file name says {listed_version}",
            path=manifest_path,
        )
    wv = m.writer_version if m.HasField("writer_version") else None
    df = m.data_format if m.HasField("data_format") else None
    return DatasetMetadata(
        uri=root.url,
        version=m.version,
        timestamp=_timestamp(m, manifest_path),
        manifest_path=manifest_path,
        table_metadata=dict(m.table_metadata),
        config=dict(m.config),
        schema_metadata={k: bytes(v) for k, v in m.schema_metadata.items()},
        writer_version=(
            WriterVersion(
                wv.library,
                wv.version,
                wv.prerelease if wv.HasField("prerelease") else None,
                wv.build_metadata if wv.HasField("build_metadata") else None,
            )
            if wv is not None
            else None
        ),
        data_storage_format=DataStorageFormat(df.file_format, df.version)
        if df is not None
        else None,
        base_paths=tuple(
            BasePath(b.id, b.name if b.HasField("name") else None, b.is_dataset_root, b.path)
            for b in m.base_paths
        ),
        reader_feature_flags=m.reader_feature_flags,
        writer_feature_flags=m.writer_feature_flags,
        max_fragment_id=m.max_fragment_id if m.HasField("max_fragment_id") else None,
        next_row_id=m.next_row_id,
        tag=tag or m.tag or None,
        branch=(m.branch if m.HasField("branch") else None) or branch,
        _manifest=m,
        _base=base,
        _storage_options=dict(storage_options) if storage_options else None,
    )


__all__ = [
    "BasePath",
    "DataFileMetadata",
    "DataStorageFormat",
    "DatasetMetadata",
    "DeletionFileMetadata",
    "FragmentMetadata",
    "PrimaryKeyField",
    "TagInfo",
    "VersionInfo",
    "WriterVersion",
    "list_tags",
    "list_versions",
    "open_metadata",
]
