"""Join coarsening: the group-key components transforms give a storage-partitioned join.

A component is a function of the join-key values alone that every spec version of both
sides computes from its partition values. Each class says which fields offer it, how
offers with different parameters meet (bucket: gcd; truncate: lcm or shortest prefix)
and the group value of a partition.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import pyarrow as pa

from lance_sql.spec.partition_field import PartitionField, Transform
from lance_sql.spec.time_ranges import TIME_CHAIN

_INT64_MAX = 2**63 - 1
Canon = Callable[[pa.Array], list[Any]]


class Offer(Protocol):
    param: int | None  # the field's N or W; None for identity-derived and parameterless
    from_identity: bool


#: (the component's parameter, the offer each version uses), or an issue with ``{on}``
#: for the key pairs, or None when the component is not needed.
Choice = tuple[int | None, list[Offer]] | str | None


class Grouping:
    """One kind of group-key component (identity, bucket, truncate, a time part, expression)."""

    name = ""
    order = 0  # the order components are tried in
    null_implying = True  # a NULL value proves the row's join key is NULL
    implied_by_identity = True  # an identity component on the same keys is finer

    def class_key(self, pairs: tuple[int, ...], field: PartitionField | None) -> tuple:
        return (self, pairs)

    def param_of(self, transform: Transform) -> int | None:
        return None

    def label(self, param: int | None, expression: str | None) -> str:
        return self.name

    def choose(self, per_version: list[list[Offer]], string_like: bool) -> Choice:
        return None, [offers[0] for offers in per_version]

    def values(self, param: Any, columns: list[pa.Array], derived: bool, canon: Canon) -> list:
        """The group value of each partition from its field's values (``derived``: the
        values of identity fields, to which the component is applied)."""
        return canon(columns[0])

    def __repr__(self) -> str:
        return self.name


class IdentityGrouping(Grouping):
    name, order, implied_by_identity = "identity", 0, False


class ExpressionGrouping(Grouping):
    name, order, implied_by_identity = "expression", 9, False
    null_implying = False  # a free expression may be non-NULL for NULL keys

    def class_key(self, pairs: tuple[int, ...], field: PartitionField | None) -> tuple:
        text = " ".join(((field.expression if field else None) or "").split())
        return (self, pairs, text, field.result_type if field else None)

    def label(self, param: int | None, expression: str | None) -> str:
        return f"expression {expression!r}"


class BucketGrouping(Grouping):
    """``abs(murmur3(keys)) % G``: from bucket[N] when G divides N, or by hashing identities."""

    name, order = "bucket", 1

    def param_of(self, transform: Transform) -> int | None:
        return transform.num_buckets

    def label(self, param: int | None, expression: str | None) -> str:
        return f"bucket % {param}"

    def choose(self, per_version: list[list[Offer]], string_like: bool) -> Choice:
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
            counts = sorted({o.param for ov in per_version for o in ov if o.param})
            return f"bucket counts {counts} on {{on}} have gcd 1 (no common bucketing)"
        chosen = [
            next(
                (o for o in offers if o.param is not None and o.param % best == 0),
                next((o for o in offers if o.param is None), None),
            )
            for offers in per_version
        ]
        return best, chosen  # type: ignore[return-value]

    def values(self, param: Any, columns: list[pa.Array], derived: bool, canon: Canon) -> list:
        import udfs

        if derived:  # multi_bucket of one column is its bucket
            return udfs.multi_bucket(columns, param).to_pylist()
        return [None if v is None else v % param for v in columns[0].cast(pa.int64()).to_pylist()]


class TruncateGrouping(Grouping):
    """truncate[W] of a key: from truncate[W'] when W' divides W (numbers) or W' >= W
    (strings), or from identity values."""

    name, order = "truncate", 2

    def param_of(self, transform: Transform) -> int | None:
        return transform.width

    def label(self, param: int | None, expression: str | None) -> str:
        return f"truncate[{param}]"

    def choose(self, per_version: list[list[Offer]], string_like: bool) -> Choice:
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
            w = math.lcm(*fixed)
            if w > _INT64_MAX:
                return "truncate widths on {on} have a least common multiple beyond int64"
        chosen = [
            next(
                o
                for o in offers
                if o.from_identity
                or (o.param is not None and (o.param >= w if string_like else w % o.param == 0))
            )
            for offers in per_version
        ]
        return w, chosen

    def values(self, param: Any, columns: list[pa.Array], derived: bool, canon: Canon) -> list:
        import udfs

        col = columns[0]
        if pa.types.is_integer(col.type) and not pa.types.is_uint64(col.type):
            col = col.cast(pa.int64())  # one width for both sides; uint64 stays as it is
        return canon(udfs.truncate(col, param))


class TimeGrouping(Grouping):
    """year / month / day / hour of a key: the same field everywhere, or from identities."""

    def __init__(self, unit: str) -> None:
        self.name, self.order = unit, 3 + TIME_CHAIN.index(unit)

    def values(self, param: Any, columns: list[pa.Array], derived: bool, canon: Canon) -> list:
        if derived:
            import udfs

            return udfs.apply_transform({"type": self.name}, [columns[0]]).to_pylist()
        return columns[0].cast(pa.int64()).to_pylist()


IDENTITY, EXPRESSION = IdentityGrouping(), ExpressionGrouping()
BUCKET, TRUNCATE = BucketGrouping(), TruncateGrouping()
TIME_GROUPINGS = {unit: TimeGrouping(unit) for unit in TIME_CHAIN}
#: The components identity partition values compute, one key each.
FROM_IDENTITY: Sequence[Grouping] = (BUCKET, TRUNCATE, *TIME_GROUPINGS.values())
_OF_TYPE = {"identity": IDENTITY, "bucket": BUCKET, "multi_bucket": BUCKET, "truncate": TRUNCATE}


def grouping_of(transform: Transform | None) -> Grouping:
    """The component a field of ``transform`` (None: an expression field) offers."""
    if transform is None:
        return EXPRESSION
    return _OF_TYPE.get(transform.type) or TIME_GROUPINGS[transform.type]
