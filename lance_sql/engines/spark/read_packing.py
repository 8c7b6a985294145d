"""Scan units -> Spark input partitions, packed by bytes as Spark packs files.

Every task of a Python data source costs a worker round trip, so small tables share
tasks. Sizes come from fragment metadata; the split size is Spark's
``FilePartition.maxSplitBytes`` rule over the session's ``spark.sql.files.*`` settings,
then first-fit decreasing. :func:`pack_groups` packs join groups the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from lance_sql.tables.scan import balanced_groups

#: Bytes per row assumed for a unit whose data files do not record their size.
FALLBACK_ROW_BYTES = 64

_UNITS = {"": 1, "b": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
_BYTES = re.compile(r"^\s*(\d+)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)


def parse_bytes(text: str) -> int:
    """Spark's byte strings: ``134217728``, ``128m``, ``128MB``, ``4MiB``, ``1g``, ``10b``."""
    m = _BYTES.match(str(text))
    if not m:
        raise ValueError(f"not a byte size: {text!r}")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


@dataclass(frozen=True)
class Packing:
    """How scan units are packed into Spark input partitions (Spark's file-split settings)."""

    max_partition_bytes: int = 128 * 2**20
    open_cost: int = 4 * 2**20
    min_partitions: int = 2

    def with_options(self, options: Mapping[str, str]) -> Packing:
        """These settings overridden by the read options that name them."""
        from lance_sql.engines.spark.options import int_option

        changes: dict[str, int] = {}
        for key, attr in (
            ("bytes_per_partition", "max_partition_bytes"),
            ("open_cost_bytes", "open_cost"),
            ("min_partitions", "min_partitions"),
        ):
            value = int_option(
                options, key, parse=parse_bytes, noun="size", zero=attr == "open_cost"
            )
            if value is not None:
                changes[attr] = value
        return replace(self, **changes)

    def max_split(self, sizes: Sequence[int]) -> int:
        total = sum(s + self.open_cost for s in sizes)
        per_core = total // max(self.min_partitions, 1)
        return max(1, min(self.max_partition_bytes, max(self.open_cost, per_core)))


def packing_from_spark(spark: Any) -> Packing:
    """The session's file-split settings (defaults where it cannot be asked, e.g. Connect)."""
    p = Packing()
    try:
        conf = spark.conf
        max_bytes = parse_bytes(conf.get("spark.sql.files.maxPartitionBytes", "128m"))
        open_cost = parse_bytes(conf.get("spark.sql.files.openCostInBytes", "4m"))
        raw_min = conf.get("spark.sql.files.minPartitionNum", None)
        min_parts = int(raw_min) if raw_min else int(spark.sparkContext.defaultParallelism)
        return Packing(max(max_bytes, 1), max(open_cost, 0), max(min_parts, 1))
    except Exception:  # Spark Connect (no sparkContext), odd values: Spark's defaults
        return p


def unit_bytes(unit: Any) -> int:
    """Bytes a scan unit reads, from fragment metadata (data files, live share); no data read."""
    inner = getattr(unit, "_inner", unit)  # PartitionTableUnit wraps a LanceFragmentsUnit
    dataset = getattr(inner, "dataset", None)
    ids = getattr(inner, "fragment_ids", None)
    if dataset is not None and ids is not None:
        total = 0
        try:
            for i in ids:
                md = dataset.get_fragment(i).metadata
                sizes = [d.file_size_bytes for d in md.files]
                if any(s is None for s in sizes):
                    raise ValueError("a data file without a recorded size")
                physical = md.physical_rows or 0
                live = physical - (md.num_deletions or 0)
                total += sum(sizes) * live // physical if physical else 0
            return total
        except (AttributeError, ValueError, TypeError):
            pass
    return (unit.estimated_rows or 0) * FALLBACK_ROW_BYTES


def pack_units(
    units: Sequence[Any], packing: Packing, rows_per_partition: int | None = None
) -> list[list[Any]]:
    """Units grouped into Spark input partitions, in the units' order (a task reads its tables
    in ``object_id`` order): of about :meth:`Packing.max_split` bytes, or first-fit decreasing
    by metadata row counts under ``rows_per_partition``."""
    if not units:
        return []
    if rows_per_partition:
        groups = first_fit([u.estimated_rows or 0 for u in units], rows_per_partition)
    else:
        groups = pack_groups([unit_bytes(u) for u in units], packing)
    return [[units[i] for i in g] for g in groups]


def pack_groups(
    weights: Sequence[int], packing: Packing, tasks: int | None = None
) -> list[list[int]]:
    """Indexes of ``weights`` per Spark task: ``tasks`` bins of similar weight, else Spark's
    file-split rule; at least one bin (an empty join still runs one task)."""
    if not weights:
        return [[]]
    if tasks is not None:
        return sorted(balanced_groups(list(enumerate(weights)), tasks), key=min)
    return first_fit(weights, packing.max_split(weights), packing.open_cost)


def first_fit(weights: Sequence[int], limit: int, open_cost: int = 0) -> list[list[int]]:
    """First-fit decreasing: indexes of ``weights`` grouped under ``limit`` each (a group's
    load adds ``open_cost`` per item, as Spark's rule); groups sorted, ordered by first."""
    order = sorted(range(len(weights)), key=lambda i: (-weights[i], i))
    groups: list[list[int]] = []
    used: list[int] = []
    for i in order:
        for g, size in enumerate(used):
            if size + weights[i] <= limit:
                groups[g].append(i)
                used[g] += weights[i] + open_cost
                break
        else:
            groups.append([i])
            used.append(weights[i] + open_cost)
    groups.sort(key=min)
    return [sorted(g) for g in groups]
