"""Which partition fields of two namespaces agree on the join keys, and the common group key.

The group key of a join is a tuple of *components*. Each component is a
function of the join-key values alone (so two rows the join matches always
agree on it) that every spec version of both sides can compute from its
partition values:

- ``identity`` of key k (identity fields on both sides);
- ``bucket`` over keys P with G buckets: ``abs(murmur3(...)) % G``, computable
  from bucket[N] / multi_bucket[N] when G divides N (``b % G``), or from
  identity values by hashing them; G is the largest count dividing one field
  of every version (the gcd rule: 4 and 6 give 2);
- ``truncate`` of key k to width W: from truncate[W'] when W' divides W
  (numbers) or W' >= W (strings), or from identity values;
- ``year`` / ``month`` / ``day`` / ``hour`` of key k: the same field on every
  version (or computed from identity values when both key types are identical);
  using only the parts every version has is what groups (year, month, day)
  partitions with (year, month) ones;
- ``expression``: the same expression text over the same key positions.

A component is used only when *every* spec version present on *both* sides can
compute it. No component at all means the join is not storage-partitioned:
the plan says why (side, spec version, field, transform).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lance_sql.planning.joins.keys import (
    KeyColumn,
    hash_family,
    truncate_family,
    value_family,
)
from lance_sql.spec.partition_field import PartitionField
from lance_sql.tables.namespace.spec import PartitionSpec

TIME_PARTS = ("year", "month", "day", "hour")
_INT64_MAX = 2**63 - 1
SIDES = ("left", "right")


@dataclass(frozen=True)
class Component:
    """One element of the group key; ``pairs`` index into the join's ``on`` list."""

    kind: str  # identity | bucket | truncate | year | month | day | hour | expression
    pairs: tuple[int, ...]
    param: int | None = None  # G for bucket, W for truncate
    expression: str | None = None

    @property
    def null_implying(self) -> bool:
        """A NULL value proves every row's join key is NULL (false for free expressions)."""
        return self.kind != "expression"

    def label(self) -> str:
        if self.kind == "bucket":
            return f"bucket % {self.param}"
        if self.kind == "truncate":
            return f"truncate[{self.param}]"
        if self.kind == "expression":
            return f"expression {self.expression!r}"
        return self.kind


@dataclass(frozen=True)
class Offer:
    """How one spec version can compute a component: from ``fields`` (one, or identities)."""

    fields: tuple[PartitionField, ...]
    param: int | None  # the field's N or W; None for identity-derived and parameterless
    from_identity: bool

    def describe(self) -> str:
        if self.from_identity:
            return "identity"
        t = self.fields[0].transform
        if t is None:
            return f"expression {self.fields[0].expression!r}"
        if t.num_buckets is not None:
            return f"{t.type}[{t.num_buckets}]"
        if t.width is not None:
            return f"truncate[{t.width}]"
        return t.type


@dataclass(frozen=True)
class Compatibility:
    """The analysis result: components and, per (side, spec version), the offer used."""

    components: tuple[Component, ...]
    derivations: Mapping[tuple[str, int], tuple[Offer, ...]]
    reason: str | None
    regrouping: str

    @property
    def compatible(self) -> bool:
        return self.reason is None


# -- offers: what one spec version can compute ------------------------------------------


def _class_key(kind: str, pairs: tuple[int, ...], field: PartitionField | None = None) -> tuple:
    if kind == "expression" and field is not None:
        return ("expression", pairs, " ".join((field.expression or "").split()), field.result_type)
    return (kind, pairs)


def offers_of(
    spec: PartitionSpec, keys: Sequence[KeyColumn], eligible: Mapping[tuple, bool]
) -> dict[tuple, list[Offer]]:
    """Every component class this spec version can compute, with the fields to use."""
    pair_of: dict[int, int] = {}
    for i, key in enumerate(keys):
        pair_of.setdefault(key.field_id, i)
    out: dict[tuple, list[Offer]] = {}

    def add(cls: tuple, offer: Offer) -> None:
        if eligible.get(cls[:2], False):
            out.setdefault(cls, []).append(offer)

    identity: dict[int, PartitionField] = {}
    for f in spec.fields:
        if not all(s in pair_of for s in f.source_ids):
            continue
        pairs = tuple(pair_of[s] for s in f.source_ids)
        t = f.transform
        if t is None:
            add(_class_key("expression", pairs, f), Offer((f,), None, False))
            continue
        if t.type == "identity":
            identity.setdefault(pairs[0], f)
            add(("identity", pairs), Offer((f,), None, False))
        elif t.type in ("bucket", "multi_bucket"):
            add(("bucket", pairs), Offer((f,), t.num_buckets, False))
        elif t.type == "truncate":
            add(("truncate", pairs), Offer((f,), t.width, False))
        elif t.type in TIME_PARTS:
            add((t.type, pairs), Offer((f,), None, False))
    # values computable from identity partition values
    for k, f in identity.items():
        for kind in ("bucket", "truncate", *TIME_PARTS):
            add((kind, (k,)), Offer((f,), None, True))
    for cls in list(eligible):
        kind, pairs = cls
        if kind == "bucket" and len(pairs) > 1 and all(p in identity for p in pairs):
            add(cls, Offer(tuple(identity[p] for p in pairs), None, True))
    return out


