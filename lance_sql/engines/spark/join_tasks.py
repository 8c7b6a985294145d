"""Join groups -> Spark tasks of ``partitioned_join``, packed by bytes as Spark packs files.

Every Spark task running Python pays a Python-worker round trip and the
deserialisation of its closure, so one task per join group (the first
design) spent most of a small join's time on tasks, not on data: 8 groups of
a 1M-row join ran as 8 tasks on 2 cores. Groups are now packed into tasks the
way :mod:`.read_packing` packs partition tables into input partitions (Spark's
``maxSplitBytes`` rule with the session's ``spark.sql.files.*`` settings and
its default parallelism), weighing each group by the bytes of both sides'
units. A task joins its groups one after another; the join of each group is
independent, so the result is the same for any packing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lance_sql.engines.spark.read_packing import Packing, first_fit, unit_bytes
from lance_sql.tables.scan import balanced_groups


def group_bytes(left: Sequence[Any], right: Sequence[Any]) -> int:
    """Bytes a group's tasks read (both sides' units, from metadata)."""
    return sum(unit_bytes(u) for u in left) + sum(unit_bytes(u) for u in right)


def spread(weights: Sequence[int], tasks: int) -> list[list[int]]:
    """Indexes of ``weights`` in ``min(tasks, len(weights))`` bins, heaviest into the lightest
    (:func:`~lance_sql.tables.scan.balanced_groups`), bins ordered by their first index."""
    return sorted(balanced_groups(list(enumerate(weights)), tasks), key=min)


def pack_groups(
    weights: Sequence[int], packing: Packing, tasks: int | None = None
) -> list[list[int]]:
    """Group indexes per Spark task: ``tasks`` bins when given, else Spark's file-split rule.

    Always at least one bin (an empty join still runs one task that returns nothing).
    """
    if not weights:
        return [[]]
    if tasks is not None:
        return spread(weights, tasks)
    return first_fit(weights, packing.max_split(weights), packing.open_cost)


__all__ = ["group_bytes", "pack_groups", "spread"]
