"""Which partition fields of two namespaces agree on the join keys, and the common group key.

The group key is a tuple of *components*, each a function of the join-key values
alone (so two rows the join matches agree on it) that every spec version present
on both sides can compute from its partition values (the table is in
docs/joins.md). No component: the join is not storage-partitioned, and the plan
says why (side, spec version, field, transform).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lance_sql.planning.joins.keys import (
    KeyColumn,
    hash_family,
    truncate_family,
    value_family,
)
from lance_sql.spec.partition_field import PartitionField
from lance_sql.spec.transforms.join_groups import (
    BUCKET,
    EXPRESSION,
    FROM_IDENTITY,
    IDENTITY,
    TIME_GROUPINGS,
    TRUNCATE,
    Grouping,
    grouping_of,
)
from lance_sql.tables.namespace.spec import PartitionSpec

SIDES = ("left", "right")


@dataclass(frozen=True)
class Component:
    """One element of the group key; ``pairs`` index into the join's ``on`` list."""

    grouping: Grouping
    pairs: tuple[int, ...]
    param: int | None = None  # G for bucket, W for truncate
    expression: str | None = None

    @property
    def null_implying(self) -> bool:
        """A NULL value proves every row's join key is NULL (false for free expressions)."""
        return self.grouping.null_implying

    def label(self) -> str:
        return self.grouping.label(self.param, self.expression)


@dataclass(frozen=True)
class Offer:
    """How one spec version can compute a component: from ``fields`` (one, or identities)."""

    fields: tuple[PartitionField, ...]
    param: int | None  # the field's N or W; None for identity-derived and parameterless
    from_identity: bool

    def describe(self) -> str:
        return "identity" if self.from_identity else self.fields[0].label()


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


def offers_of(
    spec: PartitionSpec, keys: Sequence[KeyColumn], eligible: Mapping[tuple, bool]
) -> dict[tuple, list[Offer]]:
    """Every component class this spec version can compute, with the fields to use."""
    pair_of = {key.field_id: i for i, key in reversed(list(enumerate(keys)))}  # first pair
    out: dict[tuple, list[Offer]] = {}

    def add(cls: tuple, offer: Offer) -> None:
        if eligible.get(cls[:2], False):
            out.setdefault(cls, []).append(offer)

    identity: dict[int, PartitionField] = {}
    for f in spec.fields:
        if not all(s in pair_of for s in f.source_ids):
            continue
        pairs = tuple(pair_of[s] for s in f.source_ids)
        g = grouping_of(f.transform)
        if g is IDENTITY:
            identity.setdefault(pairs[0], f)
        param = g.param_of(f.transform) if f.transform is not None else None
        add(g.class_key(pairs, f), Offer((f,), param, False))
    # values computable from identity partition values
    for k, f in identity.items():
        for g in FROM_IDENTITY:
            add((g, (k,)), Offer((f,), None, True))
    for cls in list(eligible):
        g, pairs = cls
        if g in FROM_IDENTITY and len(pairs) > 1 and all(p in identity for p in pairs):
            add(cls, Offer(tuple(identity[p] for p in pairs), None, True))
    return out


def eligible_classes(
    left: Sequence[KeyColumn], right: Sequence[KeyColumn], bucket_tuples: set[tuple[int, ...]]
) -> dict[tuple, bool]:
    """Component classes whose key types agree on both sides (else equal keys could differ)."""
    out: dict[tuple, bool] = {}
    for k, (lk, rk) in enumerate(zip(left, right, strict=True)):
        vf, hf, tf = value_family(lk.type), hash_family(lk.type), truncate_family(lk.type)
        out[(IDENTITY, (k,))] = vf is not None and vf == value_family(rk.type)
        out[(EXPRESSION, (k,))] = out[(IDENTITY, (k,))]
        out[(BUCKET, (k,))] = hf is not None and hf == hash_family(rk.type)
        out[(TRUNCATE, (k,))] = tf is not None and tf == truncate_family(rk.type)
        same_time = lk.type == rk.type and value_family(lk.type) is not None
        for part in TIME_GROUPINGS.values():
            out[(part, (k,))] = same_time and value_family(lk.type)[0] in ("date", "timestamp")
    for pairs in bucket_tuples:
        if len(pairs) > 1:
            out[(BUCKET, pairs)] = all(out[(BUCKET, (p,))] for p in pairs)
            out[(EXPRESSION, pairs)] = all(out[(IDENTITY, (p,))] for p in pairs)
    return out


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
        g, pairs = cls[0], cls[1]
        missing = [sv for sv, o in offers.items() if cls not in o]
        if missing:
            issues.append(_missing_issue(cls, missing, left_keys, right_keys))
            continue
        per_version = [offers[sv][cls] for sv in offers]
        if g.implied_by_identity and all(p in identity_pairs for p in pairs):
            continue
        family = truncate_family(left_keys[pairs[0]].type)
        found = g.choose(per_version, family is not None and family[0] in ("string", "binary"))
        if found is None:
            continue
        if isinstance(found, str):
            issues.append(found.format(on=_pairs_text(pairs, left_keys, right_keys)))
            continue
        param, chosen = found
        comp = Component(g, pairs, param, cls[2] if len(cls) > 2 else None)
        if g is IDENTITY:
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
    return (cls[1], cls[0].order, str(cls[2:]))


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
    what = cls[0].name if len(cls) == 2 else f"expression {cls[2]!r}"
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
        if not eligible.get((IDENTITY, (k,))) and not eligible.get((BUCKET, (k,))):
            parts.append(f"join key types differ: {lk.name} is {lk.type}, {rk.name} is {rk.type}")
    parts.extend(issues)
    return "no common partition grouping on the join keys: " + "; ".join(dict.fromkeys(parts))


def _field_text(f: PartitionField) -> str:
    return f"{f.field_id} ({f.label()})"


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
