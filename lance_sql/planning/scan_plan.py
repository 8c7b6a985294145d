"""The one plan of a scan: which partition tables (or units) it reads, and its exact filter.

Every entry point gets it from :func:`.namespace_scan.plan_scan`; an engine scan node
of a dataset or join group carries its units in the same class. A coordinator ships
it to workers as JSON, with the exact filter each scan must still apply.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import PlanningError
from lance_sql.planning.plan_json import plan_object
from lance_sql.planning.pruning import SpecVersionReport, spec_ids
from lance_sql.planning.scan_filter import ScanFilter
from lance_sql.spec.predicates import to_sql

FORMAT = "lance-sql.scan-plan/1"
_BASE = ("object_id", "location", "spec_version", "read_version", "read_branch", "read_tag")
#: Columns a scan plan needs besides the partition columns.
PLAN_COLUMNS = ("object_id", "object_type", "location", "read_version", "read_branch", "read_tag")


@dataclass(frozen=True)
class PlannedPartition:
    """One selected partition table: where it is, which version, and its partition values."""

    object_id: str
    location: str | None
    spec_version: int | None
    read_version: int | None = None
    read_branch: str | None = None
    read_tag: str | None = None
    #: (manifest column name, value), non-null only (a join plan's: (field_id, value))
    values: tuple[tuple[str, Any], ...] = ()


def partition_columns(specs: Mapping[int, Any]) -> list[str]:
    """The ``partition_field_*`` column of every field of every spec (first seen order)."""
    out: dict[str, None] = {}
    for n in sorted(specs):
        for f in specs[n].fields:
            out.setdefault(f.column_name, None)
    return list(out)


def column_values(rows: pa.Table, name: str) -> list[Any]:
    """The values of column ``name`` of ``rows`` as Python values (NULLs when it is absent)."""
    if name in rows.column_names:
        return rows.column(name).to_pylist()
    return [None] * rows.num_rows


def planned_partitions(selected: pa.Table, value_columns: Sequence[str]) -> tuple[Any, ...]:
    """``PlannedPartition`` objects for ``selected`` manifest rows, sorted by ``object_id``."""
    if selected.num_rows == 0:
        return ()
    rows = selected.sort_by("object_id")
    versions = [None if v < 0 else int(v) for v in spec_ids(rows)]
    present = [c for c in value_columns if c in rows.column_names]
    values = [rows.column(c).to_pylist() for c in present]
    oid, loc, rv, rb, rt = (column_values(rows, c) for c in PLAN_COLUMNS if c != "object_type")
    out = []
    for i in range(rows.num_rows):
        vals = tuple((c, v[i]) for c, v in zip(present, values, strict=True) if v[i] is not None)
        out.append(PlannedPartition(oid[i], loc[i], versions[i], rv[i], rb[i], rt[i], vals))
    return tuple(out)


_UNSET: Any = object()


class ScanPlan:
    """The partitions a scan reads, the filter every partition scan applies, and its units.

    Partition objects, reports and SQL renderings are computed on first use (a service
    query reads only the object ids). ``pruned`` is False when the planner could not
    use the filter (every partition selected). ``filter_sql`` / ``manifest_filter``
    are for people; nothing parses them back. ``units`` / :attr:`description` are set
    by an engine and never serialised.
    """

    def __init__(
        self,
        *,
        root: str = "",
        manifest_version: int | None = None,
        partitions: tuple[PlannedPartition, ...] | Callable[[], tuple[PlannedPartition, ...]] = (),
        total_partitions: int | Callable[[], int] = 0,
        specs: tuple[SpecVersionReport, ...] | Callable[[], tuple[SpecVersionReport, ...]] = (),
        manifest_filter: str | Callable[[], str | None] | None = None,
        filter_sql: str | Callable[[], str | None] | None = _UNSET,
        pruned: bool = True,
        reason: str | None = None,
        extra: Mapping[str, Any] | None = None,
        scan_filter: ScanFilter | Callable[[], ScanFilter | None] | None = None,
        skipped_by_bounds: int = 0,
        skipped_by_key_filter: int = 0,
        proven: frozenset[str] = frozenset(),
        object_ids: Sequence[str] | Callable[[], Sequence[str]] | None = None,
        selects_all: bool = False,
        selection: Any = None,
        units: Sequence[Any] = (),
        description: str | Callable[[], str] = "",
    ) -> None:
        self.root = root
        self.manifest_version = manifest_version
        self.pruned = pruned
        self.reason = reason
        self.extra = dict(extra or {})
        self.skipped_by_bounds = skipped_by_bounds
        self.skipped_by_key_filter = skipped_by_key_filter
        #: Selected tables whose partition values prove the whole filter (a search or scan
        #: of them needs no filter); not serialised.
        self.proven = proven
        #: True when every partition table is selected (no filter, or none usable).
        self.selects_all = selects_all
        #: The planner's :class:`.planner.PartitionPlan` (None: nothing was pruned).
        self.selection = selection
        self.units = units
        self._lazy = {
            "partitions": partitions,
            "specs": specs,
            "manifest_filter": manifest_filter,
            "filter_sql": filter_sql,  # _UNSET: the scan filter's text (no bound method
            # here: a plan referring to itself lives until the cyclic collector runs)
            "description": description,
            "object_ids": object_ids,
            "scan_filter": scan_filter,
            "total_partitions": total_partitions,
        }

    def _get(self, name: str) -> Any:
        value = self._lazy[name]
        if value is _UNSET:  # filter_sql
            sf = self.scan_filter
            value = self._lazy[name] = None if sf is None else to_sql(sf.predicate)
        elif callable(value):
            value = self._lazy[name] = value()
        return value

    partitions = property(lambda self: self._get("partitions"))
    total_partitions = property(lambda self: self._get("total_partitions"))
    specs = property(lambda self: self._get("specs"))
    manifest_filter = property(lambda self: self._get("manifest_filter"))
    filter_sql = property(lambda self: self._get("filter_sql"))
    #: The exact filter, as the bound predicate IR (see :mod:`.scan_filter`).
    scan_filter = property(lambda self: self._get("scan_filter"))
    #: EXPLAIN's text of an engine scan node (computed on first use).
    description = property(lambda self: self._get("description"))

    @classmethod
    def of_units(cls, units: Sequence[Any], description: str | Callable[[], str] = "") -> ScanPlan:
        """The plan of an engine scan node that reads ``units`` (a dataset, a join group)."""
        return cls(units=units, description=description, selects_all=True)

    def with_units(self, units: Sequence[Any], description: str | Callable[[], str]) -> ScanPlan:
        """This plan with the engine's scan units and EXPLAIN text attached."""
        out = ScanPlan.__new__(ScanPlan)
        out.__dict__.update(self.__dict__)
        out._lazy = {**self._lazy, "description": description}
        out.units = units
        return out

    @property
    def object_ids(self) -> list[str]:
        """Object ids of the selected partition tables, sorted."""
        if self._lazy["object_ids"] is None:
            self._lazy["object_ids"] = [p.object_id for p in self.partitions]
        return list(self._get("object_ids"))

    @property
    def predicate(self) -> Any:
        """The predicate the planner pruned with (None: nothing was pruned)."""
        return None if self.selection is None else self.selection.predicate

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScanPlan):
            return NotImplemented
        return json.loads(self.to_json()) == json.loads(other.to_json())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"ScanPlan(root={self.root!r}, partitions={len(self.object_ids)}"
            f"/{self.total_partitions}, units={len(self.units)})"
        )

    def filter_expression(self) -> pc.Expression | None:
        """The scan filter as one exact pyarrow expression (None: no filter).

        Raises :class:`PlanningError` naming a part with no pyarrow form (``murmur3``,
        ``date_trunc``, unmodelled leaves): :meth:`to_batches` applies those exactly.
        """
        from lance_sql.planning.arrow_expr import to_pyarrow

        sf = self.scan_filter
        return None if sf is None or sf.is_true else to_pyarrow(sf.predicate)

    def scan_units(self, ns: Any, partitions: Sequence[str] | None = None, **kwargs: Any) -> list:
        """Scan units of this plan's partitions (or the ``partitions`` subset) of ``ns``."""
        ids = self.object_ids if partitions is None else list(partitions)
        return ns.scan_units(ids, **kwargs)

    def to_batches(
        self,
        ns: Any,
        partitions: Sequence[str] | None = None,
        columns: Sequence[str] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Batches of this plan's partitions (or the ``partitions`` subset) with the filter
        applied; ``ns`` is the namespace at :attr:`manifest_version`."""
        from lance_sql.planning.scan_filter import scan_batches

        seen = getattr(ns, "manifest_version", None)
        if seen is not None and seen != self.manifest_version:
            raise PlanningError(
                f"scan plan of {self.root} was made at __manifest version "
                f"{self.manifest_version}, the namespace given is at {seen}: open it with "
                f"PartitionedNamespace.open(root, version={self.manifest_version})"
            )
        units = self.scan_units(ns, partitions) if self.object_ids else []
        return scan_batches(units, self.scan_filter, ns.schema, columns)

    def explain(self) -> str:
        lines = [f"partitions: {len(self.object_ids)}/{self.total_partitions} selected"]
        if self.skipped_by_bounds:
            lines[0] += f" ({self.skipped_by_bounds} skipped by column bounds)"
        if self.skipped_by_key_filter:
            lines[0] += f" ({self.skipped_by_key_filter} skipped by key filters)"
        if not self.pruned:
            lines.append(f"  no pruning: {self.reason}")
        lines.extend(s.line("manifest filter") for s in self.specs)
        if self.filter_sql is not None:
            lines.append(f"  scan filter: {self.filter_sql}")
        return "\n".join(lines)

    # -- JSON ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "root": self.root,
            "manifest_version": self.manifest_version,
            "total_partitions": self.total_partitions,
            "manifest_filter": self.manifest_filter,
            "filter_sql": self.filter_sql,
            "pruned": self.pruned,
            "reason": self.reason,
            "filter": None if self.scan_filter is None else self.scan_filter.to_dict(),
            "skipped_by_bounds": self.skipped_by_bounds,
            "skipped_by_key_filter": self.skipped_by_key_filter,
            "specs": [s.to_dict() for s in self.specs],
            "partitions": [
                {**{k: getattr(p, k) for k in _BASE}, "values": [list(v) for v in p.values]}
                for p in self.partitions
            ],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=_json_default)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any] | str | bytes) -> ScanPlan:
        """The plan of :meth:`to_dict`'s object (or of :meth:`to_json`'s text)."""
        obj = plan_object(obj, FORMAT, "scan plan")
        if obj.get("filter") is None and obj.get("filter_sql") is not None:
            raise PlanningError("scan plan has a filter_sql but no filter: plan it again")
        try:
            return cls._from_object(obj)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PlanningError(
                f"scan plan: malformed ({type(exc).__name__}: {exc}); "
                "pass what ScanPlan.to_json() wrote"
            ) from exc

    @classmethod
    def _from_object(cls, obj: Mapping[str, Any]) -> ScanPlan:
        parts = tuple(
            PlannedPartition(
                **{k: p[k] for k in _BASE}, values=tuple((k, v) for k, v in p["values"])
            )
            for p in obj["partitions"]
        )
        return cls(
            root=obj["root"],
            manifest_version=obj["manifest_version"],
            partitions=parts,
            total_partitions=obj["total_partitions"],
            specs=tuple(
                SpecVersionReport(
                    s["spec_version"],
                    s["manifest_filter"],
                    s["selected"],
                    s["total"],
                    s.get("fully_matching", 0),
                )
                for s in obj["specs"]
            ),
            manifest_filter=obj["manifest_filter"],
            filter_sql=obj["filter_sql"],
            pruned=obj["pruned"],
            reason=obj["reason"],
            scan_filter=None if obj.get("filter") is None else ScanFilter.from_dict(obj["filter"]),
            skipped_by_bounds=int(obj.get("skipped_by_bounds", 0)),
            skipped_by_key_filter=int(obj.get("skipped_by_key_filter", 0)),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> ScanPlan:
        return cls.from_dict(text)


def _json_default(v: Any) -> Any:
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.hex()
    return str(v)
