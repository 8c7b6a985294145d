"""Scan units: independently scannable pieces of a table, shared by every engine.

A query over a Lance dataset (or over a partitioned namespace, whose partition
tables are Lance datasets) is split into *scan units*. One unit is one piece of
work an engine runs on its own: one DataFusion partition, one Spark task. The
unit knows its output schema and how to stream Arrow batches with a projection
and a filter applied **exactly** (engines treat pushed filters as exact and do
not re-check them), so nothing engine-specific lives here.

This module holds what every unit shares: the :class:`ScanUnit` protocol,
:class:`ScanMetrics`, filter normalisation and SQL semantics for filters
evaluated in pyarrow (``is_in`` of a NULL is NULL, see
:func:`with_sql_null_semantics`; floats compare as DataFusion compares them,
-0.0 = 0.0, NaN = NaN and NaN above every number, see :mod:`.float_filters`),
and :func:`stubbed_schema` (the schema a filter is serialized against for
pylance's scanner, see :mod:`.lance_scanner`). The units themselves:
:mod:`.fragments_unit` (fragments of one Lance dataset), :mod:`.chain` (several
units as one engine partition), ``namespace/reader.py`` (a partition table with the
namespace schema).
"""

from __future__ import annotations

import heapq
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import PlanningError, first_line
from lance_sql.tables.float_filters import with_sql_float_semantics
from lance_sql.tables.substrait_schema import carried, holds


def filter_table(table: pa.Table, filter: pc.Expression) -> pa.Table:
    """``table.filter(filter)`` for the pyarrow fallbacks of scans.

    pyarrow refuses some filters a caller may give (a decimal column compared with an
    integer literal, a timestamp with a literal of another unit or zone, a string with a
    ``string_view`` literal); that is the filter's fault, not the table's, so it is a
    :class:`PlanningError` naming the filter (inside ``pylance_errors`` it would become
    a ``FormatError`` calling the table unreadable).
    """
    try:
        return table.filter(filter)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        types = ", ".join(f"{f.name}: {f.type}" for f in table.schema)
        first = first_line(exc)
        raise PlanningError(
            f"filter {filter} cannot be evaluated on columns ({types}): {first}"
        ) from exc


@dataclass
class ScanMetrics:
    """Thread-safe counters of what scans actually read (for tests, benchmarks, EXPLAIN).

    ``rows_read`` counts rows delivered by the storage scanner *before* any
    filter this project applies itself, i.e. the rows pulled out of pylance.
    """

    rows_read: int = 0
    batches_read: int = 0
    scans_started: int = 0
    fallback_filters: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, rows: int) -> None:
        with self._lock:
            self.rows_read += rows
            self.batches_read += 1

    def started(self, *, fallback: bool = False) -> None:
        with self._lock:
            self.scans_started += 1
            if fallback:
                self.fallback_filters += 1

    def reset(self) -> None:
        with self._lock:
            self.rows_read = self.batches_read = self.scans_started = self.fallback_filters = 0

    def __getstate__(self) -> dict[str, Any]:  # counters are per process; start fresh
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]


class ScanUnit(ABC):
    """One independently scannable piece of a table (one engine partition or task)."""

    @property
    @abstractmethod
    def schema(self) -> pa.Schema:
        """The unit's full output schema (before projection)."""

    @abstractmethod
    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        batch_size: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Stream batches of exactly ``project(schema, columns)`` with ``filter`` applied exactly.

        ``columns=None`` means every column; ``columns=[]`` yields zero-column
        batches that still carry row counts (``SELECT count(*)``). The iterator
        is lazy: nothing is read before the first ``next``.
        """

    def read_table(self, columns: Sequence[str], filter: pc.Expression | None = None) -> pa.Table:
        """This unit's rows matching ``filter``, projected to ``columns``, as one table.

        For an engine that wants a small unit in memory at once (one join group
        of a storage-partitioned join) rather than as a stream it pulls batch
        by batch through Python. The default collects :meth:`to_batches`;
        storage units override it with a native read.
        """
        schema = projected_schema(self.schema, columns)
        return pa.Table.from_batches(list(self.to_batches(columns, filter)), schema=schema)

    def count_rows(self, filter: pc.Expression | None = None) -> int:
        """Rows of this unit that satisfy ``filter`` (all live rows when None).

        The default counts zero-column batches; units that know their counts
        from metadata override it for the unfiltered case.
        """
        return sum(b.num_rows for b in self.to_batches([], filter))

    @abstractmethod
    def describe(self) -> str:
        """A one-line description for EXPLAIN (what is read, at which version)."""

    @property
    def estimated_rows(self) -> int | None:
        """Live rows before filtering when known from metadata, else None."""
        return None

    def starts_ahead(self, filter: pc.Expression | None) -> bool:
        """Whether starting a read with ``filter`` ahead on another thread pays off
        (:class:`~.chain.ChainedUnit`): True unless the read holds the GIL throughout."""
        return True

    def read_small(self, columns: list[str]) -> list[pa.Table] | None:
        """Every row of ``columns`` (no filter) as a few tables, when this unit is small
        and read without a scanner; else None (read it with :meth:`to_batches`).

        Called from any thread (:class:`~.chain.ChainedUnit` gathers the tables of
        many small units into few batches); tables have exactly the projected schema's
        column types.
        """
        return None


class ForwardingUnit(ScanUnit):
    """A unit that scans ``inner`` with the filter :meth:`inner_filter` gives; every
    attribute it does not define (``uri``, ``entry``, ...) is ``inner``'s."""

    def __init__(self, inner: ScanUnit) -> None:
        self.inner = inner

    def inner_filter(self, filter: pc.Expression | None) -> pc.Expression | None:
        """The filter ``inner`` is scanned with for ``filter`` (itself here)."""
        return filter

    @property
    def schema(self) -> pa.Schema:
        return self.inner.schema

    @property
    def estimated_rows(self) -> int | None:
        return self.inner.estimated_rows

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        batch_size: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        return self.inner.to_batches(columns, self.inner_filter(filter), batch_size)

    def read_table(self, columns: Sequence[str], filter: pc.Expression | None = None) -> pa.Table:
        return self.inner.read_table(columns, self.inner_filter(filter))

    def count_rows(self, filter: pc.Expression | None = None) -> int:
        return self.inner.count_rows(self.inner_filter(filter))

    def describe(self) -> str:
        return self.inner.describe()

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (unpickling): never recurse
            raise AttributeError(name)
        return getattr(self.inner, name)


