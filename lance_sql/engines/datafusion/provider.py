"""A generic DataFusion table over scan units, through the pyarrow-dataset protocol.

datafusion-python 55 has no pure-Python ``TableProvider``; it drives a
``pyarrow.dataset.Dataset`` by attribute name (docs/engine-notes.md, "The
pyarrow-dataset scan protocol"). :class:`ScanUnitDataset` adapts it to a planner
``planner(filter) -> ScanPlan`` called once per scan node, so all partitions of a
scan share one pinned version.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from lance_sql.engines.datafusion import filter_operators
from lance_sql.engines.datafusion.errors import recording
from lance_sql.engines.datafusion.shutdown import guarded
from lance_sql.engines.datafusion.substrait_stand_ins import schema_for_datafusion
from lance_sql.planning.scan_plan import ScanPlan
from lance_sql.tables.scan import ScanUnit, normalize_filter, projected_schema

filter_operators.install()


@dataclass(eq=False)  # compared by identity: a filter Expression has no truth value
class ScanRecord:
    """One scan node planned while :func:`capture_scans` was active."""

    table: str
    columns: list[str] | None
    filter: object  # as DataFusion passed it (an Expression, a constant Scalar or None)
    plan: ScanPlan
    dataset: object = field(default=None, repr=False, compare=False)  # the scanned table

    @property
    def filter_text(self) -> str | None:
        return None if self.filter is None else str(self.filter)


_local = threading.local()


@contextlib.contextmanager
def capture_scans() -> Iterator[list[ScanRecord]]:
    """Collect the scan nodes planned on this thread (DataFusion plans on the caller's thread)."""
    previous = getattr(_local, "records", None)
    records: list[ScanRecord] = []
    _local.records = records
    try:
        yield records
    finally:
        _local.records = previous


def capturing() -> bool:
    """True while :func:`capture_scans` is active on this thread (EXPLAIN-only details)."""
    return getattr(_local, "records", None) is not None


Planner = Callable[["pc.Expression | None"], ScanPlan]


class _Scanner:
    """What DataFusion's ``scanner(...)`` calls get back: a schema and lazy batches."""

    def __init__(
        self,
        units: Callable[[pc.Expression | None], Sequence[ScanUnit]],
        schema: pa.Schema,
        columns: Sequence[str] | None,
        filter: pc.Expression | None,
        batch_size: int | None,
    ) -> None:
        self._units = units
        self._columns = None if columns is None else list(columns)
        self._filter = normalize_filter(filter)
        self._batch_size = batch_size
        self.projected_schema = projected_schema(schema, self._columns)

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        return guarded(self._batches())

    def _batches(self) -> Iterator[pa.RecordBatch]:
        with recording():
            for unit in self._units(self._filter):
                yield from unit.to_batches(self._columns, self._filter, self._batch_size)

    def to_reader(self) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(self.projected_schema, self.to_batches())

    def to_table(self) -> pa.Table:
        return self.to_reader().read_all()


class UnitFragment:
    """One DataFusion partition: a scan unit behind pyarrow's ``Fragment.scanner`` shape."""

    def __init__(self, unit: ScanUnit, schema: pa.Schema) -> None:
        self.unit = unit
        self._schema = schema

    @recording()
    def scanner(
        self,
        schema: pa.Schema | None = None,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        batch_size: int | None = None,
        **_: Any,
    ) -> _Scanner:
        return _Scanner(lambda _: [self.unit], self._schema, columns, filter, batch_size)

    def __repr__(self) -> str:
        return f"UnitFragment({self.unit.describe()})"


class ScanUnitDataset(pads.Dataset):
    """A ``pyarrow.dataset.Dataset`` that DataFusion 55 scans unit by unit (schema fixed
    at construction; ``planner(filter)`` called once per scan node)."""

    def __init__(self, schema: pa.Schema, planner: Planner, *, name: str = "") -> None:
        # pads.Dataset is a Cython class with no usable constructor for subclasses;
        # DataFusion only uses the attributes defined here.
        if not isinstance(schema, pa.Schema):
            raise TypeError(f"{name or 'table'}: schema must be a pyarrow.Schema")
        self._lance_schema = schema
        self._planner = planner
        self.name = name
        self._last_columns = threading.local()
        self._handed: tuple[list[Any], list[ScanUnit]] | None = None

    @property
    def schema(self) -> pa.Schema:  # type: ignore[override]
        return schema_for_datafusion(self._lance_schema)  # stand-ins only for Substrait output

    @recording()
    def scanner(  # type: ignore[override]
        self,
        schema: pa.Schema | None = None,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        batch_size: int | None = None,
        **_: Any,
    ) -> _Scanner:
        """A lazy scanner over the whole table (DataFusion reads only ``projected_schema``)."""
        self._last_columns.value = None if columns is None else list(columns)
        return _Scanner(lambda f: self.plan(f).units, self.schema, columns, filter, batch_size)

    @recording()
    def get_fragments(self, filter: pc.Expression | None = None) -> list[UnitFragment]:  # type: ignore[override]
        plan = self._planner(normalize_filter(filter))
        records = getattr(_local, "records", None)
        if records is not None:
            columns = getattr(self._last_columns, "value", None)
            records.append(ScanRecord(self.name, columns, filter, plan, self))
        return [UnitFragment(unit, self._lance_schema) for unit in plan.units]

    def _reused(
        self, units: list[Any], make: Callable[[list[Any]], list[ScanUnit]]
    ) -> list[ScanUnit]:
        """``make(units)``; the same list while ``units`` (one list object) is reused."""
        cached = self._handed
        if cached is not None and cached[0] is units:
            return cached[1]
        made = make(units)
        self._handed = (units, made)
        return made

    def plan(self, filter: pc.Expression | None = None) -> ScanPlan:
        """The scan plan for ``filter`` (what ``get_fragments`` would scan)."""
        return self._planner(normalize_filter(filter))

    def count_rows(self, filter: pc.Expression | None = None, **_: Any) -> int:  # type: ignore[override]
        filter = normalize_filter(filter)
        return sum(unit.count_rows(filter) for unit in self._planner(filter).units)

    def to_table(  # type: ignore[override]
        self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None, **_: Any
    ) -> pa.Table:
        return self.scanner(columns=columns, filter=filter).to_table()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


@dataclass
class ExplainAnnotation:
    """Lines to add under each ``DatasetExec`` of an EXPLAIN output."""

    records: list[ScanRecord] = field(default_factory=list)

    def annotate(self, plan_text: str) -> str:
        """Insert a ``LanceScan:`` line under each ``DatasetExec:`` line of ``plan_text``."""
        remaining = list(self.records)
        out: list[str] = []
        for line in plan_text.split("\n"):
            out.append(line)
            stripped = line.lstrip()
            if not stripped.startswith("DatasetExec:") or not remaining:
                continue
            record = _match(stripped, remaining)
            remaining = [r for r in remaining if r is not record]
            indent = line[: len(line) - len(stripped)] + "  "
            out.append(f"{indent}{record.plan.description}, columns={_columns(record)}")
        if len(remaining) == len(self.records) and "DatasetExec" in plan_text:
            # a plan drawn without ``DatasetExec:`` lines (FORMAT tree): the lines go below it
            out.extend(f"{r.plan.description}, columns={_columns(r)}" for r in remaining)
        return "\n".join(out)


def explain_rows(logical: str, physical: str) -> pa.Table:
    """An EXPLAIN result as DataFusion gives it: columns ``plan_type`` and ``plan``."""
    return pa.table(
        {
            "plan_type": pa.array(["logical_plan", "physical_plan"], pa.string()),
            "plan": pa.array([logical, physical], pa.string()),
        }
    )


def _columns(record: ScanRecord) -> str:
    return "all" if record.columns is None else f"[{', '.join(record.columns)}]"


def _match(line: str, records: list[ScanRecord]) -> ScanRecord:
    """The record a ``DatasetExec`` line shows: same filter and projection, else the first."""
    for record in records:
        has_filter = record.filter_text is not None
        if has_filter and f"filter_expr={record.filter_text}," not in line:
            continue
        if not has_filter and "filter_expr=" in line:
            continue
        if record.columns is not None and f"projection=[{', '.join(record.columns)}]" not in line:
            continue
        return record
    return records[0]


__all__ = [
    "ExplainAnnotation",
    "ScanRecord",
    "ScanUnitDataset",
    "UnitFragment",
    "capture_scans",
    "capturing",
    "explain_rows",
]
