"""``lance_sql.spark.delete(spark, root, where)``: ``ns.delete(where)`` in Spark tasks.

Covered partitions leave ``__manifest`` without a task; tasks write deletion files in
the others at the pinned version (leased and journaled, so a failed job leaves none); the
driver commits each table, then ``__manifest`` once, replaying on a concurrent commit.
Row ids are Lance row addresses: these tables have no stable row ids.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from lance_sql.errors import CommitConflictError, LanceSqlError


@dataclass(frozen=True)
class TableDelete:
    """What one task did to one partition table (JSON through Spark)."""

    object_id: str
    attempt: str
    deleted: int
    drop: bool = False  # every row matches: the table leaves __manifest
    updated: tuple[str, ...] = ()  # FragmentMetadata JSON with new deletion files
    removed: tuple[int, ...] = ()  # fragments all of whose rows go
    files: tuple[str, ...] = ()  # deletion files written (relative to the table)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> TableDelete:
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in obj.items()})


class _Pinned:
    """``ns`` as a :class:`Mutation` sees it, kept at the version it was opened at."""

    def __init__(self, ns: Any) -> None:
        self._ns = ns

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ns, name)

    def _check_writable(self) -> None:  # tasks only read (a version-pinned namespace)
        return None

    def _set_snapshot(self, snapshot: Any) -> None:  # stay at the planned version
        return None


def pinned_reader(ns: Any) -> Any:
    """The row operations' reader (:meth:`Mutation.rows`) over ``ns`` as opened; commits nothing."""
    from lance_sql.tables.namespace.mutation import Mutation

    return Mutation(_Pinned(ns))


class DeleteTasks:
    """The function each Spark task runs over its partition tables (pickled to executors)."""

    def __init__(
        self,
        root: str,
        version: int,
        storage_options: Mapping[str, str] | None,
        where: str,
        write_id: str,
    ) -> None:
        self.root, self.version, self.where, self.write_id = root, version, where, write_id
        self.storage_options = dict(storage_options) if storage_options else None

    def __call__(self, object_ids: Iterator[str]) -> Iterator[str]:
        with self.attempt() as (lease, ns):
            reader = pinned_reader(ns)
            out = []
            for oid in object_ids:
                lease.check()
                out.append(json.dumps(asdict(self.delete_one(reader, oid, lease.attempt, lease))))
        return iter(out)

    @contextmanager
    def attempt(self) -> Iterator[tuple[Any, Any]]:
        """This task attempt's lease, and the namespace at the planned ``__manifest`` version."""
        from lance_sql.engines.spark.options import open_at
        from lance_sql.engines.spark.write_journal import AttemptLease

        with AttemptLease(self.root, self.write_id, None, self.storage_options) as lease:
            yield lease, open_at(self.root, self.version, self.storage_options)

    def delete_one(self, reader: Any, oid: str, attempt: str, lease: Any) -> TableDelete:
        from lance_sql.tables.namespace.delete import _filter_columns
        from lance_sql.tables.namespace.filter_hook import filter_planner
        from lance_sql.tables.namespace.mutation import ROWID
        from lance_sql.tables.namespace.sql_eval import matching_mask, row_condition

        entry = reader.entries[oid]
        try:
            expr = filter_planner().expression(reader.ns, self.where)
        except LanceSqlError:
            expr = None
        where = row_condition(reader.ns.schema, self.where)  # planned once per table
        rows = reader.rows(entry, _filter_columns(reader, where), pushdown=expr)
        if rows.num_rows:
            rows = rows.filter(matching_mask(rows.drop_columns([ROWID]), where))
        ids = rows.column(ROWID).to_numpy() if rows.num_rows else np.array([], np.uint64)
        return self.stage_deletes(reader, entry, ids, lease)

    def stage_deletes(self, reader: Any, entry: Any, ids: np.ndarray, lease: Any) -> TableDelete:
        """Deletion files for the rows ``ids`` (``_rowid``) of ``entry``; nothing committed."""
        from lance_sql.tables.namespace.mutation import ROWID

        oid, attempt = entry.object_id, lease.attempt
        ids = np.unique(ids.astype(np.uint64))
        if not len(ids):
            return TableDelete(oid, attempt, 0)
        if len(ids) >= reader.count(entry):
            return TableDelete(oid, attempt, len(ids), drop=True)
        ds, _ = reader.ns._open(entry)
        frag_ids = ids >> np.uint64(32)
        updated, removed, files = [], [], []
        for fid in np.unique(frag_ids).tolist():
            lease.check()
            frag = ds.get_fragment(int(fid))
            if frag is None:
                raise LanceSqlError(
                    f"partition table {oid!r}: row id of fragment {fid}, which the table at "
                    f"version {entry.read_version} does not have (stable row ids?)"
                )
            chosen = ids[frag_ids == fid]
            lease.put(_entry(entry, None))  # the location, before its first deletion file
            new = frag.delete(f"{ROWID} IN ({','.join(map(str, chosen.tolist()))})")
            if new is None:
                removed.append(int(fid))
                continue
            path = new.deletion_file.path(new.id) if new.deletion_file is not None else None
            if path is not None:
                lease.put(_entry(entry, path))
                files.append(path)
            updated.append(json.dumps(new.to_json()))
        return TableDelete(
            oid,
            attempt,
            len(ids),
            updated=tuple(updated),
            removed=tuple(removed),
            files=tuple(files),
        )


