"""The DataFusion table for one Lance dataset: :class:`LanceTable` scans as partitions.

Each scan node pins a version and splits its fragments into ``partitions`` units
balanced by live rows; pylance failures while a unit is read are raised typed
(:mod:`lance_sql.tables.pylance_errors`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.engines.datafusion.provider import ScanUnitDataset, capturing
from lance_sql.errors import FormatError
from lance_sql.planning.scan_plan import ScanPlan
from lance_sql.tables.dataset_cache import OpenCache
from lance_sql.tables.fragments_unit import LanceFragmentsUnit
from lance_sql.tables.lance_scanner import FILTER_REFUSED, lance_scanner
from lance_sql.tables.lance_table import LanceTable, Snapshot
from lance_sql.tables.pylance_errors import pylance_errors
from lance_sql.tables.scan import ForwardingUnit, ScanMetrics, ScanUnit, matches_nothing

#: Filters whose pushability is remembered per table (a service may see many distinct ones).
_MAX_CACHED_FILTERS = 256


class LanceDatasetTable(ScanUnitDataset):
    """A ``pyarrow.dataset.Dataset`` over a :class:`LanceTable`, ready for ``register_table``."""

    def __init__(self, table: LanceTable, *, name: str, partitions: int) -> None:
        if partitions < 1:
            raise ValueError(f"{name}: partitions must be >= 1, got {partitions}")
        self.table = table
        self.partitions = partitions
        self._pushable: OpenCache[str] = OpenCache(_MAX_CACHED_FILTERS)
        super().__init__(table.schema, self._plan, name=name)

    def live_rows(self, snapshot: Snapshot | None = None) -> int:
        """Live rows at ``snapshot`` (default: the version a scan reads now), from metadata."""
        snapshot = snapshot or self.table.snapshot()
        return sum(u.estimated_rows or 0 for u in self.table.units(snapshot, self.partitions))

    @property
    def metrics(self) -> ScanMetrics:
        """Rows and batches read from pylance by every scan of this table (thread-safe)."""
        return self.table.metrics

    def _plan(self, filter: pc.Expression | None) -> ScanPlan:
        snapshot = self.table.snapshot()
        units = self.table.units(snapshot, self.partitions)
        fragments = sum(len(u.fragment_ids) for u in units)
        typed_units = self._typed_units(units, snapshot.version)
        pinned = "latest" if self.table.follow_latest else "pinned"
        rows = sum(u.estimated_rows or 0 for u in units)
        if filter is None:
            where = "filter=none"
        elif matches_nothing(filter):
            where = "filter=false (nothing is read)"
        elif not capturing():  # the Lance/pyarrow check costs a plan: EXPLAIN only
            where = f"filter={filter}"
        else:
            refused = self._refusal(snapshot, filter)
            where = (
                f"filter={filter} (in Lance)"
                if refused is None
                else f"filter={filter} (in pyarrow: pylance refused it: {refused})"
            )
        description = (
            f"LanceScan: table={self.name}, uri={self.table.uri}, version={snapshot.version} "
            f"({pinned}), fragments={fragments}, partitions={len(units)}, rows={rows}, {where}"
        )
        return ScanPlan.of_units(typed_units, description)

    def _typed_units(self, units: list[LanceFragmentsUnit], version: int) -> list[ScanUnit]:
        """``units`` typed; the same list while the table's split is reused (one version)."""
        what = f"Lance table {self.name!r} at version {version}"
        return self._reused(units, lambda us: [TypedFragmentsUnit(u, what) for u in us])

    def _refusal(self, snapshot: Snapshot, filter: pc.Expression) -> str | None:
        """Why pylance refuses ``filter`` (None when it accepts it); cached per filter text."""
        return self._pushable.get_or_open(str(filter), lambda: _refused(snapshot, filter)) or None


def _refused(snapshot: Snapshot, filter: pc.Expression) -> str:
    """pylance's refusal of ``filter`` in a scan of ``snapshot`` ("": it accepts it)."""
    try:
        lance_scanner(snapshot.dataset, columns=[], filter=filter, with_row_id=True).explain_plan()
    except FILTER_REFUSED as exc:
        return str(exc).split(",")[0][:120]
    return ""


T = TypeVar("T")


def catalog_name(name: str) -> str:
    """The name DataFusion's catalog gives a table registered as ``name``: an unquoted
    identifier is lower-cased, a double-quoted one kept as written."""
    if len(name) > 1 and name[0] == name[-1] == '"':
        return name[1:-1].replace('""', '"')
    return name.lower()


def find_registered(tables: Mapping[str, T], name: str) -> T | None:
    """The table of ``tables`` (keyed by catalog name) that ``name`` means: a name read
    from a plan as it is, a name a user wrote as DataFusion's catalog resolves it."""
    found = tables.get(name)
    return tables.get(catalog_name(name)) if found is None else found


def lance_dataset(ctx: Any, name: str) -> LanceDatasetTable | None:
    """The Lance dataset registered in ``ctx`` as ``name`` (``register_lance``), else None."""
    try:
        provider = ctx.lance_table(name)
    except (KeyError, AttributeError):
        return None
    return provider if isinstance(provider, LanceDatasetTable) else None


class TypedFragmentsUnit(ForwardingUnit):
    """A :class:`LanceFragmentsUnit` whose pylance failures are typed errors naming ``what``."""

    def __init__(self, inner: LanceFragmentsUnit, what: str) -> None:
        super().__init__(inner)
        self.what = what

    def __repr__(self) -> str:
        return f"TypedFragmentsUnit({self.describe()})"

    def _errors(self) -> Any:
        return pylance_errors(
            self.what,
            self.inner.uri,
            version=self.inner.version,
            storage_options=self.inner.storage_options,
            missing=FormatError,
        )

    def to_batches(
        self,
        columns: Sequence[str] | None = None,
        filter: pc.Expression | None = None,
        batch_size: int | None = None,
    ) -> Iterator[pa.RecordBatch]:
        with self._errors():
            yield from super().to_batches(columns, filter, batch_size)

    def read_table(self, columns: Sequence[str], filter: pc.Expression | None = None) -> pa.Table:
        with self._errors():
            return super().read_table(columns, filter)

    def count_rows(self, filter: pc.Expression | None = None) -> int:
        with self._errors():
            return super().count_rows(filter)
