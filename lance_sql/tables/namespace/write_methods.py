"""Writes of a ``PartitionedNamespace``: append, overwrite, row operations, staged writes.

Each write starts from the latest ``__manifest`` and moves the namespace object
to the version it commits (the protocol: :mod:`.writer`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from lance_sql.errors import LanceSqlError
from lance_sql.tables.namespace.cleanup import CleanupReport, cleanup_namespace
from lance_sql.tables.namespace.staging import StagedWrite, abort_staged
from lance_sql.tables.namespace.writer import NamespaceWriter, commit_staged


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
        """Replace all rows with ``data`` (partitions it lacks leave ``__manifest``).

        ``partitions="dynamic"`` replaces only the current-spec partitions ``data``
        has rows for; ``where`` (SQL text) replaces only the rows it matches and
        refuses rows of ``data`` outside it (:mod:`.overwrite`). Returns the new
        ``__manifest`` version.
        """
        from lance_sql.tables.namespace import overwrite as ow

        if partitions is not None and where is not None:
            raise ValueError("give either partitions='dynamic' or where=..., not both")
        if partitions is not None:
            if partitions != "dynamic":
                raise ValueError(f"partitions must be 'dynamic', got {partitions!r}")
            return ow.overwrite_dynamic(self, data)
        if where is not None:
            return ow.overwrite_where(self, data, where)
        return self._write(data, "overwrite", buffer_bytes)

    def delete(self, filter: Any) -> int:
        """Delete the rows ``filter`` (SQL text over the namespace) matches; returns the count.

        Partitions the filter covers entirely leave ``__manifest`` without any
        data file being touched; others get Lance row deletes (:mod:`.delete`).
        """
        from lance_sql.tables.namespace.delete import delete

        return delete(self, filter)

    def update(self, set: Mapping[str, str], where: Any = None) -> int:
        """``UPDATE ns SET col = <sql>, ... WHERE <where>``; returns rows updated."""
        from lance_sql.tables.namespace.merge import update

        return update(self, set, where)

    def merge(self, source: Any, on: Sequence[str], **clauses: Any) -> Any:
        """``MERGE INTO ns USING source ON ...``; returns a :class:`.merge.MergeResult`."""
        from lance_sql.tables.namespace.merge import merge

        return merge(self, source, on, **clauses)

    def compact(self, *, target_rows_per_fragment: int = 1 << 20, **options: Any) -> Any:
        """Compact partition tables that need it; one ``__manifest`` commit."""
        from lance_sql.tables.namespace.maintenance import compact

        return compact(self, target_rows_per_fragment=target_rows_per_fragment, **options)

    def expire_versions(self, *, older_than: timedelta) -> Any:
        """Remove old versions of ``__manifest`` and partition tables no live pin needs."""
        from lance_sql.tables.namespace.maintenance import expire_versions

        return expire_versions(self, older_than=older_than)

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
        writer = self._writer(mode, buffer_bytes)
        try:
            writer.write(data)
            snap = writer.commit()
        except BaseException:
            writer.abort()
            raise
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

        For distributed writers: each task stages its rows (against this
        object's snapshot) and returns the small :class:`StagedWrite`; one
        driver commits all of them. Nothing is visible to readers before that
        commit. Tasks of one job should share ``write_id``: new partitions are
        then named alike by every task, so their files land in one table
        directory (stages with different ids are merged at commit by moving
        files). ``mode`` must match the later commit's mode.
        """
        self._check_writable()
        if mode not in ("append", "overwrite"):
            raise ValueError(f"mode must be 'append' or 'overwrite', got {mode!r}")
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
        """Commit staged writes atomically: each partition table once, ``__manifest`` once.

        Returns the new ``__manifest`` version (unchanged for an empty append).
        ``mode="overwrite"`` replaces the whole namespace with the staged rows.
        On failure ``__manifest`` is unchanged (call :meth:`abort_staged` to
        remove the remaining files).
        """
        self.refresh()
        snap = commit_staged(
            self._snapshot,
            self._schema,
            self.current_spec,
            list(staged),
            mode=mode,
            storage_options=self.storage_options,
        )
        self._set_snapshot(snap)
        return snap.version

    def abort_staged(self, staged: Iterable[StagedWrite]) -> None:
        """Delete staged files (best effort); ``__manifest`` is not touched."""
        abort_staged(self.root, list(staged), storage_options=self.storage_options)

    def cleanup(self, *, older_than: timedelta, dry_run: bool = True) -> CleanupReport:
        """Remove files of failed or killed writers that no ``__manifest`` version references.

        Dry-run by default: the report lists what would go. ``older_than``
        protects writers still in flight (their files are recent); see
        :func:`~lance_sql.tables.namespace.cleanup.cleanup_namespace`.
        """
        return cleanup_namespace(self, older_than=older_than, dry_run=dry_run)
