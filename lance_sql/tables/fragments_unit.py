"""The scan unit for "these fragments of one Lance dataset at one pinned version".

It streams from pylance's scanner and falls back to filtering in pyarrow when
pylance refuses a filter (unsigned-integer and large_string columns, nanosecond
literals, implicit casts), with SQL semantics on both paths. A small table read
without a filter skips the scanner (:mod:`.file_read`).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.tables.blob_columns import dataset_read_schema
from lance_sql.tables.dataset_cache import open_pinned
from lance_sql.tables.file_read import DataFileRead, direct_files, read_direct
from lance_sql.tables.float_filters import FloatRewriteError
from lance_sql.tables.lance_scanner import FILTER_REFUSED, lance_scanner
from lance_sql.tables.materialization import MIN_ROWS, late_materialization
from lance_sql.tables.scan import (
    ScanMetrics,
    ScanUnit,
    balanced_groups,
    conform,
    empty_batches,
    filter_table,
    matches_nothing,
    normalize_filter,
    projected_schema,
    storage_batch_size,
    with_sql_null_semantics,
    with_sql_semantics,
)

if TYPE_CHECKING:
    import lance

_UNKNOWN = object()

#: Rows per batch of :meth:`ScanUnit.read_table`: the rows are held in memory anyway,
#: and every batch is a step for the engine that scans them (pylance's default: 8192).
READ_TABLE_BATCH_ROWS = 65536


class LanceFragmentsUnit(ScanUnit):
    """Some fragments of one Lance dataset at one pinned version; pickles cheaply and
    reopens the dataset at the same version on first use."""

    def __init__(
        self,
        dataset: lance.LanceDataset,
        fragment_ids: Sequence[int],
        *,
        schema: pa.Schema | None = None,
        storage_options: dict[str, str] | None = None,
        metrics: ScanMetrics | None = None,
        estimated_rows: int | None = None,
        scan_options: dict[str, Any] | None = None,
    ) -> None:
        self._dataset: lance.LanceDataset | None = dataset
        #: the table's pylance scanner options (:mod:`lance_sql.tables.scan_options`)
        self.scan_options = scan_options
        self.uri: str = dataset.uri
        self.version: int = dataset.version
        self.fragment_ids: tuple[int, ...] = tuple(fragment_ids)
        self._schema = schema if schema is not None else dataset_read_schema(dataset.schema)
        self.storage_options = dict(storage_options) if storage_options else None
        self.metrics = metrics if metrics is not None else ScanMetrics()
        self._estimated_rows = estimated_rows
        self._lock = threading.Lock()
        #: data files read without a scanner (:mod:`.file_read`); None: scan; unset: not known
        self._direct: list[DataFileRead] | object | None = _UNKNOWN
        self._direct_checked = False
        self._physical: int | None = None  # stored rows of the fragments (see _late)

    # -- pickling: never ship the open dataset -------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_dataset"] = None
        del state["_lock"], state["_direct"], state["_direct_checked"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        # decided again where unpickled (a pickled sentinel would not be ``_UNKNOWN``)
        self._direct, self._direct_checked = _UNKNOWN, False

    @property
    def dataset(self) -> lance.LanceDataset:
        with self._lock:
            if self._dataset is None:  # unpickled (e.g. in a Spark task): shared per process
                self._dataset = open_pinned(self.uri, self.version, self.storage_options)
            return self._dataset

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    @property
    def estimated_rows(self) -> int | None:
        return self._estimated_rows

    def _scanner(
        self, columns: list[str], filter: Any, fragments: list[Any], batch_size: int | None
    ) -> Any:
        """pylance's scanner of ``fragments`` over the table's scan options; late
        materialization sampled unless those options set it or the unit is too small."""
        ds = self.dataset
        late = None  # Lance's default
        sampled = not (self.scan_options and "late_materialization" in self.scan_options)
        if (
            sampled
            and filter is not None
            and columns
            and self._physical_rows(fragments) >= MIN_ROWS
        ):
            late = late_materialization(ds, fragments, columns, filter)
        if self.scan_options:
            ds = copy.copy(ds)  # pylance's checkout_version does the same
            ds._default_scan_options = self.scan_options
        return lance_scanner(
            ds,
            columns=columns,
            filter=filter,
            fragments=fragments,
            batch_size=batch_size,
            with_row_id=not columns,
            late_materialization=late,
        )

    def _physical_rows(self, fragments: list[Any]) -> int:
        """Rows stored in this unit's fragments, deleted ones included (read once: a
        pinned version's fragments do not change)."""
        rows = self._physical
        if rows is None:
            rows = self._physical = sum(int(f.metadata.physical_rows or 0) for f in fragments)
        return rows

    def starts_ahead(self, filter: pc.Expression | None) -> bool:
        """A read from the data files (no scanner) is over sooner than a thread hop."""
        return filter is not None or bool(self.scan_options) or not isinstance(self._direct, list)

    def read_small(self, columns: list[str]) -> list[pa.Table] | None:
        """The rows from the data files when this unit reads that way (:mod:`.file_read`;
        its first read checks the files, and a unit found unfit is scanned from then on)."""
        if not columns or self.scan_options or self._direct is None:
            return None
        tables = self._read_direct(columns)
        if tables is not None:
            self.metrics.started()
            self.metrics.add(sum(t.num_rows for t in tables))
        return tables

    def _fragments(self) -> list[Any]:
        ds = self.dataset
        return [ds.get_fragment(i) for i in self.fragment_ids]

    def describe(self) -> str:
        ids = ", ".join(str(i) for i in self.fragment_ids[:8])
        more = ", ..." if len(self.fragment_ids) > 8 else ""
        return f"{self.uri}@v{self.version} fragments=[{ids}{more}]"

    def __repr__(self) -> str:
        return f"LanceFragmentsUnit({self.describe()})"

    def count_rows(self, filter: pc.Expression | None = None) -> int:
        filter = normalize_filter(filter)
        if not self.fragment_ids or matches_nothing(filter):
            return 0
        if filter is None:
            return sum(f.count_rows() for f in self._fragments())
        return super().count_rows(filter)

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        batch_size: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        out_schema = projected_schema(self._schema, columns)
        filter = normalize_filter(filter)
        if matches_nothing(filter):
            return iter(())
        return self._generate(list(out_schema.names), out_schema, filter, batch_size)

    def read_table(self, columns: Sequence[str], filter: pc.Expression | None = None) -> pa.Table:
        """Read natively with pylance's ``to_table`` (decoded in parallel, off the GIL)."""
        out_schema = projected_schema(self._schema, columns)
        filter = normalize_filter(filter)
        if not self.fragment_ids or matches_nothing(filter):
            return out_schema.empty_table()
        if not columns:
            return super().read_table(columns, filter)
        try:
            scanner = self._scanner(list(columns), filter, self._fragments(), READ_TABLE_BATCH_ROWS)
            table = scanner.to_table()
        except FILTER_REFUSED:
            if filter is None:
                raise
            return super().read_table(columns, filter)  # the pyarrow fallback of to_batches
        self.metrics.started()
        self.metrics.add(table.num_rows)
        return conform(table, out_schema)

    def _generate(
        self,
        columns: list[str],
        out_schema: pa.Schema,
        filter: pc.Expression | None,
        batch_size: int | None,
    ) -> Iterator[pa.RecordBatch]:
        if not self.fragment_ids:
            return
        if not columns and filter is None:
            # count(*) without a filter: metadata only, no data read.
            self.metrics.started()
            yield from empty_batches(self.count_rows(), batch_size)
            return
        tables = self.read_small(columns) if filter is None else None
        if tables is not None:
            for table in tables:
                for batch in table.to_batches(max_chunksize=batch_size):
                    if batch.num_rows:
                        yield conform(batch, out_schema)
            return
        fragments = self._fragments()
        batch_size = storage_batch_size(batch_size)
        if self.scan_options and "batch_size" in self.scan_options:
            batch_size = None  # the table's own, from its scan options
        try:
            reader = self._scanner(columns, filter, fragments, batch_size).to_reader()
        except FILTER_REFUSED:
            if filter is None:
                raise
            yield from self._fallback(columns, out_schema, filter, batch_size, fragments)
            return
        self.metrics.started()
        # every batch of a reader has the reader's schema: compare it once, not per batch
        exact = reader.schema.equals(out_schema, check_metadata=True)
        with reader:
            for batch in reader:
                self.metrics.add(batch.num_rows)
                if not columns:
                    yield pa.table({"_": pa.nulls(batch.num_rows)}).select([]).to_batches()[0]
                elif batch.num_rows:
                    yield batch if exact else conform(batch, out_schema)

    def _read_direct(self, columns: list[str]) -> list[pa.Table] | None:
        """This unit's live rows read from its data files without a scanner, or None; the
        first read takes every column to check the files' schema."""
        files = self._direct
        if files is _UNKNOWN:
            try:
                files = direct_files(self.dataset, self.fragment_ids, self._schema)
            except Exception:  # any doubt: pylance's scanner reads it (and reports errors)
                files = None
        if files is None:
            self._direct = None
            return None
        checked = self._direct_checked
        try:
            tables = read_direct(files, self._schema, columns if checked else None)  # type: ignore[arg-type]
        except Exception:
            tables = None
        self._direct = files if tables is not None else None
        if tables is None or checked:
            return tables
        self._direct_checked = True
        return [t.select(columns) for t in tables]

    def _fallback(
        self,
        columns: list[str],
        out_schema: pa.Schema,
        filter: pc.Expression,
        batch_size: int | None,
        fragments: list[Any],
    ) -> Iterator[pa.RecordBatch]:
        """Read every column and apply ``filter`` with pyarrow (pylance refused it)."""
        self.metrics.started(fallback=True)
        try:
            filter = with_sql_semantics(filter, self.dataset.schema)
        except FloatRewriteError:
            # Only filters translated by field id (tables/namespace/reader.py) cannot be
            # read back, and those hold no float comparison (the reader applies such
            # filters itself): SQL's IN-list NULLs are all that is left to honour.
            filter = with_sql_null_semantics(filter)
        scanner = self.dataset.scanner(
            fragments=fragments, batch_size=batch_size, scan_in_order=False
        )
        with scanner.to_reader() as reader:
            yield from filtered_batches(reader, filter, out_schema, self.metrics.add)