_NOTHING = pc.scalar(False)
_EVERYTHING = pc.scalar(True)
_NULLS = (pc.scalar(pa.scalar(None, pa.bool_())), pc.scalar(None))


def normalize_filter(filter: object) -> pc.Expression | None:
    """A filter as an Expression, or None for "every row".

    Engines may hand over a constant instead of an expression: DataFusion
    simplifies ``x = 1 AND x BETWEEN 0 AND 0`` to the literal ``false`` and then
    passes a ``pyarrow.BooleanScalar`` (or, when other conjuncts were folded
    away, a literal Expression). TRUE becomes None; FALSE and NULL become
    ``pc.scalar(False)`` (see :func:`matches_nothing`): a row passes a filter
    only where it is TRUE.
    """
    if filter is None:
        return None
    if isinstance(filter, pc.Expression):
        if filter.equals(_EVERYTHING):
            return None
        if filter.equals(_NOTHING) or any(filter.equals(n) for n in _NULLS):
            return _NOTHING
        return filter
    if isinstance(filter, bool):
        return None if filter else _NOTHING
    if isinstance(filter, pa.Scalar):
        return None if filter.is_valid and filter.as_py() is True else _NOTHING
    raise TypeError(f"a filter must be a pyarrow.compute.Expression, got {type(filter).__name__}")


def matches_nothing(filter: pc.Expression | None) -> bool:
    """True for the constant filter no row passes (nothing needs reading)."""
    return filter is not None and filter.equals(_NOTHING)


def projected_schema(schema: pa.Schema, columns: Sequence[str] | None) -> pa.Schema:
    """``schema`` restricted to ``columns`` in that order (all of it when None)."""
    if columns is None:
        return schema
    return pa.schema([schema.field(name) for name in columns], metadata=schema.metadata)


def empty_batches(num_rows: int, batch_size: int | None) -> Iterator[pa.RecordBatch]:
    """Zero-column batches carrying ``num_rows`` rows in total (for ``count(*)``)."""
    step = batch_size or max(num_rows, 1)
    done = 0
    while done < num_rows:
        n = min(step, num_rows - done)
        yield pa.table({"_": pa.nulls(n)}).select([]).to_batches()[0]
        done += n


#: Most rows a unit reads from storage per batch, whatever the engine's batch size.
STORAGE_BATCH_ROWS = 16384


def storage_batch_size(batch_size: int | None) -> int | None:
    """The batch size to read from storage for an engine asking for ``batch_size``.

    At most :data:`STORAGE_BATCH_ROWS`: large enough that per-batch costs (a
    Python UDF call, an FFI crossing) stay small, small enough that a ``LIMIT``
    that stops after the first batch reads under 1% of a few million rows.
    Batches go to the engine as pylance returns them: concatenating them into
    larger ones cost a copy of every row (measured: 35-50% of a ``sum`` scan).
    """
    if batch_size is None or batch_size <= STORAGE_BATCH_ROWS:
        return batch_size
    return STORAGE_BATCH_ROWS


_Tabular = TypeVar("_Tabular", pa.RecordBatch, pa.Table)