def eligible_classes(
    left: Sequence[KeyColumn], right: Sequence[KeyColumn], bucket_tuples: set[tuple[int, ...]]
) -> dict[tuple, bool]:
    """Component classes whose key types agree on both sides (else equal keys could differ)."""
    out: dict[tuple, bool] = {}
    for k, (lk, rk) in enumerate(zip(left, right, strict=True)):
        vf, hf, tf = value_family(lk.type), hash_family(lk.type), truncate_family(lk.type)
        out[("identity", (k,))] = vf is not None and vf == value_family(rk.type)
        out[("expression", (k,))] = out[("identity", (k,))]
        out[("bucket", (k,))] = hf is not None and hf == hash_family(rk.type)
        out[("truncate", (k,))] = tf is not None and tf == truncate_family(rk.type)
        same_time = lk.type == rk.type and value_family(lk.type) is not None
        for part in TIME_PARTS:
            out[(part, (k,))] = same_time and value_family(lk.type)[0] in ("date", "timestamp")
    for pairs in bucket_tuples:
        if len(pairs) > 1:
            out[("bucket", pairs)] = all(out[("bucket", (p,))] for p in pairs)
            out[("expression", pairs)] = all(out[("identity", (p,))] for p in pairs)
    return out


# -- choosing components ------------------------------------------------------------------


def _choose_bucket(per_version: list[list[Offer]]) -> tuple[int, list[Offer]] | None:
    constrained = [offers for offers in per_version if all(o.param for o in offers)]
    if not constrained:
        return None  # identity everywhere: the identity component is finer
    best = 1
    for start in constrained[0]:
        g = start.param or 1
        for offers in per_version:
            if any(o.param is None for o in offers):
                continue
            g = max(math.gcd(g, o.param or 1) for o in offers)
        best = max(best, g)
    if best <= 1:
        return (1, [])
    chosen = [
        next(
            (o for o in offers if o.param is not None and o.param % best == 0),
            next((o for o in offers if o.param is None), None),
        )
        for offers in per_version
    ]
    return best, chosen  # type: ignore[return-value]


def _choose_truncate(per_version: list[list[Offer]], string_like: bool) -> tuple | None:
    widths = [[o.param for o in offers if o.param is not None] for offers in per_version]
    picks: list[int | None] = []
    for offers, ws in zip(per_version, widths, strict=True):
        identity = any(o.from_identity for o in offers)
        picks.append(None if identity and not ws else (max(ws) if string_like else min(ws)))
    fixed = [w for w in picks if w is not None]
    if not fixed:
        return None
    if string_like:
        w = min(fixed)
    else:
        w = 1
        for x in fixed:
            w = w * x // math.gcd(w, x)
        if w > _INT64_MAX:
            return (0, [])
    chosen = []
    for offers in per_version:
        ok = [
            o
            for o in offers
            if o.from_identity
            or (o.param is not None and (o.param >= w if string_like else w % o.param == 0))
        ]
        chosen.append(ok[0])
    return w, chosen


def analyse(
    left_specs: Mapping[int, PartitionSpec],
    right_specs: Mapping[int, PartitionSpec],
    left_keys: Sequence[KeyColumn],
    right_keys: Sequence[KeyColumn],
    left_versions: Sequence[int],
    right_versions: Sequence[int],
) -> Compatibility:
    """Find the common group key of a join over every spec version present on each side."""
    versions = [("left", v, left_specs[v]) for v in sorted(left_versions)]
    versions += [("right", v, right_specs[v]) for v in sorted(right_versions)]
    keys = {"left": left_keys, "right": right_keys}
    tuples: set[tuple[int, ...]] = set()
    for side, _, spec in versions:
        pair_of = {k.field_id: i for i, k in reversed(list(enumerate(keys[side])))}
        for f in spec.fields:
            if len(f.source_ids) > 1 and all(s in pair_of for s in f.source_ids):
                tuples.add(tuple(pair_of[s] for s in f.source_ids))
    eligible = eligible_classes(left_keys, right_keys, tuples)
    offers = {(side, v): offers_of(spec, keys[side], eligible) for side, v, spec in versions}
    if not versions:
        return Compatibility((), {}, None, "both sides have no partitions")

    classes = sorted({c for o in offers.values() for c in o}, key=_class_order)
    components: list[Component] = []
    derivs: dict[tuple[str, int], list[Offer]] = {sv: [] for sv in offers}
    issues: list[str] = []
    identity_pairs: set[int] = set()
    for cls in classes:
        kind, pairs = cls[0], cls[1]
        missing = [sv for sv, o in offers.items() if cls not in o]
        if missing:
            issues.append(_missing_issue(cls, missing, left_keys, right_keys))
            continue
        per_version = [offers[sv][cls] for sv in offers]
        if kind in ("bucket", "truncate") and all(p in identity_pairs for p in pairs):
            continue
        if kind in TIME_PARTS and pairs[0] in identity_pairs:
            continue
        if kind == "bucket":
            found = _choose_bucket(per_version)
            if found is None:
                continue
            g, chosen = found
            if g <= 1:
                counts = sorted({o.param for ov in per_version for o in ov if o.param})
                issues.append(
                    f"bucket counts {counts} on {_pairs_text(pairs, left_keys, right_keys)} "
                    "have gcd 1 (no common bucketing)"
                )
                continue
            comp = Component("bucket", pairs, g)
        elif kind == "truncate":
            string_like = truncate_family(left_keys[pairs[0]].type)[0] in ("string", "binary")
            found = _choose_truncate(per_version, string_like)
            if found is None:
                continue
            w, chosen = found
            if not chosen:
                issues.append(
                    f"truncate widths on {_pairs_text(pairs, left_keys, right_keys)} "
                    "have a least common multiple beyond int64"
                )
                continue
            comp = Component("truncate", pairs, w)
        else:
            chosen = [ov[0] for ov in per_version]
            expr = cls[2] if kind == "expression" else None
            comp = Component(kind, pairs, None, expr)
            if kind == "identity":
                identity_pairs.add(pairs[0])
        components.append(comp)
        for sv, offer in zip(offers, chosen, strict=True):
            derivs[sv].append(offer)

    if not components:
        return Compatibility(
            (), {}, _reason(versions, offers, issues, left_keys, right_keys, eligible), ""
        )
    frozen = {sv: tuple(o) for sv, o in derivs.items()}
    return Compatibility(tuple(components), frozen, None, _regrouping(components, frozen))


