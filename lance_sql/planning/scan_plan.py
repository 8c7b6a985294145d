"""Pre-planning of a namespace scan, shippable from a driver to its tasks.

A Spark driver (or any coordinator) decides *which* partition tables to read
once, with the pruning planner, and sends the result to workers as JSON or as
an Arrow table. Workers turn their share of the plan back into scan units with
:meth:`ScanPlan.scan_units`; the plan carries the exact filter each scan must
still apply, so pruning never changes results.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import PlanningError
from lance_sql.planning.scan_filter import ScanFilter

FORMAT = "lance-sql.scan-plan/1"
_ARROW_META = b"lance_sql:scan_plan"
_BASE = ("object_id", "location", "spec_version", "read_version", "read_branch", "read_tag")


@dataclass(frozen=True)
class PlannedPartition:
    """One selected partition table: where it is, which version, and its partition values."""

    object_id: str
    location: str | None
    spec_version: int | None
    read_version: int | None = None
    read_branch: str | None = None
    read_tag: str | None = None
    values: tuple[tuple[str, Any], ...] = ()  # (manifest column name, value), non-null only


@dataclass(frozen=True)
class SpecVersionReport:
    """Pruning of one spec version: the manifest filter used and selected/total counts.

    ``fully_matching`` counts selected partitions whose partition values prove
    the whole filter (their scans need not re-check it). ``manifest_filter`` is
    ``TRUE`` for a version nothing was pruned in (no filter, or one the planner
    could not use).
    """

    spec_version: int
    manifest_filter: str
    selected: int
    total: int
    fully_matching: int = 0


@dataclass(frozen=True)
class ScanPlan:
    """The partitions a scan reads and the filter every partition scan applies.

    ``filter_sql`` is the whole scan filter in SQL (None: no filter); it is
    applied inside every selected partition table, so the pruning itself only
    skips work. ``pruned`` is False when the planner could not use the filter
    (every partition is then selected; results stay exact).
    """

    root: str
    manifest_version: int
    partitions: tuple[PlannedPartition, ...]
    total_partitions: int
    specs: tuple[SpecVersionReport, ...] = ()
    manifest_filter: str | None = None
    filter_sql: str | None = None
    pruned: bool = True
    reason: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: The exact filter, serialised as the bound predicate IR (see :mod:`.scan_filter`).
    scan_filter: ScanFilter | None = field(default=None, compare=False)
    #: Partition tables the pruning kept that column bounds proved empty (not in
    #: ``partitions``; docs/pruning.md "Column bounds").
    skipped_by_bounds: int = 0
    #: Partition tables left after bounds whose key filters ruled the filter out.
    skipped_by_key_filter: int = 0
    #: Selected tables whose partition values prove the whole filter (a search or scan
    #: of them needs no filter); not serialised.
    proven: frozenset[str] = field(default=frozenset(), compare=False)

    @property
    def object_ids(self) -> list[str]:
        return [p.object_id for p in self.partitions]

    def filter_expression(self, schema: pa.Schema) -> pc.Expression | None:
        """The scan filter as one exact pyarrow expression over ``schema`` (None: no filter).

        Raises :class:`PlanningError` naming the part that has no pyarrow form
        (``murmur3`` and ``date_trunc`` terms,
        expressions the planner does not model): scan with :meth:`to_batches`,
        which applies those exactly after the Lance scan.
        """
        if self.scan_filter is not None:
            return None if self.scan_filter.is_true else self.scan_filter.expression()
        if self.filter_sql is None:
            return None
        from lance_sql.planning.arrow_expr import to_pyarrow
        from lance_sql.planning.sql_filter import parse_filter

        return to_pyarrow(parse_filter(self.filter_sql, schema))

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
        """Batches of this plan's partitions (or the ``partitions`` subset) with the filter applied.

        What a task runs with a shipped plan: ``ns`` is the namespace at
        :attr:`manifest_version` (``PartitionedNamespace.open(plan.root,
        version=plan.manifest_version)``); the rows are exactly those
        ``SELECT columns FROM ns WHERE filter`` returns.
        """
        from lance_sql.planning.scan_filter import ScanFilter, scan_batches

        seen = getattr(ns, "manifest_version", None)
        if seen is not None and seen != self.manifest_version:
            raise PlanningError(
                f"scan plan of {self.root} was made at __manifest version "
                f"{self.manifest_version}, the namespace given is at {seen}: open it with "
                f"PartitionedNamespace.open(root, version={self.manifest_version})"
            )
        units = self.scan_units(ns, partitions) if self.partitions else []
        sf = self.scan_filter
        if sf is None and self.filter_sql is not None:
            from lance_sql.planning.sql_filter import parse_filter

            sf = ScanFilter(parse_filter(self.filter_sql, ns.schema))
        return scan_batches(units, sf, ns.schema, columns)

    def explain(self) -> str:
        lines = [f"partitions: {len(self.partitions)}/{self.total_partitions} selected"]
        if self.skipped_by_bounds:
            lines[0] += f" ({self.skipped_by_bounds} skipped by column bounds)"
        if self.skipped_by_key_filter:
            lines[0] += f" ({self.skipped_by_key_filter} skipped by key filters)"
        if not self.pruned:
            lines.append(f"  no pruning: {self.reason}")
        for s in self.specs:
            lines.append(
                f"  v{s.spec_version}: {s.selected}/{s.total} selected"
                f" ({s.fully_matching} without re-check); manifest filter: {s.manifest_filter}"
            )
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
            "specs": [s.__dict__ for s in self.specs],
            "partitions": [
                {**{k: getattr(p, k) for k in _BASE}, "values": [list(v) for v in p.values]}
                for p in self.partitions
            ],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=_json_default)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> ScanPlan:
        if obj.get("format") != FORMAT:
            raise PlanningError(f"not a scan plan: format {obj.get('format')!r} != {FORMAT!r}")
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
            specs=tuple(SpecVersionReport(**s) for s in obj["specs"]),
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
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise PlanningError(f"scan plan JSON does not parse: {e}") from e
        return cls.from_dict(obj)

    # -- Arrow -----------------------------------------------------------------------------
    def to_arrow(self) -> pa.Table:
        """One row per partition; plan-level fields in the schema metadata.

        Partition values travel as JSON text so every spec version's columns fit one table.
        """
        d = self.to_dict()
        parts = d.pop("partitions")
        table = pa.table(
            {
                "object_id": pa.array([p["object_id"] for p in parts], pa.string()),
                "location": pa.array([p["location"] for p in parts], pa.string()),
                "spec_version": pa.array([p["spec_version"] for p in parts], pa.int32()),
                "read_version": pa.array([p["read_version"] for p in parts], pa.uint64()),
                "read_branch": pa.array([p["read_branch"] for p in parts], pa.string()),
                "read_tag": pa.array([p["read_tag"] for p in parts], pa.string()),
                "values": pa.array(
                    [json.dumps(p["values"], default=_json_default) for p in parts], pa.string()
                ),
            }
        )
        return table.replace_schema_metadata({_ARROW_META: json.dumps(d).encode()})

    @classmethod
    def from_arrow(cls, table: pa.Table) -> ScanPlan:
        meta = (table.schema.metadata or {}).get(_ARROW_META)
        if meta is None:
            raise PlanningError("Arrow table has no scan plan metadata (lance_sql:scan_plan)")
        d = json.loads(meta)
        d["partitions"] = [
            {**{k: row[k] for k in _BASE}, "values": json.loads(row["values"])}
            for row in table.to_pylist()
        ]
        return cls.from_dict(d)


def _json_default(v: Any) -> Any:
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if isinstance(v, bytes):
        return v.hex()
    return str(v)


__all__ = ["PlannedPartition", "ScanPlan", "SpecVersionReport"]
