"""Writes of a ``PartitionedNamespace``: append, overwrite, row operations, staged writes.
Each starts from the latest ``__manifest`` (the protocol: :mod:`.writer`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lance_sql.errors import LanceSqlError
from lance_sql.tables.namespace import delete as delete_op
from lance_sql.tables.namespace import maintenance
from lance_sql.tables.namespace import merge as merge_op
from lance_sql.tables.namespace import overwrite as ow
from lance_sql.tables.namespace.cleanup import cleanup_namespace
from lance_sql.tables.namespace.staging import StagedWrite, abort_staged
from lance_sql.tables.namespace.writer import NamespaceWriter


class WriteMethods:
    """Mixed into :class:`~.namespace.PartitionedNamespace`."""

    root: str
    read_only: bool
    storage_options: dict[str, str] | None
    _snapshot: Any
    _schema: Any
    current_spec: Any
    refresh: Any
    _set_snapshot: Any

    def _check_writable(self) -> None:
        if self.read_only:
            raise LanceSqlError(
                f"namespace {self.root} was opened at __manifest version "
                f"{self._snapshot.version}; open it without a version to write"
            )

    def append(self, data: Any, *, buffer_bytes: int | None = None) -> int:
        """Add rows; returns the new ``__manifest`` version (see writer module for the protocol)."""
        return self._write(data, "append", buffer_bytes)

    def overwrite(
        self,
        data: Any,
        *,
        buffer_bytes: int | None = None,
        partitions: str | None = None,
        where: Any = None,
    ) -> int:
        """Replace all rows with ``data``; returns the new ``__manifest`` version.

        ``partitions="dynamic"`` replaces only the current-spec partitions ``data`` has
        rows for; ``where`` (SQL) replaces only the rows it matches and refuses rows of
        ``data`` outside it.
        """
        if partitions is not None and where is not None:
            raise ValueError("give either partitions='dynamic' or where=..., not both")
        if partitions is not None and partitions != "dynamic":
            raise ValueError(f"partitions must be 'dynamic', got {partitions!r}")
        if partitions is not None or where is not None:
            return ow.overwrite_some(self, data, where)
        return self._write(data, "overwrite", buffer_bytes)

    # row operations and maintenance: the functions themselves, ``ns`` as their first argument
    delete = delete_op.delete
    update = merge_op.update
    merge = merge_op.merge
    compact = maintenance.compact
    expire_versions = maintenance.expire_versions
    cleanup = cleanup_namespace

    def _writer(self, mode: str, buffer_bytes: int | None, **options: Any) -> NamespaceWriter:
        """A writer against this object's snapshot, schema and current spec."""
        if buffer_bytes is not None:
            options["buffer_bytes"] = buffer_bytes
        return NamespaceWriter(
            self._snapshot,
            self._schema,
            self.current_spec,
            mode=mode,
            storage_options=self.storage_options,
            **options,
        )

    def _write(self, data: Any, mode: str, buffer_bytes: int | None) -> int:
        self.refresh()
        snap = self._writer(mode, buffer_bytes).commit_stages((), [data])
        self._set_snapshot(snap)
        return snap.version

    # -- staged writes (distributed writers) -------------------------------------------------
    def stage(
        self,
        data: Any,
        *,
        mode: str = "append",
        write_id: str | None = None,
        buffer_bytes: int | None = None,
    ) -> StagedWrite:
        """Write ``data`` as uncommitted Lance files; commit later with :meth:`commit_staged`.

        For distributed writers: each task stages its rows and returns a small
        :class:`StagedWrite`; one driver commits all. Tasks of one job should share
        ``write_id`` so new partitions land in one table directory. ``mode`` must match
        the later commit's mode.
        """
        self._check_writable()
        import uuid

        writer = self._writer(
            mode, buffer_bytes, write_id=write_id or uuid.uuid4().hex, staging=True
        )
        try:
            writer.write(data)
            return writer.staged()
        except BaseException:
            writer.abort()  # this task's own files only
            raise

    def commit_staged(self, staged: Iterable[StagedWrite], *, mode: str = "append") -> int:
        """Commit staged writes atomically (each partition table once, ``__manifest`` once);
        returns the new ``__manifest`` version. On failure ``__manifest`` is unchanged
        (:meth:`abort_staged` removes the remaining files)."""
        self.refresh()
        snap = self._writer(mode, None).commit_stages(list(staged))
        self._set_snapshot(snap)
        return snap.version

    def abort_staged(self, staged: Iterable[StagedWrite]) -> None:
        """Delete staged files (best effort); ``__manifest`` is not touched."""
        abort_staged(self.root, list(staged), storage_options=self.storage_options)
