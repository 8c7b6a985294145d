"""The driver and task sides of distributed namespace writes (a mixin of ``NamespaceWriter``):
tasks stage uncommitted files (:meth:`DistributedStaging.staged`), the driver adopts them
all and commits once, or aborts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from lance_sql.errors import CommitConflictError
from lance_sql.tables.namespace import bounds as col_bounds
from lance_sql.tables.namespace.layout import data_dir_uri, remove_quietly
from lance_sql.tables.namespace.manifest_table import ManifestSnapshot
from lance_sql.tables.namespace.partition_rows import keys_of
from lance_sql.tables.namespace.spec import PartitionSpec
from lance_sql.tables.namespace.staging import (
    StagedPartition,
    StagedWrite,
    _check_stages,
    _fragment_paths,
    _move_files,
)
from lance_sql.tables.namespace.write_layout import WriteLayout
from lance_sql.tables.namespace.write_stats import WriteStats
from lance_sql.tables.namespace.write_target import WriteTarget


class DistributedStaging:
    """Staging, adopting and aborting staged files; the state and the ``_flush``,
    ``_target``, ``_prepare``, ``write`` and ``commit`` it calls are the writer's own."""

    snapshot: ManifestSnapshot
    spec: PartitionSpec
    mode: str
    staging: bool
    write_id: str | None
    storage_options: dict[str, str] | None
    _targets: dict[tuple[Any, ...], WriteTarget]
    _stats: WriteStats
    _may_be_committed: bool
    _layout: WriteLayout

    def staged(self) -> StagedWrite:
        """Write every buffer to uncommitted files and describe them; nothing is committed."""
        if not self.staging:
            raise ValueError("staged() needs a NamespaceWriter created with staging=True")
        self._flush(list(self._targets.values()))
        parts = tuple(
            StagedPartition(
                values=t.values,
                object_id=t.object_id,
                location=t.location,
                new=t.entry is None,
                branch=t.branch,
                fragments=tuple(json.dumps(f.to_json()) for f in t.fragments),
                table_version=t.base_version,
                bounds=col_bounds.staged_text(self._stats.bounds.get(t.object_id)),
            )
            for t in sorted(self._targets.values(), key=lambda t: t.object_id)
            if t.fragments
        )
        return StagedWrite(
            root=self.snapshot.root,
            write_id=self.write_id or "",
            mode=self.mode,
            manifest_version=self.snapshot.version,
            spec_id=self.spec.id,
            schema=self.snapshot.properties.get("schema", ""),
            value_types=tuple(pf.result_type for pf in self.spec.fields),
            partitions=parts,
        )

    def commit_stages(
        self, stages: Sequence[StagedWrite], data: Sequence[Any] = ()
    ) -> ManifestSnapshot:
        """:meth:`adopt` ``stages``, write ``data`` and :meth:`commit`; on any failure
        :meth:`abort` and raise. An append adopting and writing nothing commits nothing."""
        try:
            self.adopt(stages)
            for d in data:
                self.write(d)
            return self.commit()
        except BaseException:
            self.abort()
            raise

    def adopt(self, stages: Sequence[StagedWrite]) -> None:
        """Take over staged files as this writer's fragments; files staged in another
        directory than their partition's table are moved there (one partition, one table)."""
        from lance.fragment import FragmentMetadata

        schema_json = self.snapshot.properties.get("schema", "")
        _check_stages(self.snapshot.root, stages)
        for st in stages:
            if st.mode != self.mode:
                raise ValueError(
                    f"staged write {st.write_id!r} was staged for {st.mode!r}, "
                    f"it cannot be committed as {self.mode!r}"
                )
            if st.spec_id != self.spec.id or st.schema != schema_json:
                raise CommitConflictError(
                    f"staged write {st.write_id!r} was staged at __manifest version "
                    f"{st.manifest_version} (spec v{st.spec_id}); the namespace schema or "
                    f"partition spec changed since (now spec v{self.spec.id}): stage again"
                )
        moves: list[tuple[StagedPartition, WriteTarget, list[Any]]] = []
        parts = [(keys_of(p.values), tuple(p.values)) for st in stages for p in st.partitions]
        self._layout.look(parts)  # (one lookup for all, not one per partition)
        for st in stages:
            self.write_id = st.write_id or None
            for part in st.partitions:
                key = keys_of(part.values)
                t = self._target(key, tuple(part.values))
                if t.entry is not None:
                    self._prepare(t)
                frags = [FragmentMetadata.from_json(f) for f in part.fragments]
                self._stats.adopt(t.object_id, col_bounds.from_staged_text(part.bounds))
                if (part.location, part.branch) != (t.location, t.branch):
                    moves.append((part, t, frags))
                t.fragments.extend(frags)
        root = self.snapshot.root
        for part, t, frags in moves:
            _move_files(
                data_dir_uri(root, part.location, part.branch),
                data_dir_uri(root, t.location, t.branch),
                frags,
                self.storage_options,
            )

    def abort(self) -> None:
        """Best-effort removal of staged files of tables this write created; skipped when
        the ``__manifest`` commit may have happened (those tables may be live)."""
        if self._may_be_committed:
            return
        if self.staging:  # new-table directories may be shared with other tasks' files
            for t in self._targets.values():
                where = data_dir_uri(self.snapshot.root, t.location, t.branch)
                remove_quietly(where, _fragment_paths(t.fragments), self.storage_options)
            return
        for t in self._targets.values():
            if t.entry is None:
                remove_quietly(t.uri, None, self.storage_options)