def _class_order(cls: tuple) -> tuple:
    order = ["identity", "bucket", "truncate", *TIME_PARTS, "expression"]
    return (cls[1], order.index(cls[0]), str(cls[2:]))


def _pairs_text(
    pairs: tuple[int, ...], left: Sequence[KeyColumn], right: Sequence[KeyColumn]
) -> str:
    lcols = ", ".join(left[p].name for p in pairs)
    rcols = ", ".join(right[p].name for p in pairs)
    return f"({lcols}) = ({rcols})" if len(pairs) > 1 else f"{lcols} = {rcols}"


def _missing_issue(
    cls: tuple,
    missing: list[tuple[str, int]],
    left: Sequence[KeyColumn],
    right: Sequence[KeyColumn],
) -> str:
    where = ", ".join(f"{side} spec v{v}" for side, v in missing)
    what = cls[0] if cls[0] != "expression" else f"expression {cls[2]!r}"
    return f"{what} on {_pairs_text(cls[1], left, right)} is missing from {where}"


def _reason(
    versions: list[tuple[str, int, PartitionSpec]],
    offers: Mapping[tuple[str, int], Mapping[tuple, list[Offer]]],
    issues: list[str],
    left: Sequence[KeyColumn],
    right: Sequence[KeyColumn],
    eligible: Mapping[tuple, bool],
) -> str:
    keys = {"left": left, "right": right}
    parts: list[str] = []
    for side, v, spec in versions:
        ids = {k.field_id for k in keys[side]}
        on_keys = [f for f in spec.fields if set(f.source_ids) <= ids]
        if not on_keys:
            fields = ", ".join(_field_text(f) for f in spec.fields) or "none"
            cols = ", ".join(k.name for k in keys[side])
            parts.append(
                f"{side} spec v{v} has no partition field on the join keys ({cols}); "
                f"its fields: {fields}"
            )
        elif not offers[(side, v)]:
            fields = ", ".join(_field_text(f) for f in on_keys)
            parts.append(f"{side} spec v{v} fields {fields} are not usable with the other side")
    for k, (lk, rk) in enumerate(zip(left, right, strict=True)):
        if not eligible.get(("identity", (k,))) and not eligible.get(("bucket", (k,))):
            parts.append(f"join key types differ: {lk.name} is {lk.type}, {rk.name} is {rk.type}")
    parts.extend(issues)
    return "no common partition grouping on the join keys: " + "; ".join(dict.fromkeys(parts))


def _field_text(f: PartitionField) -> str:
    if f.transform is None:
        return f"{f.field_id} (expression {f.expression!r})"
    t = f.transform
    param = t.num_buckets or t.width
    return f"{f.field_id} ({t.type}{f'[{param}]' if param else ''})"


def _regrouping(
    components: list[Component], derivs: Mapping[tuple[str, int], tuple[Offer, ...]]
) -> str:
    out = []
    for i, comp in enumerate(components):
        sides = []
        for side in SIDES:
            descs = sorted({o[i].describe() for (s, _), o in derivs.items() if s == side})
            sides.append("/".join(descs) if descs else "(no partitions)")
        out.append(f"{sides[0]} x {sides[1]} grouped by {comp.label()}")
    return "; ".join(out)


__all__ = ["TIME_PARTS", "Compatibility", "Component", "Offer", "analyse"]
