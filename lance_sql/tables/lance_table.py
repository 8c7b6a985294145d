"""One Lance dataset as a table: opened at latest / a version / a tag, split into scan units.

Registration validates the dataset with this project's own metadata reader (typed
errors for unknown feature flags and missing versions or tags). A table registered
without a version follows latest: each scan pins the version latest at planning time,
with the schema seen at registration.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import lance
import pyarrow as pa

from lance_sql.errors import FormatError, NotFoundError, SchemaMismatchError
from lance_sql.tables.blob_columns import dataset_read_schema
from lance_sql.tables.dataset_cache import read_session
from lance_sql.tables.fragments_unit import LanceFragmentsUnit, split_fragments
from lance_sql.tables.pylance_errors import pylance_errors
from lance_sql.tables.scan import ScanMetrics
from lance_sql.tables.scan_options import checked_scan_options


@dataclass(frozen=True)
class Snapshot:
    """A pinned version of a table: what one scan (all its partitions) reads."""

    dataset: lance.LanceDataset
    version: int


class LanceTable:
    """A Lance dataset at ``uri`` (pinned by ``version``/``tag``, or following latest)."""

    def __init__(
        self,
        uri: str,
        dataset: lance.LanceDataset,
        *,
        follow_latest: bool,
        tag: str | None = None,
        storage_options: Mapping[str, str] | None = None,
        scan_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.uri = uri
        self.scan_options = checked_scan_options(scan_options, f"Lance table at {uri}")
        self.follow_latest = follow_latest
        self.tag = tag
        self.storage_options = dict(storage_options) if storage_options else None
        self.schema: pa.Schema = dataset_read_schema(dataset.schema)
        self.metrics = ScanMetrics()
        self._lock = threading.Lock()
        self._current = Snapshot(dataset, dataset.version)
        self._units: tuple[tuple[int, int], list[LanceFragmentsUnit]] | None = None

    @classmethod
    def open(
        cls,
        uri: str | os.PathLike[str],
        *,
        version: int | None = None,
        tag: str | None = None,
        storage_options: Mapping[str, str] | None = None,
        scan_options: Mapping[str, Any] | None = None,
    ) -> LanceTable:
        """Validate and open the dataset; typed errors name ``uri`` (and the version/tag)."""
        uri = os.fspath(uri)
        if version is not None and tag is not None:
            raise ValueError(f"{uri}: give either version={version!r} or tag={tag!r}, not both")
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
            raise TypeError(f"{uri}: version must be an int, got {version!r}")
        _check_metadata(uri, version, tag, storage_options)
        ref: int | str | None = tag if tag is not None else version
        opts = dict(storage_options) if storage_options else None
        with pylance_errors(f"Lance dataset {uri}", uri, version=version, storage_options=opts):
            dataset = lance.dataset(uri, version=ref, storage_options=opts, session=read_session())
        return cls(
            uri,
            dataset,
            follow_latest=version is None and tag is None,
            tag=tag,
            storage_options=storage_options,
            scan_options=scan_options,
        )

    @property
    def version(self) -> int:
        """The version the most recent scan pinned (the registered one when pinned)."""
        return self._current.version

    def snapshot(self) -> Snapshot:
        """The version a new scan must read: latest now (when following latest), else pinned.

        Thread-safe. A latest version that lost a registered column or changed a type
        is refused with ``SchemaMismatchError`` (register the table again).
        """
        if not self.follow_latest:
            return self._current
        current = self._current
        with self._pylance_errors(None):
            latest = current.dataset.latest_version
        if latest == current.version:
            return current
        with self._lock:
            current = self._current
            if latest > current.version:
                with self._pylance_errors(latest):
                    ds = current.dataset.checkout_version(latest)
                _check_schema(self.uri, latest, self.schema, dataset_read_schema(ds.schema))
                current = Snapshot(ds, latest)
                self._current = current
            return current

    def _pylance_errors(self, version: int | None) -> AbstractContextManager[None]:
        """Failures of pylance reading this table at ``version`` as typed errors naming it."""
        what = f"Lance dataset {self.uri}"
        return pylance_errors(what, self.uri, version=version, storage_options=self.storage_options)

    def units(self, snapshot: Snapshot, k: int) -> list[LanceFragmentsUnit]:
        """``snapshot``'s fragments as at most ``k`` units of similar live row counts, cached
        per (version, ``k``) since units hold no per-scan state."""
        key = (snapshot.version, k)
        cached = self._units
        if cached is not None and cached[0] == key:
            return cached[1]
        units = split_fragments(
            snapshot.dataset,
            k,
            schema=self.schema,
            storage_options=self.storage_options,
            metrics=self.metrics,
            scan_options=self.scan_options,
        )
        self._units = (key, units)
        return units

    def __repr__(self) -> str:
        pin = "latest" if self.follow_latest else f"v{self.version}"
        return f"LanceTable({self.uri!r}, {pin})"


def _check_metadata(
    uri: str, version: int | None, tag: str | None, storage_options: Mapping[str, Any] | None
) -> None:
    """Refuse what pylance would misread or report vaguely (unknown flags, non-Lance dirs)."""
    from lance_sql.format.metadata import open_metadata

    try:
        open_metadata(uri, version, tag=tag, storage_options=storage_options)
    except NotFoundError as exc:
        from lance_sql.tables.path_kind import wrong_kind

        better = wrong_kind(uri, "dataset", storage_options)
        if better is not None:
            raise better from exc
        if version is None and tag is None and _is_local(uri) and os.path.exists(uri):
            raise FormatError(
                "exists but is not a Lance dataset (no _versions/ directory with a manifest)",
                path=uri,
            ) from exc
        raise


def _is_local(uri: str) -> bool:
    return "://" not in uri or uri.startswith("file://")


def _check_schema(uri: str, version: int, registered: pa.Schema, now: pa.Schema) -> None:
    for f in registered:
        idx = now.get_field_index(f.name)
        if idx < 0:
            raise SchemaMismatchError(
                f"{uri}: version {version} has no column {f.name!r} (dropped after the table "
                "was registered); register the table again"
            )
        if not now.field(idx).type.equals(f.type):
            raise SchemaMismatchError(
                f"{uri}: column {f.name!r} changed type from {f.type} to {now.field(idx).type} "
                f"in version {version}; register the table again"
            )
