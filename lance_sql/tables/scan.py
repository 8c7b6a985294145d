"""Scan units: independently scannable pieces of a table, shared by every engine.

One unit is one engine partition or Spark task; it streams Arrow batches with a
projection and a filter applied **exactly** (engines do not re-check pushed filters).
This module holds what every unit shares: the :class:`ScanUnit` protocol, metrics,
filter normalisation and the SQL semantics of filters evaluated in pyarrow.
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
    """``table.filter(filter)``; a filter pyarrow refuses (decimal vs integer literal, other
    time unit or zone) is a :class:`PlanningError`, not a ``FormatError`` about the table."""
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
    """Thread-safe counters of what scans read; ``rows_read``: rows out of pylance, before
    any filter this project applies itself."""

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
        """Lazily stream batches of ``project(schema, columns)`` with ``filter`` applied
        exactly; ``columns=[]`` yields zero-column batches carrying row counts."""

    def read_table(self, columns: Sequence[str], filter: pc.Expression | None = None) -> pa.Table:
        """This unit's rows matching ``filter``, projected to ``columns``, as one table
        (storage units override it with a native read)."""
        schema = projected_schema(self.schema, columns)
        return pa.Table.from_batches(list(self.to_batches(columns, filter)), schema=schema)

    def count_rows(self, filter: pc.Expression | None = None) -> int:
        """Rows of this unit that satisfy ``filter`` (all live rows when None)."""
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
        """Every row of ``columns`` as a few tables of the projected types when this unit is
        small and read without a scanner, else None; called from any thread."""
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
#: boolean literal Expressions and their values (a NULL one typed or untyped)
_LITERALS = (
    (pc.scalar(True), True),
    (_NOTHING, False),
    (pc.scalar(pa.scalar(None, pa.bool_())), None),
    (pc.scalar(None), None),
)
#: what :func:`boolean_literal` returns for anything but a boolean literal
NOT_LITERAL = object()


def boolean_literal(value: object) -> object:
    """True, False or None for a pyarrow boolean (or NULL) literal, else :data:`NOT_LITERAL`."""
    if isinstance(value, pc.Expression):
        return next((out for lit, out in _LITERALS if value.equals(lit)), NOT_LITERAL)
    if isinstance(value, pa.BooleanScalar):
        return value.as_py()
    if isinstance(value, pa.NullScalar):
        return None
    return NOT_LITERAL


def normalize_filter(filter: object) -> pc.Expression | None:
    """A filter as an Expression, or None for "every row".

    DataFusion may pass a constant (a ``BooleanScalar`` or literal Expression) for a
    folded filter: TRUE becomes None; FALSE and NULL become ``pc.scalar(False)``.
    """
    literal = boolean_literal(filter)
    if filter is None or filter is True or literal is True:
        return None
    if filter is False or literal is not NOT_LITERAL or isinstance(filter, pa.Scalar):
        return _NOTHING
    if isinstance(filter, pc.Expression):
        return filter
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
    """``batch_size`` capped at :data:`STORAGE_BATCH_ROWS`, so an early ``LIMIT`` reads
    little; batches are never concatenated into larger ones (a copy of every row)."""
    if batch_size is None or batch_size <= STORAGE_BATCH_ROWS:
        return batch_size
    return STORAGE_BATCH_ROWS


_Tabular = TypeVar("_Tabular", pa.RecordBatch, pa.Table)


def conform(batch: _Tabular, schema: pa.Schema) -> _Tabular:
    """``batch`` (a record batch or a table) with exactly ``schema`` (engines check
    metadata and nullability strictly). Columns match by name when ``batch`` holds
    ``schema``'s names in another order, else by position (a caller may rename).
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
    """Types that break filter serialization even when the filter does not mention them:
    pylance serializes against the whole schema, and a type Substrait does not carry or
    holding a time anywhere makes every filter fail."""
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
    """``filter`` with every ``is_in`` giving NULL for a NULL input, as SQL's ``IN`` does
    (pyarrow's default gives false, which a ``NOT`` turns into kept rows).

    pyarrow cannot walk an Expression, so its serialized form (an IPC file whose
    columns hold the function options) is edited: every ``SetLookupOptions`` gets
    ``EMIT_NULL``. If that form changes, the expression is returned unchanged.
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
    """``filter`` as DataFusion evaluates it, for pyarrow compute over ``schema``: NULL
    ``IN`` and float (-0.0, NaN) semantics."""
    return with_sql_float_semantics(with_sql_null_semantics(filter), schema)


def balanced_groups(sizes: Sequence[tuple[int, int]], k: int) -> list[list[int]]:
    """Split ``(item_id, size)`` pairs into at most ``k`` non-empty groups of similar total
    size (largest first to the smallest group), ids sorted inside each group."""
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