def _entry(entry: Any, deletion: str | None) -> dict[str, Any]:
    """A journal object for a deletion file: ``{location, branch, file: None, deletion}``."""
    return {
        "location": entry.location,
        "branch": entry.read_branch,
        "file": None,
        "deletion": deletion,
    }


@dataclass
class Staged:
    """What a job's tasks staged, for the driver's one commit (:meth:`DeleteJob.once`)."""

    drops: list[str] = field(default_factory=list)  # covered tables: leave __manifest
    deletes: list[TableDelete] = field(default_factory=list)  # staged row deletes per table
    stages: list[Any] = field(default_factory=list)  # StagedWrite of new rows
    attempts: list[str] = field(default_factory=list)  # task attempts whose work commits
    result: Any = None  # what the job returns


class DeleteJob:
    """``delete(spark, root, where)``: plan, run the tasks, commit once (module docstring)."""

    tasks_class: type[DeleteTasks] = DeleteTasks

    def __init__(
        self, spark: Any, root: str, where: str, storage_options: Mapping[str, str] | None
    ) -> None:
        from lance_sql.engines.spark.options import open_at

        self.spark, self.where = spark, where
        self.ns = open_at(root, None, storage_options)
        self.ns._check_writable()
        self.root = str(self.ns.root)
        self.storage_options = self.ns.storage_options
        self.check()

    def check(self) -> None:
        """Refuse the job before anything is written (here: a filter that does not plan)."""
        from lance_sql.engines.spark.write import check_filter

        check_filter(self.root, self.where, self.ns.schema)

    def run(self) -> Any:
        """:meth:`once`, planned again on the newer ``__manifest`` after a conflict."""
        from lance_sql.tables.namespace.mutation import run

        return run(self.ns, self.once)  # once commits: the Mutation it is given stays unchanged

    def once(self, m0: Any) -> Any:
        """Stage against ``m0`` (the latest ``__manifest``), then commit it once; a commit made
        meanwhile raises CommitConflictError."""
        from lance_sql.engines.spark.write_journal import fence_and_wait, finish_write
        from lance_sql.tables.namespace.mutation import Mutation
        from lance_sql.tables.namespace.staging import abort_staged

        write_id = uuid.uuid4().hex
        out = Staged()
        kept: set[tuple[str, str]] = set()
        committed = False
        try:
            self.stage(m0, write_id, out)
            # no attempt may write after this: the committed ones ended, zombies stop or go stale
            fence_and_wait(self.root, write_id, self.storage_options, out.attempts)
            m = Mutation(self.ns)
            if m.snapshot.version != m0.snapshot.version:
                raise CommitConflictError(
                    f"__manifest moved from version {m0.snapshot.version} to "
                    f"{m.snapshot.version} while the job ran; planning it again"
                )
            for oid in out.drops:
                m.drop(m.entries[oid])
            for d in out.deletes:
                kept.update(self.apply(m, d))
            self.ns._set_snapshot(m.commit(out.stages))
            committed = True
        except BaseException:
            abort_staged(self.root, out.stages, storage_options=self.storage_options)
            raise
        finally:
            done = out.stages if committed else []
            opts = self.storage_options
            finish_write(self.root, write_id, opts, done, out.attempts, kept_deletions=kept)
        return out.result

    def stage(self, m: Any, write_id: str, out: Staged) -> None:
        """DELETE: covered tables leave ``__manifest``, tasks stage row deletes in the others."""
        from lance_sql.tables.namespace.filter_hook import filter_planner

        cls = filter_planner().classify(self.ns, self.where)
        out.drops = list(cls.covered)
        out.deletes = self.run_tasks(m, list(cls.partial), write_id)
        out.attempts = [r.attempt for r in out.deletes]
        covered = sum(m.count(m.entries[oid]) for oid in cls.covered)
        out.result = covered + sum(r.deleted for r in out.deletes)

    def run_tasks(self, m: Any, object_ids: list[str], write_id: str) -> list[TableDelete]:
        if not object_ids:
            return []
        tasks = self.tasks_class(
            self.root, m.snapshot.version, self.storage_options, self.where, write_id
        )
        sc = self.spark.sparkContext
        slices = max(1, min(len(object_ids), sc.defaultParallelism))
        raw = sc.parallelize(object_ids, slices).mapPartitions(tasks).collect()
        return [TableDelete.from_json(json.loads(r)) for r in raw]

    def apply(self, m: Any, r: TableDelete) -> set[tuple[str, str]]:
        """Commit one table's staged deletes (or drop it); returns the deletion files kept."""
        import lance
        from lance.fragment import FragmentMetadata

        from lance_sql.tables.namespace.write_target import table_conflicts

        entry = m.entries[r.object_id]
        if r.drop:
            m.drop(entry)
            return set()
        if not r.updated and not r.removed:
            return set()
        head = m.head(entry)  # the pinned version on top (restored over a failed writer's)
        op = lance.LanceOperation.Delete(
            [FragmentMetadata.from_json(u) for u in r.updated], list(r.removed), self.where
        )
        with table_conflicts(entry, "a delete"):
            ds = lance.LanceDataset.commit(
                entry.uri,
                op,
                read_version=head.version,
                storage_options=self.storage_options,
                max_retries=0,
            )
        m.set_version(entry, ds, same_rows=True)  # a delete keeps a subset: bounds hold
        return {(entry.location, f) for f in r.files}


def delete(
    spark: Any, root: str, where: str, *, storage_options: Mapping[str, str] | None = None
) -> int:
    """Delete the rows ``where`` (SQL) matches, data work in Spark tasks; returns rows deleted."""
    return DeleteJob(spark, root, where, storage_options).run()