def conform(batch: _Tabular, schema: pa.Schema) -> _Tabular:
    """``batch`` (a record batch or a table) with exactly ``schema``.

    Field names, types, nullability and metadata: pylance returns the right
    types but may differ in field metadata or nullability flags; engines check
    schemas strictly, so rebuild when needed (no data is copied). Columns are
    matched by name when ``batch`` holds ``schema``'s names in another order, else
    by position (a caller may rename: a column read under its table's name).
    """
    if batch.schema.equals(schema, check_metadata=True):
        return batch
    columns, names = batch.columns, batch.schema.names
    if names != schema.names and sorted(names) == sorted(set(schema.names)):
        columns = [batch.column(name) for name in schema.names]
    arrays = [
        col if col.type.equals(f.type) else col.cast(f.type)
        for col, f in zip(columns, schema, strict=True)
    ]
    return type(batch).from_arrays(arrays, schema=schema)


def _needs_placeholder(t: pa.DataType) -> bool:
    """Types that break filter serialization even when the filter does not mention them.

    pylance serializes a filter to Substrait against the *whole* dataset schema
    and only stubs out fixed-size lists and extension types; a column of a type
    pyarrow's Substrait does not carry (:func:`~.substrait_schema.carried`: a
    decimal256, duration, large_list, fixed-size list, extension type, a struct
    whose fields carry metadata) or holding a time anywhere (Lance refuses
    those) makes every filter fail. Found by probing pylance 14.
    """
    return not carried(t) or holds(t, pa.types.is_time)


def stubbed_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with the columns that break filter serialization stubbed (same positions)."""
    return pa.schema(
        [
            pa.field(f"__lance_sql_placeholder_{i}", pa.int8()) if _needs_placeholder(f.type) else f
            for i, f in enumerate(schema)
        ]
    )


#: ``SetLookupOptions.NullMatchingBehavior.EMIT_NULL`` in Arrow C++ (MATCH=0, SKIP=1).
_EMIT_NULL = 2


def with_sql_null_semantics(filter: pc.Expression) -> pc.Expression:
    """``filter`` with every ``is_in`` giving NULL for a NULL input, as SQL's ``IN`` does.

    DataFusion translates ``x IN (...)`` to pyarrow's ``is_in`` with the default
    ``null_matching_behavior=MATCH``, which yields *false* for a NULL ``x``; under
    a ``NOT`` that keeps rows SQL drops. Lance evaluates ``is_in`` with SQL
    semantics, so the pyarrow fallback must too. pyarrow has no public API to
    walk an Expression; its serialized form (an Arrow IPC file whose literal
    columns hold the function options) is edited instead: every
    ``SetLookupOptions`` gets ``EMIT_NULL``, which equals SQL semantics for the
    NULL-free value sets DataFusion produces. If that form ever changes, the
    expression is returned unchanged.
    """
    try:
        reduced = filter.__reduce__()
        reader = pa.ipc.open_file(reduced[1][0])
        if reader.num_record_batches != 1:
            return filter
        schema = reader.schema
        batch = reader.get_batch(0)
        columns, changed = [], False
        for col in batch.columns:
            t = col.type
            if (
                pa.types.is_struct(t)
                and t.get_field_index("_type_name") >= 0
                and t.get_field_index("null_matching_behavior") >= 0
                and col.field("_type_name")[0].as_py() == b"SetLookupOptions"
            ):
                children = [col.field(i) for i in range(t.num_fields)]
                i = t.get_field_index("null_matching_behavior")
                children[i] = pa.array([_EMIT_NULL] * len(col), t.field(i).type)
                col = pa.StructArray.from_arrays(children, fields=list(t))
                changed = True
            columns.append(col)
        if not changed:
            return filter
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, schema) as writer:
            writer.write_batch(pa.RecordBatch.from_arrays(columns, schema=schema))
        return reduced[0](sink.getvalue())
    except Exception:  # private serialization changed: keep pyarrow's own semantics
        return filter


def with_sql_semantics(filter: pc.Expression, schema: pa.Schema) -> pc.Expression:
    """``filter`` as SQL (DataFusion) evaluates it, for pyarrow compute over ``schema``.

    ``is_in`` gives NULL for NULL (:func:`with_sql_null_semantics`) and float
    comparisons treat -0.0 as 0.0 and NaN as equal to NaN and greater than
    every other value (:func:`~.float_filters.with_sql_float_semantics`).
    """
    return with_sql_float_semantics(with_sql_null_semantics(filter), schema)


def balanced_groups(sizes: Sequence[tuple[int, int]], k: int) -> list[list[int]]:
    """Split ``(item_id, size)`` pairs into at most ``k`` groups of similar total size.

    Largest-first greedy assignment (each item to the currently smallest group),
    ids sorted inside each group so a group reads its fragments in order. Never
    returns empty groups; returns ``[]`` for no items.
    """
    k = max(1, min(k, len(sizes)))
    if not sizes:
        return []
    heap = [(0, g) for g in range(k)]
    groups: list[list[int]] = [[] for _ in range(k)]
    for item, size in sorted(sizes, key=lambda p: (-p[1], p[0])):
        total, g = heapq.heappop(heap)
        groups[g].append(item)
        heapq.heappush(heap, (total + size, g))
    return [sorted(g) for g in groups if g]
