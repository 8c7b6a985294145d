"""``lance_sql.spark.merge(spark, root, source_df, on=[...], ...)``: ns.merge in Spark tasks.

The checkpointed, numbered source (a key held twice fails before any write) is
cross-joined with the partition tables: one task per table rewrites its matched rows;
the source rows no task matched are then staged by the ``lance_ns`` writer's task code.
One commit, as :meth:`.dml.DeleteJob.once`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import pyarrow as pa

from lance_sql.engines.spark.dml import DeleteJob, DeleteTasks, TableDelete, pinned_reader
from lance_sql.errors import SchemaMismatchError

ROW = "__lance_sql_row"  # the source row number (merge.py's _ROW)
TABLE = "__lance_sql_table"
PRUNE_KEYS = 10_000  # at most this many distinct source keys prune the partition tables


class MergeTasks(DeleteTasks):
    """Step 2, per partition table (``groupBy(TABLE).applyInArrow``)."""

    def __init__(
        self,
        root: str,
        version: int,
        storage_options: Mapping[str, str] | None,
        write_id: str,
        on: list[str],
        when_matched_update: Any,
        when_matched_delete: Any,
    ) -> None:
        super().__init__(root, version, storage_options, "", write_id)
        self.on = on
        self.when_matched_update = when_matched_update
        self.when_matched_delete = when_matched_delete

    def __call__(self, group: pa.Table) -> pa.Table:  # type: ignore[override]
        with self.attempt() as (lease, ns):
            oid = group.column(TABLE)[0].as_py()
            src = source_rows(ns, group.drop_columns([TABLE]), self.on)
            out = self.merge_one(pinned_reader(ns), oid, src, lease.attempt, lease)
        return pa.table({"result": [json.dumps(out)]})

    def merge_one(
        self, reader: Any, oid: str, src: pa.Table, attempt: str, lease: Any
    ) -> dict[str, Any]:
        from lance_sql.tables.namespace.merge import merge_sql
        from lance_sql.tables.namespace.merge_rows import key_filter, merge_table, plan_merge

        ns = reader.ns
        entry = reader.entries[oid]
        sql = merge_sql(ns, self.on, self.when_matched_update, self.when_matched_delete, False)
        plan = plan_merge(ns, src, sql)
        target = reader.rows(entry, None, pushdown=key_filter(ns, src, plan.keys))
        tm = merge_table(ns, entry, plan, target, src)
        ids = tm.gone.to_numpy(zero_copy_only=False).astype(np.uint64)
        td = self.stage_deletes(reader, entry, ids, lease)
        staged = ""
        if tm.new is not None and tm.new.num_rows:
            staged = self.stage_rows(ns, tm.new, lease)
        return {
            "delete": asdict(td),
            "staged": staged,
            "attempt": attempt,
            "updated": tm.updated,
            "deleted": tm.deleted,
            "matched": np.asarray(tm.matched).tolist(),
        }

    def stage_rows(self, ns: Any, rows: pa.Table, lease: Any) -> str:
        """Stage ``rows`` (namespace schema) as new files; the StagedWrite JSON."""
        from lance_sql.engines.spark.write_journal import stage_journaled

        staged = stage_journaled(
            rows,
            lease,
            ns.snapshot,
            ns._schema,  # the stored form: blob columns take bytes
            ns.current_spec,
            mode="append",
        )
        return staged.to_json()


def source_rows(ns: Any, table: pa.Table, on: Sequence[str]) -> pa.Table:
    """Source rows as Spark delivers them, namespace columns in the namespace's types."""
    from lance_sql.tables.namespace.merge import _source_table
    from lance_sql.tables.namespace.schema_rule import cast_named

    return _source_table(ns, cast_named(table, ns._schema, "merge source"), on)


class InsertTask:
    """Step 3: stage source rows with the ``lance_ns`` writer's task code (``mapInArrow``)."""

    def __init__(self, writer: Any) -> None:
        self.writer = writer

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        done = self.writer.write(batches)
        yield pa.record_batch({"staged": [done.staged], "attempt": [done.attempt]})


