"""``plan_join``: a storage-partitioned join as groups of partitions that meet only each other.

Joining group by group gives exactly the join of all rows: every pair of
matching rows lands in one group (the group key is a function of the join-key
values) and every partition is in at most one group per side. Without a common
group key the plan says ``compatible=False`` with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import PlanningError
from lance_sql.planning.joins.compatibility import Compatibility, analyse
from lance_sql.planning.joins.grouping import (
    REF_COLUMNS,
    PartitionRef,
    component_values,
    partition_refs,
    rows_of_version,
    sort_key,
)
from lance_sql.planning.joins.keys import resolve_key
from lance_sql.planning.plan_json import decode, encode, plan_object
from lance_sql.planning.scan_filter import ScanFilter
from lance_sql.tables.namespace.layout import spec_ids_of
from lance_sql.tables.namespace.spec import PartitionSpec

# how -> (left rows preserved when unmatched, right rows preserved when unmatched)
PRESERVED: dict[str, tuple[bool, bool]] = {
    "inner": (False, False),
    "left": (True, False),
    "right": (False, True),
    "full": (True, True),
    "semi": (False, False),
    "anti": (True, False),
    "right_semi": (False, False),
    "right_anti": (False, True),
}
_ALIASES = {"left_semi": "semi", "left_anti": "anti", "outer": "full", "full_outer": "full"}
FORMAT = "lance-sql.join-plan/1"


@dataclass(frozen=True)
class JoinGroup:
    """Partitions of each side whose rows may match. ``key`` None: the group of rows with a
    NULL join key (they never match; only outer join sides keep them)."""

    key: tuple[Any, ...] | None
    left: tuple[PartitionRef, ...]
    right: tuple[PartitionRef, ...]


@dataclass(frozen=True)
class JoinPlan:
    """The result of SPJ planning; ``groups`` is empty when ``compatible`` is False."""

    compatible: bool
    reason: str | None
    groups: tuple[JoinGroup, ...]
    regrouping: str
    how: str
    on: tuple[tuple[str, str], ...]
    key_names: tuple[str, ...] = field(default=())
    #: The side filters of :func:`plan_join`, exact (the scans of each side apply them:
    #: :func:`lance_sql.planning.scan_filter.scan_batches`); None when not given.
    left_filter: Any = field(default=None, compare=False)
    right_filter: Any = field(default=None, compare=False)

    # -- JSON ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "compatible": self.compatible,
            "reason": self.reason,
            "regrouping": self.regrouping,
            "how": self.how,
            "on": [list(p) for p in self.on],
            "key_names": list(self.key_names),
            "left_filter": None if self.left_filter is None else self.left_filter.to_dict(),
            "right_filter": None if self.right_filter is None else self.right_filter.to_dict(),
            "groups": [
                {
                    "key": None if g.key is None else encode(g.key),
                    "left": [_ref_to_dict(r) for r in g.left],
                    "right": [_ref_to_dict(r) for r in g.right],
                }
                for g in self.groups
            ],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"))

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any] | str | bytes) -> JoinPlan:
        """The plan of :meth:`to_dict`'s object (or of :meth:`to_json`'s text)."""
        obj = plan_object(obj, FORMAT, "join plan")
        groups = tuple(
            JoinGroup(
                None if g["key"] is None else tuple(decode(g["key"])),
                tuple(_ref_from_dict(r) for r in g["left"]),
                tuple(_ref_from_dict(r) for r in g["right"]),
            )
            for g in obj["groups"]
        )
        lf, rf = obj.get("left_filter"), obj.get("right_filter")
        return cls(
            bool(obj["compatible"]),
            obj["reason"],
            groups,
            obj["regrouping"],
            obj["how"],
            tuple((a, b) for a, b in obj["on"]),
            tuple(obj.get("key_names", ())),
            left_filter=None if lf is None else ScanFilter.from_dict(lf),
            right_filter=None if rf is None else ScanFilter.from_dict(rf),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> JoinPlan:
        return cls.from_dict(text)

    # -- reading ---------------------------------------------------------------------------
    def explain(self) -> str:
        """A few lines for EXPLAIN: applied or not, why, and how partitions were grouped."""
        if not self.compatible:
            return f"StoragePartitionedJoin: not applied ({self.reason})"
        nl = sum(len(g.left) for g in self.groups)
        nr = sum(len(g.right) for g in self.groups)
        return (
            f"StoragePartitionedJoin: {self.how} join on "
            f"{', '.join(f'{a} = {b}' for a, b in self.on)}; {len(self.groups)} groups "
            f"({nl} left / {nr} right partitions); {self.regrouping}"
        )


def _ref_to_dict(r: PartitionRef) -> dict[str, Any]:
    out = {k: getattr(r, k) for k in REF_COLUMNS}
    return {**out, "values": [[f, encode(v)] for f, v in r.values]}


def _ref_from_dict(d: Mapping[str, Any]) -> PartitionRef:
    values = tuple((f, decode(v)) for f, v in d["values"])
    return PartitionRef(*(d[k] for k in REF_COLUMNS), values)


# -- planning -------------------------------------------------------------------------------


def normalize_how(how: str) -> str:
    h = _ALIASES.get(how, how) if isinstance(how, str) else how
    if h not in PRESERVED:
        raise PlanningError(f"join type {how!r} is not one of {', '.join(PRESERVED)}")
    return h


def _normalize_on(on: Any) -> tuple[tuple[str, str], ...]:
    if isinstance(on, tuple) and len(on) == 2 and all(isinstance(x, str) for x in on):
        on = [on]
    pairs = []
    for item in on or ():
        if isinstance(item, str):
            item = (item, item)
        ok = isinstance(item, Sequence) and len(item) == 2
        if not (ok and all(isinstance(x, str) for x in item)):
            raise PlanningError(f"join key {item!r} is not a (left_column, right_column) pair")
        pairs.append((item[0], item[1]))
    if not pairs:
        raise PlanningError("a storage-partitioned join needs at least one equi-join key pair")
    return tuple(pairs)


def _with_versions(partitions: pa.Table, specs: Mapping[int, PartitionSpec], side: str) -> pa.Table:
    if "object_id" not in partitions.column_names:
        raise PlanningError(f"{side} partitions table lacks the 'object_id' column")
    if "spec_version" not in partitions.column_names:
        ids = spec_ids_of(partitions.column("object_id"))  # -1: under no spec version
        versions = pa.array(ids, pa.int32(), mask=ids < 0)
        partitions = partitions.append_column("spec_version", versions)
    col = partitions.column("spec_version")
    for i, (oid, v) in enumerate(
        zip(partitions.column("object_id").to_pylist(), col.to_pylist(), strict=True)
    ):
        if v is None:
            raise PlanningError(f"{side} partition {oid!r} (row {i}) has no spec version")
        if v not in specs:
            raise PlanningError(
                f"{side} partition {oid!r} uses spec version {v}, which the {side} "
                f"namespace does not define (versions: {sorted(specs)})"
            )
    return partitions


def plan_join_partitions(
    left_specs: Mapping[int, PartitionSpec],
    left_schema: pa.Schema,
    left_partitions: pa.Table,
    right_specs: Mapping[int, PartitionSpec],
    right_schema: pa.Schema,
    right_partitions: pa.Table,
    on: Sequence[tuple[str, str]],
    how: str = "inner",
) -> JoinPlan:
    """Plan a join from plain data (specs, schema, partitions table per side); no I/O.

    Only spec versions that have partitions in the (possibly pre-pruned)
    partitions tables constrain the group key.
    """
    h = normalize_how(how)
    pairs = _normalize_on(on)
    lkeys = [resolve_key(left_schema, a, "left") for a, _ in pairs]
    rkeys = [resolve_key(right_schema, b, "right") for _, b in pairs]
    lparts = _with_versions(left_partitions, left_specs, "left")
    rparts = _with_versions(right_partitions, right_specs, "right")
    lversions = sorted(set(lparts.column("spec_version").to_pylist()))
    rversions = sorted(set(rparts.column("spec_version").to_pylist()))
    compat = analyse(left_specs, right_specs, lkeys, rkeys, lversions, rversions)
    if not compat.compatible:
        return JoinPlan(False, compat.reason, (), "", h, pairs)
    groups = _group(compat, {"left": (lparts, left_specs), "right": (rparts, right_specs)}, h)
    names = tuple(
        f"{c.label()}({', '.join(pairs[p][0] for p in c.pairs)})" for c in compat.components
    )
    return JoinPlan(True, None, groups, compat.regrouping, h, pairs, names)


def _group(
    compat: Compatibility,
    sides: Mapping[str, tuple[pa.Table, Mapping[int, PartitionSpec]]],
    how: str,
) -> tuple[JoinGroup, ...]:
    by_key: dict[tuple[Any, ...], dict[str, list[PartitionRef]]] = {}
    nulls: dict[str, list[PartitionRef]] = {"left": [], "right": []}
    for (side, version), offers in compat.derivations.items():
        parts, specs = sides[side]
        rows = rows_of_version(parts, version)
        refs = partition_refs(rows, [f.field_id for f in specs[version].fields])
        columns = [
            component_values(c, o, rows, side)
            for c, o in zip(compat.components, offers, strict=True)
        ]
        for i, ref in enumerate(refs):
            key = tuple(col[i] for col in columns)
            if any(
                v is None and c.null_implying for v, c in zip(key, compat.components, strict=True)
            ):
                nulls[side].append(ref)
                continue
            by_key.setdefault(key, {"left": [], "right": []})[side].append(ref)
    keep_left, keep_right = PRESERVED[how]
    groups = []
    for key in sorted(by_key, key=sort_key):
        g = by_key[key]
        left, right = g["left"], g["right"]
        if (left and right) or (left and keep_left) or (right and keep_right):
            groups.append(JoinGroup(key, _sorted(left), _sorted(right)))
    if keep_left and nulls["left"]:
        groups.append(JoinGroup(None, _sorted(nulls["left"]), ()))
    if keep_right and nulls["right"]:
        groups.append(JoinGroup(None, (), _sorted(nulls["right"])))
    return tuple(groups)


def _sorted(refs: list[PartitionRef]) -> tuple[PartitionRef, ...]:
    return tuple(sorted(refs, key=lambda r: r.object_id))


def plan_join(
    left: Any,
    right: Any,
    on: Sequence[tuple[str, str]],
    how: str = "inner",
    *,
    left_filter: Any = None,
    right_filter: Any = None,
) -> JoinPlan:
    """Plan a join of two partitioned namespaces (``.specs``, ``.schema``, ``.partitions()``).

    ``left_filter`` / ``right_filter`` (SQL text, pyarrow expression or predicate):
    conditions on that side's rows before the join; they only prune partitions,
    the scans must still apply them to rows.
    """
    lparts = _pruned(left, left_filter)
    rparts = _pruned(right, right_filter)
    plan = plan_join_partitions(
        left.specs, left.schema, lparts, right.specs, right.schema, rparts, on, how
    )
    return replace(
        plan,
        left_filter=ScanFilter.parse(left_filter, left.schema),
        right_filter=ScanFilter.parse(right_filter, right.schema),
    )


def _pruned(ns: Any, filter: Any) -> pa.Table:
    """``ns``'s partition rows the scan planner selects for ``filter`` (the same as a scan)."""
    parts = ns.partitions()
    if filter is None:
        return parts
    from lance_sql.planning.namespace_scan import plan_scan

    plan = plan_scan(ns, filter)
    if plan.selects_all:
        return parts
    return parts.filter(pc.is_in(parts.column("object_id"), pa.array(plan.object_ids, pa.string())))
