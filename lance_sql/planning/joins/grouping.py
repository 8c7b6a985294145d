"""Partitions -> join groups: evaluate the group key of every partition and bucket them.

Each partition's key comes from the fields of *its own* spec version (the
offers chosen by :mod:`.compatibility`), so partitions written under different
specs land in one common key space. A partition whose key has a NULL in a
component that is NULL only for NULL join keys holds rows that can never
match: it becomes a one-partition "NULL group" kept only on a preserved side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import PlanningError
from lance_sql.planning.joins.compatibility import Component, Offer
from lance_sql.planning.joins.keys import canonical_values
from lance_sql.planning.scan_plan import PlannedPartition, column_values

#: One partition table as the join plan ships it to a task: a scan plan's partition whose
#: ``values`` are (field_id, value) of its spec's fields.
PartitionRef = PlannedPartition

#: The ``__manifest`` columns a :class:`PartitionRef` holds, in field order (then ``values``).
REF_COLUMNS = tuple(f.name for f in fields(PartitionRef))[:-1]


def _column(partitions: pa.Table, field_id: str, side: str) -> pa.ChunkedArray:
    name = f"partition_field_{field_id}"
    if name not in partitions.column_names:
        raise PlanningError(f"{side} partitions table lacks column {name!r}")
    return partitions.column(name)


def component_values(comp: Component, offer: Offer, rows: pa.Table, side: str) -> list[Any]:
    """The canonical value of ``comp`` for every row of ``rows`` (one spec version)."""
    cols = [_column(rows, f.field_id, side).combine_chunks() for f in offer.fields]
    if rows.num_rows == 0:
        return []
    return comp.grouping.values(comp.param, cols, offer.from_identity, canonical_values)


def partition_refs(rows: pa.Table, spec_fields: Sequence[str]) -> list[PartitionRef]:
    """PartitionRefs for ``rows`` (all of one spec version, whose field ids are given)."""
    values = {f: column_values(rows, f"partition_field_{f}") for f in spec_fields}
    columns = [column_values(rows, name) for name in REF_COLUMNS]
    return [
        PartitionRef(*(c[i] for c in columns), tuple((f, values[f][i]) for f in spec_fields))
        for i in range(rows.num_rows)
    ]


def rows_of_version(partitions: pa.Table, version: int) -> pa.Table:
    return partitions.filter(pc.equal(partitions.column("spec_version"), version))


def sort_key(key: tuple[Any, ...] | None) -> tuple:
    """A total order over group keys (NULL groups last) so plans are deterministic."""
    if key is None:
        return (1,)
    return (0, *((v is None, type(v).__name__, 0 if v is None else v) for v in key))