class MergeJob(DeleteJob):
    """``merge(...)``: plan, run the steps, commit once (module docstring)."""

    merge_tasks: type[MergeTasks] = MergeTasks

    def __init__(
        self,
        spark: Any,
        root: str,
        source: Any,
        on: Sequence[str],
        when_matched_update: Any,
        when_matched_delete: Any,
        when_not_matched_insert: bool,
        storage_options: Mapping[str, str] | None,
    ) -> None:
        self.on = list(on)
        self.clauses = (when_matched_update, when_matched_delete)
        self.insert = when_not_matched_insert
        self.source = source
        super().__init__(spark, root, "merge", storage_options)

    def check(self) -> None:
        if not self.on:
            raise ValueError("merge needs at least one key column in 'on'")
        names = self.ns.schema.names
        missing = [k for k in self.on if k not in self.source.columns or k not in names]
        if missing:
            raise SchemaMismatchError(
                f"merge key column(s) {missing} missing from source or target"
            )

    def run(self) -> Any:  # type: ignore[override]
        from pyspark.sql import functions as F

        from lance_sql.tables.namespace.merge import MergeKeyError

        src = self.source.withColumn(ROW, F.monotonically_increasing_id()).localCheckpoint()
        keyed = src.where(" AND ".join(f"`{k}` IS NOT NULL" for k in self.on))
        if keyed.groupBy(*self.on).count().where("count > 1").limit(1).count():
            raise MergeKeyError(
                "the merge source holds some key more than once; nothing was written"
            )
        self.src, self.keyed = src, keyed
        return super().run()

    def stage(self, m: Any, write_id: str, out: Any) -> None:
        """MERGE: tasks rewrite matched rows, then the rows no task matched are inserted."""
        from lance_sql.tables.namespace.merge import MergeResult
        from lance_sql.tables.namespace.staging import StagedWrite

        version = m.snapshot.version
        matched, out.deletes, updated, deleted = self.matched_step(m, version, write_id)
        out.attempts += [d.attempt for d in out.deletes]
        out.stages += [StagedWrite.from_json(s) for s in matched["staged"] if s]
        inserted = 0
        if self.insert:
            ins, ins_attempts = self.insert_step(version, write_id, matched["rows"])
            out.stages += ins
            out.attempts += ins_attempts
            inserted = sum(st.rows for st in ins)
        out.result = MergeResult(updated, deleted, inserted)

    def matched_step(
        self, m: Any, version: int, write_id: str
    ) -> tuple[dict[str, list[Any]], list[TableDelete], int, int]:
        from pyspark.sql import functions as F

        matched: dict[str, list[Any]] = {"staged": [], "rows": []}
        if not (self.clauses[0] or self.clauses[1] or self.insert):
            return matched, [], 0, 0
        oids = self.candidate_tables(m)
        if not oids:
            return matched, [], 0, 0
        tasks = self.merge_tasks(
            self.root, version, self.storage_options, write_id, self.on, *self.clauses
        )
        tables = self.spark.createDataFrame([(o,) for o in oids], f"{TABLE} string")
        pairs = self.keyed.crossJoin(F.broadcast(tables))
        # a lambda: pyspark 4.3's applyInArrow fails (UnboundLocalError) on a callable
        # object, whose type hints it cannot inspect
        rows = pairs.groupBy(TABLE).applyInArrow(lambda g: tasks(g), "result string").collect()
        deletes: list[TableDelete] = []
        updated = deleted = 0
        for r in rows:
            out = json.loads(r["result"])
            deletes.append(TableDelete.from_json(out["delete"]))
            matched["staged"].append(out["staged"])
            matched["rows"].extend(out["matched"])
            updated += int(out["updated"])
            deleted += int(out["deleted"])
        return matched, deletes, updated, deleted

    def candidate_tables(self, m: Any) -> list[str]:
        """The partition tables a source key may match: pruned by ``ns.merge``'s key filter when
        at most :data:`PRUNE_KEYS` distinct keys (they reach the driver), else all."""
        from lance_sql.tables.namespace.filter_hook import filter_planner
        from lance_sql.tables.namespace.merge_rows import key_filter

        oids = sorted(m.entries)
        keys = self.keyed.select(*self.on).distinct().limit(PRUNE_KEYS + 1).toArrow()
        if not keys.num_rows:
            return []
        if keys.num_rows > PRUNE_KEYS:
            return oids
        pairs = [(k, k) for k in self.on]
        cls = filter_planner().classify(
            m.ns, key_filter(m.ns, source_rows(m.ns, keys, self.on), pairs)
        )
        return sorted(set(cls.covered) | set(cls.partial))

    def insert_step(
        self, version: int, write_id: str, matched_rows: list[int]
    ) -> tuple[list[Any], list[str]]:
        from lance_sql.engines.spark.options import read_options
        from lance_sql.engines.spark.types import spark_struct
        from lance_sql.engines.spark.write import LanceNamespaceWriter
        from lance_sql.tables.namespace.staging import StagedWrite

        rest = self.src
        if matched_rows:
            done = self.spark.createDataFrame([(int(i),) for i in set(matched_rows)], f"{ROW} long")
            rest = rest.join(done, ROW, "left_anti")
        rest = rest.drop(ROW)
        # keys compare (and insert) in the namespace's types, as ns.merge casts them
        struct = spark_struct(pa.schema([self.ns.schema.field(k) for k in self.on]))
        for f in struct.fields:
            if rest.schema[f.name].dataType != f.dataType:
                rest = rest.withColumn(f.name, rest[f.name].cast(f.dataType))
        options = read_options(self.root, version, self.storage_options)
        writer = LanceNamespaceWriter(options, False, rest.schema)
        writer.write_id = write_id
        out = rest.mapInArrow(InsertTask(writer), "staged string, attempt string").collect()
        stages = [StagedWrite.from_json(r["staged"]) for r in out if r["staged"]]
        return stages, [r["attempt"] for r in out if r["attempt"]]


def merge(
    spark: Any,
    root: str,
    source: Any,
    on: Sequence[str],
    *,
    when_matched_update: bool | str | Mapping[str, str] | None = None,
    when_matched_delete: bool | str = False,
    when_not_matched_insert: bool = False,
    storage_options: Mapping[str, str] | None = None,
) -> Any:
    """MERGE the DataFrame ``source`` into the namespace at ``root`` (see ``ns.merge``);
    returns a :class:`~lance_sql.tables.namespace.merge.MergeResult`."""
    return MergeJob(
        spark,
        root,
        source,
        on,
        when_matched_update,
        when_matched_delete,
        when_not_matched_insert,
        storage_options,
    ).run()
