"""``df.write.format("lance_ns")``: tasks stage Arrow data, the driver commits once.

Each task writes its batches to one Arrow IPC file in a staging directory
(``{root}/_spark_staging/{write id}/``) and returns the file path. The
driver's ``commit`` appends (or overwrites) all staged rows through the
namespace writer in one call, so every partition value gets exactly one
partition table holding all tasks' rows and ``__manifest`` changes once
(atomic across partitions). ``abort`` deletes the staged files; ``__manifest``
is untouched. Limitation: the driver performs the Lance write (data flows
through it once); task-side staging of Lance fragments is future work.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage

from lance_sql.errors import LanceSqlError


@dataclass
class StagedFile(WriterCommitMessage):
    path: str | None
    rows: int


class LanceNamespaceWriter(DataSourceArrowWriter):
    def __init__(self, options: dict[str, str], overwrite: bool) -> None:
        from lance_sql.engines.spark.source import open_namespace

        self.options = dict(options)
        self.overwrite = overwrite
        ns = open_namespace(self.options)  # fails early (on the driver) for a bad root
        self.root = str(ns.root)
        self.schema = ns.schema
        self.staging = os.path.join(self.root, "_spark_staging", uuid.uuid4().hex)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedFile:
        os.makedirs(self.staging, exist_ok=True)
        path = os.path.join(self.staging, f"{uuid.uuid4().hex}.arrow")
        rows = 0
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, self.schema) as out:
            for batch in iterator:
                table = pa.Table.from_batches([batch])
                missing = [n for n in self.schema.names if n not in table.column_names]
                if missing:
                    raise LanceSqlError(f"lance_ns {self.root}: DataFrame lacks columns {missing}")
                table = table.select(self.schema.names).cast(self.schema)
                for b in table.to_batches():
                    out.write_batch(b)
                rows += table.num_rows
        return StagedFile(path, rows)

    def commit(self, messages: list[StagedFile | None]) -> None:
        from lance_sql.engines.spark.source import open_namespace

        try:
            tables = []
            for m in messages:
                if m is not None and m.path is not None:
                    with pa.memory_map(m.path) as src:
                        tables.append(pa.ipc.open_file(src).read_all())
            data = pa.concat_tables(tables) if tables else self.schema.empty_table()
            ns = open_namespace(self.options)
            if self.overwrite:
                ns.overwrite(data)
            elif data.num_rows:
                ns.append(data)
        finally:
            self._cleanup()

    def abort(self, messages: list[StagedFile | None]) -> None:
        self._cleanup()

    def _cleanup(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)
        parent = os.path.dirname(self.staging)
        if os.path.isdir(parent) and not os.listdir(parent):
            os.rmdir(parent)


__all__ = ["LanceNamespaceWriter", "StagedFile"]
