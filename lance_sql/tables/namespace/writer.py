"""Writing rows into a partitioned namespace: stage, commit tables, commit ``__manifest``.

Rows are staged as uncommitted Lance files per partition, then each partition table gets
one commit on its pinned version, then ``__manifest`` is committed once (rebased onto a
concurrent commit when provably safe). Distributed writers split staging
(``staging=True``) from the commits (:func:`commit_staged`). Details: docs/namespaces.md.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import CommitConflictError
from lance_sql.tables.namespace.field_map import table_schema_for
from lance_sql.tables.namespace.index_upkeep import maintain_indexes, read_indexes
from lance_sql.tables.namespace.layout import (
    NAMESPACE,
    TABLE,
    TABLE_NAME,
    child_uri,
    join_object_id,
    table_dir_name,
)
from lance_sql.tables.namespace.manifest_delta import RowChanges, commit_write
from lance_sql.tables.namespace.manifest_table import ManifestSnapshot, read_manifest
from lance_sql.tables.namespace.overlap import Overlap
from lance_sql.tables.namespace.partition_rows import (
    iter_batches,
    partition_values,
    split_batch,
    unsliced,
)
from lance_sql.tables.namespace.properties import DATA_STORAGE_VERSION_KEY
from lance_sql.tables.namespace.reader import PartitionTable
from lance_sql.tables.namespace.schema_rule import conform as conform_batch
from lance_sql.tables.namespace.spec import PartitionSpec
from lance_sql.tables.namespace.staging import StagedWrite
from lance_sql.tables.namespace.write_layout import WriteLayout, new_namespaces, rebase_blocker
from lance_sql.tables.namespace.write_stats import WriteStats
from lance_sql.tables.namespace.write_target import (
    WriteTarget,
    commit_target,
    create_table,
    prepare_target,
)
from lance_sql.tables.namespace.writer_staging import DistributedStaging

DEFAULT_BUFFER_BYTES = 256 << 20
COMMIT_THREADS = 8  # partition tables committed at once (I/O-bound; pylance drops the GIL)
SPLIT_ROWS = 1 << 20  # rows per piece that is partitioned at once (see NamespaceWriter.write)
SPLIT_THREADS = 2  # threads that group one piece's rows by partition
MAX_REBASES = 16  # times an append is replayed onto a newer __manifest before it fails
OVERLAP_ROWS = 32_768  # from this many rows a file's column bounds are computed on a thread


class NamespaceWriter(DistributedStaging):
    """One append or overwrite of a namespace snapshot (see the module docstring)."""

    def __init__(
        self,
        snapshot: ManifestSnapshot,
        schema: pa.Schema,
        spec: PartitionSpec,
        *,
        mode: str,
        storage_options: Mapping[str, str] | None = None,
        buffer_bytes: int = DEFAULT_BUFFER_BYTES,
        write_id: str | None = None,
        staging: bool = False,
        progress: Any = None,
        keep_untouched: bool = False,
        changes: RowChanges | None = None,
    ) -> None:
        if mode not in ("append", "overwrite"):
            raise ValueError(f"mode must be 'append' or 'overwrite', got {mode!r}")
        self.snapshot = snapshot
        self.schema = schema
        self.spec = spec
        self.mode = mode
        self.storage_options = dict(storage_options) if storage_options else None
        self.buffer_bytes = buffer_bytes
        # write_id: names of new partitions derive from it (all tasks of one distributed
        # write agree); staging: write files only, never commit anything (see stage()).
        self.write_id = write_id
        self.staging = staging
        # progress: (location, branch) -> pylance FragmentWriteProgress (Spark's file journal)
        self.progress = progress
        # keep_untouched: an overwrite replaces only the tables it writes (dynamic partitions)
        self.keep_untouched = keep_untouched
        # changes: of existing rows, committed with this write's (a Mutation's re-pins and
        # drops); the layout of ``snapshot`` is read with them applied
        self.changes = changes
        self._prefix = spec.namespace_name
        self._table_schema = table_schema_for(schema)
        self._targets: dict[tuple[Any, ...], WriteTarget] = {}
        self._buffered = 0
        self._new_rows: list[dict[str, Any]] = []
        self._may_be_committed = False
        # new tables are created by one write_dataset call at commit (nothing is staged or
        # reported per file; new directory names are random, so never taken)
        self._direct = not staging and progress is None and write_id is None
        self._final_flush = False
        self.rebased = False  # whether commit() replayed the write onto a newer __manifest
        # column bounds and key-filter hashes of the rows written per table
        self._stats = WriteStats(schema, snapshot.properties, self.storage_options)
        # Lance file format of the tables this write creates (None: pylance's default)
        self._file_version = snapshot.properties.get(DATA_STORAGE_VERSION_KEY)
        # the existing layout (the partitions written, by key while few)
        fids = [f.field_id for f in spec.fields]
        self._layout = WriteLayout(
            snapshot, self._prefix, fids, changes.entries if changes is not None else None
        )
        self._new_table_keys: list[tuple[Any, ...]] = []

    # -- staging ----------------------------------------------------------------------------
    def write(self, data: Any) -> None:
        """Stage every batch of ``data`` (nothing is committed); batches over
        :data:`SPLIT_ROWS` are split first, so memory stays bounded."""
        for whole in iter_batches(data):
            for start in range(0, max(whole.num_rows, 1), SPLIT_ROWS):
                self._write_batch(whole.slice(start, SPLIT_ROWS))

    def _write_batch(self, batch: pa.RecordBatch) -> None:
        batch = conform_batch(batch, self.schema)
        if batch.num_rows == 0:
            return
        values = partition_values(batch, self.spec, self.schema)
        total = batch.nbytes
        groups = list(split_batch(batch, values, threads=SPLIT_THREADS))
        self._layout.look([(key, raw) for key, raw, _ in groups if key not in self._targets])
        for key, raw, rows in groups:
            target = self._target(key, raw)
            target.buffers.append((rows, None))
            size = total * rows.num_rows // batch.num_rows
            target.buffered += size
            self._buffered += size
        if self._buffered > self.buffer_bytes:
            # every buffer: a buffered batch stays alive until all its groups are written,
            # so only a full flush frees memory (and keeps the budget a true bound)
            self._flush(list(self._targets.values()))

    def _flush(self, targets: Sequence[WriteTarget]) -> None:
        targets = sorted((t for t in targets if t.buffers), key=lambda t: -t.buffered)
        if not targets:
            return
        for t in targets:
            self._buffered -= t.buffered
        if len(targets) == 1:
            self._prepare(targets[0])
            self._flush_one(targets[0])
            return
        # Many small partitions are latency-bound (opening a table, a small file): at
        # least COMMIT_THREADS of them at once. Every table is prepared before any file
        # is written, so a refused table (a tag pin) fails the write before that.
        with ThreadPoolExecutor(min(COMMIT_THREADS, len(targets))) as pool:
            list(pool.map(self._prepare, targets))
            list(pool.map(lambda t: self._flush_one(t, False), targets))

    def _flush_one(self, t: WriteTarget, overlap: bool = True) -> None:
        """Write ``t``'s buffers as files; ``overlap``: compute their bounds meanwhile."""
        from lance.fragment import write_fragments

        parts = [
            unsliced(b) if rows is None else pc.take(b, pa.array(rows), boundscheck=False)
            for b, rows in t.buffers
        ]
        t.buffers, t.buffered = [], 0
        table = pa.Table.from_batches(parts)
        # the bounds (Arrow kernels) overlap Lance's write: both run without the GIL
        bounds = Overlap(
            self._stats.add,
            t.object_id,
            table,
            inline=not overlap or table.num_rows < OVERLAP_ROWS,
        )
        if t.names and any(k != v for k, v in t.names.items()):
            table = table.rename_columns([t.names.get(n, n) for n in table.column_names])
        mode = "create" if t.entry is None else self.mode
        progress = None if self.progress is None else self.progress(t.location, t.branch)
        # a new table's only files: written and committed (its creating commit, as
        # commit_target would make it) in one pylance call, a little cheaper than two
        direct = self._final_flush and t.entry is None and not t.fragments and self._direct
        # a new table's files in the namespace's file format; appends follow the table's
        # own (pylance), and a replaced table keeps its declared one (never mixed files)
        fmt = {"data_storage_version": self._file_version} if t.entry is None else {}
        try:
            if direct:
                create_table(t, table, self.storage_options, self._file_version)
            else:
                frags = write_fragments(
                    table,
                    t.base,
                    schema=t.table_schema,
                    mode=mode,
                    storage_options=self.storage_options,
                    progress=progress,
                    **fmt,
                )
        except BaseException:
            bounds.join(quiet=True)
            raise
        if not direct:
            if progress is not None:  # pylance 14 reports no completion for a call's last file
                for frag in frags:
                    progress.complete(frag)
            t.fragments.extend(frags)
        bounds.join()  # after the files are recorded: a failure here still aborts them

    def _target(self, key: tuple[Any, ...], raw: tuple[Any, ...]) -> WriteTarget:
        target = self._targets.get(key)
        if target is not None:
            return target
        self._layout.look([(key, raw)])
        entry = self._layout.tables.get(key)
        if entry is not None:
            target = WriteTarget(key, raw, entry.object_id, entry.location, entry.uri, entry)
        else:
            oid = self._new_object_ids(key, raw)
            location = table_dir_name(oid, self.write_id)
            target = WriteTarget(
                key, raw, oid, location, child_uri(self.snapshot.root, location), None
            )
            target.table_schema = self._table_schema
            target.prepared = True
            self._new_rows.append(self._row(oid, TABLE, raw, location=location))
            self._new_table_keys.append(key)
        self._targets[key] = target
        return target

    def _new_object_ids(self, key: tuple[Any, ...], raw: tuple[Any, ...]) -> str:
        """Find or create the namespace at every level of ``key``; return the table's id."""
        layout = self._layout
        if not layout.has_spec_row:
            self._new_rows.append(self._row(self._prefix, NAMESPACE, ()))
            layout.has_spec_row = True
        parent, created = new_namespaces(layout.namespaces, self._prefix, key, raw, self.write_id)
        for prefix, oid in created:
            layout.add_namespace(prefix, oid)
            self._new_rows.append(self._row(oid, NAMESPACE, raw[: len(prefix)]))
        return join_object_id(parent, TABLE_NAME)

    def _row(
        self, oid: str, kind: str, values: tuple[Any, ...], *, location: str | None = None
    ) -> dict[str, Any]:
        row: dict[str, Any] = {
            "object_id": oid,
            "object_type": kind,
            "location": location,
            "metadata": "{}",
        }
        for pf, v in zip(self.spec.fields, values, strict=False):
            row[pf.column_name] = v
        return row

    def _prepare(self, t: WriteTarget) -> None:
        """Before writing files into an existing table (see :func:`prepare_target`)."""
        if t.prepared:
            return
        prepare_target(
            t,
            schema=self.schema,
            table_schema=self._table_schema,
            mode=self.mode,
            staging=self.staging,
            partition=", ".join(
                f"{pf.field_id}={v!r}" for pf, v in zip(self.spec.fields, t.values, strict=False)
            ),
            storage_options=self.storage_options,
        )

    # -- commit -----------------------------------------------------------------------------
    def commit(self) -> ManifestSnapshot:
        """Commit every touched table, then ``__manifest`` once; return the new snapshot."""
        if not self._targets and self.mode == "append":
            return self.snapshot  # nothing to write: no new version anywhere
        self._final_flush = True
        self._flush(list(self._targets.values()))
        targets = sorted(self._targets.values(), key=lambda t: t.object_id)
        indexes = read_indexes(self.snapshot.properties)

        def commit_one(t: WriteTarget) -> int:
            version = commit_target(t, mode=self.mode, storage_options=self.storage_options)
            if not indexes or not t.fragments:
                return version
            return maintain_indexes(
                t.entry
                or PartitionTable(t.object_id, t.location, t.uri, self.spec.id, None, None, None),
                version,
                indexes,
                rebuild=t.entry is None or self.mode == "overwrite",
                storage_options=self.storage_options,
            )

        # Tables are independent until __manifest pins them: their commits (and index
        # updates) overlap on threads; a failure leaves the others unreferenced.
        if len(targets) > 1:
            with ThreadPoolExecutor(min(COMMIT_THREADS, len(targets))) as pool:
                committed = list(pool.map(commit_one, targets))
        else:
            committed = [commit_one(t) for t in targets]
        versions = {t.object_id: v for t, v in zip(targets, committed, strict=True)}
        for attempt in range(MAX_REBASES + 1):
            self._may_be_committed = True
            try:
                snap = commit_write(
                    self.snapshot,
                    self._new_rows,
                    list(self._targets.values()),
                    versions,
                    self._stats,
                    mode=self.mode,
                    keep_untouched=self.keep_untouched,
                    storage_options=self.storage_options,
                    changes=self.changes,
                )
            except CommitConflictError as exc:
                self._may_be_committed = False  # refused: __manifest was not changed
                if self.mode != "append" or attempt == MAX_REBASES:
                    raise
                time.sleep(random.uniform(0, min(0.25, 0.005 * 2**attempt)))  # jittered backoff
                latest = read_manifest(self.snapshot.root, storage_options=self.storage_options)
                blocker = self._rebase_blocker(latest)
                if blocker is not None:
                    raise CommitConflictError(
                        f"__manifest changed since version {self.snapshot.version} and this "
                        f"append cannot be rebased onto version {latest.version}: {blocker}; "
                        "nothing was committed to the namespace"
                    ) from exc
                self.snapshot = latest
                self.rebased = True
                continue
            if (
                snap.version == self.snapshot.version + 1
                and not self.rebased
                and (self.mode == "append" or self.keep_untouched)
            ):  # the rows read plus this write's (else concurrent writes' are in too)
                new = {t.key: t.object_id for t in self._targets.values() if t.entry is None}
                self._layout.remember(snap, new)
            return snap
        raise AssertionError("unreachable")

    def _rebase_blocker(self, latest: ManifestSnapshot) -> str | None:
        """Why this append cannot be replayed onto ``latest`` (None when it can)."""
        layout = self._layout.of(latest, [t.values for t in self._targets.values()])
        blocker = rebase_blocker(
            self.snapshot,
            latest,
            layout,
            self._layout.namespaces,
            self._targets.values(),
            list(self._layout.created),
            self._new_table_keys,
            self.changes.entries if self.changes is not None else (),
        )
        if blocker is None and layout[2]:  # another writer made the spec's namespace row
            self._new_rows = [r for r in self._new_rows if r["object_id"] != self._prefix]
        return blocker


def commit_staged(
    snapshot: ManifestSnapshot,
    schema: pa.Schema,
    spec: PartitionSpec,
    stages: Sequence[StagedWrite],
    *,
    mode: str,
    storage_options: Mapping[str, str] | None = None,
) -> ManifestSnapshot:
    """Commit staged writes onto ``snapshot`` (the latest ``__manifest``): steps 2-3 of the
    protocol. On failure ``__manifest`` is unchanged and the files of partitions that would
    have been new are removed."""
    writer = NamespaceWriter(snapshot, schema, spec, mode=mode, storage_options=storage_options)
    return writer.commit_stages(stages)
