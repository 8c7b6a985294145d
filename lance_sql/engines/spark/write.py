"""``df.write.format("lance_ns")``: tasks stage Lance files, the driver commits once.

Each Spark task stages its rows with :meth:`PartitionedNamespace.stage`: it
writes uncommitted Lance data files straight into the partition tables'
directories (new partitions included) and returns the small JSON of its
:class:`StagedWrite` as the commit message. All tasks of one job share a
write id, so a new partition that several tasks write gets one directory and
ends as one partition table. The driver's ``commit`` calls
:meth:`PartitionedNamespace.commit_staged` once: each touched partition table
is committed once, then ``__manifest`` once (atomic across partitions); no
row passes through the driver. ``abort`` deletes the staged files
(:meth:`PartitionedNamespace.abort_staged`) and leaves ``__manifest``
untouched. Staged files are invisible to readers until the commit: no
``__manifest`` version points at them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from lance_sql.errors import SchemaMismatchError


@dataclass
class StagedCommit(WriterCommitMessage):
    """One task's staged write (``StagedWrite.to_json()``) and its row count."""

    staged: str
    rows: int


class LanceNamespaceWriter(DataSourceArrowWriter):
    """Created on the driver, pickled to every task (see the module docstring)."""

    def __init__(self, options: dict[str, str], overwrite: bool) -> None:
        from lance_sql.engines.spark.source import open_namespace

        self.options = dict(options)
        self.overwrite = overwrite
        self.mode = "overwrite" if overwrite else "append"
        ns = open_namespace(self.options)  # fails early (on the driver) for a bad root
        self.root = str(ns.root)
        self.schema = ns.schema
        self.write_id = uuid.uuid4().hex

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedCommit:
        from lance_sql.engines.spark.source import open_namespace

        ns = open_namespace(self.options)
        staged = ns.stage(self._conformed(iterator), mode=self.mode, write_id=self.write_id)
        return StagedCommit(staged.to_json(), staged.rows)

    def _conformed(self, iterator: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Spark's Arrow batches with the namespace's column order and types."""
        for batch in iterator:
            missing = [n for n in self.schema.names if n not in batch.schema.names]
            if missing:
                raise SchemaMismatchError(
                    f"lance_ns {self.root}: the DataFrame lacks column(s) {missing}"
                )
            table = pa.Table.from_batches([batch]).select(self.schema.names)
            yield from table.cast(self.schema).to_batches()

    def commit(self, messages: list[StagedCommit | None]) -> None:
        from lance_sql.engines.spark.source import open_namespace

        ns = open_namespace(self.options)
        ns.commit_staged(self._staged(messages), mode=self.mode)

    def abort(self, messages: list[StagedCommit | None]) -> None:
        from lance_sql.engines.spark.source import open_namespace

        ns = open_namespace(self.options)
        ns.abort_staged(self._staged(messages))

    @staticmethod
    def _staged(messages: list[StagedCommit | None]) -> list[object]:
        from lance_sql.tables.namespace.staging import StagedWrite

        return [
            StagedWrite.from_json(m.staged)
            for m in messages
            if isinstance(m, StagedCommit) and m.staged
        ]


__all__ = ["LanceNamespaceWriter", "StagedCommit"]
