"""Partition specs and fields, exactly as the spec's JSON (``partition_spec_v{N}``).

These frozen dataclasses are the one in-memory form of a spec that every layer
shares: the writer applies them with :mod:`udfs`, the planner projects
predicates through them, SPJ compares them. Parsing and validation from JSON
(``PartitionSpec.from_json``) name the offending key in every error.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

TRANSFORM_TYPES = (
    "identity",
    "year",
    "month",
    "day",
    "hour",
    "bucket",
    "multi_bucket",
    "truncate",
)


@dataclass(frozen=True)
class Transform:
    """A well-known transform: ``{"type": ..., "num_buckets": N, "width": W}``."""

    type: str
    num_buckets: int | None = None
    width: int | None = None


@dataclass(frozen=True)
class PartitionField:
    """One partition field: exactly one of ``transform`` / ``expression`` is set.

    ``source_ids`` are Lance field ids (``lance:field_id``) of the source columns,
    in the order the expression calls them ``col0, col1, ...``.
    """

    field_id: str
    source_ids: tuple[int, ...]
    result_type: pa.DataType
    transform: Transform | None = None
    expression: str | None = None

    @property
    def column_name(self) -> str:
        """The ``__manifest`` column holding this field's values."""
        return f"partition_field_{self.field_id}"


@dataclass(frozen=True)
class PartitionSpec:
    """Spec version ``id`` (the N of ``partition_spec_v{N}`` and of the ``v{N}`` namespace)."""

    id: int
    fields: tuple[PartitionField, ...]

    @property
    def namespace_name(self) -> str:
        return f"v{self.id}"