def filtered_batches(
    batches: Iterable[pa.RecordBatch],
    filter: pc.Expression,
    out_schema: pa.Schema,
    read: Callable[[int], None] = lambda rows: None,
) -> Iterator[pa.RecordBatch]:
    """The rows of ``batches`` that ``filter`` keeps (applied by pyarrow, exactly), as
    ``out_schema``'s columns; ``read`` is told every batch's row count before filtering."""
    for batch in batches:
        read(batch.num_rows)
        kept = filter_table(pa.Table.from_batches([batch]), filter)
        if not kept.num_rows:
            continue
        if not out_schema.names:
            yield from empty_batches(kept.num_rows, None)
            continue
        for b in kept.select(out_schema.names).to_batches():
            if b.num_rows:
                yield conform(b, out_schema)


def split_fragments(
    dataset: lance.LanceDataset,
    k: int,
    *,
    schema: pa.Schema | None = None,
    storage_options: dict[str, str] | None = None,
    metrics: ScanMetrics | None = None,
    fragment_rows: Sequence[tuple[int, int]] | None = None,
    scan_options: dict[str, Any] | None = None,
) -> list[LanceFragmentsUnit]:
    """Split ``dataset``'s fragments into at most ``k`` units balanced by live row count
    (``fragment_rows``: ``(fragment_id, live_rows)`` when known); an empty dataset gives
    one empty unit, so engines always have a partition."""
    if fragment_rows is None:
        fragment_rows = [(f.fragment_id, f.count_rows()) for f in dataset.get_fragments()]
    groups = balanced_groups(fragment_rows, k)
    rows = dict(fragment_rows)
    if not groups:
        groups = [[]]
    return [
        LanceFragmentsUnit(
            dataset,
            g,
            schema=schema,
            storage_options=storage_options,
            metrics=metrics,
            estimated_rows=sum(rows.get(i, 0) for i in g),
            scan_options=scan_options,
        )
        for g in groups
    ]
