"""A partition field and its transform, exactly as the spec's JSON.

``PartitionField`` is the one in-memory form every layer shares (writer, planner, SPJ);
validation against a namespace schema is :func:`lance_sql.tables.namespace.spec.validate_field`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lance_sql.errors import SpecError
from lance_sql.spec.arrow_json import data_type_from_json, data_type_to_json
from udfs.transforms import TRANSFORM_TYPES

_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Transform:
    """A well-known transform: ``{"type": ..., "num_buckets": N, "width": W}``."""

    type: str
    num_buckets: int | None = None
    width: int | None = None

    def label(self) -> str:
        """``bucket[16]``, ``truncate[4]``, ``day``."""
        param = self.num_buckets or self.width
        return f"{self.type}[{param}]" if param else self.type

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.num_buckets is not None:
            out["num_buckets"] = self.num_buckets
        if self.width is not None:
            out["width"] = self.width
        return out

    @classmethod
    def from_json(cls, obj: Any, *, key: str = "transform") -> Transform:
        """Parse and check a transform object: known type, required parameters only."""
        if not isinstance(obj, Mapping):
            raise SpecError(f"expected a transform object, got {obj!r}", key=key)
        name = obj.get("type")
        if not isinstance(name, str):
            raise SpecError("missing or non-string transform 'type'", key=f"{key}.type")
        if name not in TRANSFORM_TYPES:
            raise SpecError(
                f"unknown transform type {name!r} (known: {', '.join(TRANSFORM_TYPES)})",
                key=f"{key}.type",
            )
        needs = PARAMETERS.get(name)
        num_buckets = _positive_param(obj, "num_buckets", key, needed=needs == "num_buckets")
        width = _positive_param(obj, "width", key, needed=needs == "width")
        return cls(name, num_buckets, width)


#: The parameter each transform type requires; the others take none.
PARAMETERS = {"bucket": "num_buckets", "multi_bucket": "num_buckets", "truncate": "width"}


def _positive_param(obj: Mapping[str, Any], name: str, key: str, *, needed: bool) -> int | None:
    value = obj.get(name)
    if not needed:
        if value is not None:
            raise SpecError(
                f"'{name}' is not a parameter of transform {obj.get('type')!r}",
                key=f"{key}.{name}",
            )
        return None
    if value is None:
        raise SpecError(f"transform {obj.get('type')!r} requires '{name}'", key=f"{key}.{name}")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= _INT32_MAX:
        raise SpecError(
            f"'{name}' must be an integer in [1, {_INT32_MAX}], got {value!r}", key=f"{key}.{name}"
        )
    return value


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

    def label(self) -> str:
        """The transform's label, or ``expression '<text>'``."""
        return self.transform.label() if self.transform else f"expression {self.expression!r}"

    @property
    def column_name(self) -> str:
        """The ``__manifest`` column holding this field's values."""
        return f"partition_field_{self.field_id}"

    def same_definition(self, other: PartitionField) -> bool:
        """True when ``other`` derives the same value (so it must share the field id)."""
        return (
            self.source_ids == other.source_ids
            and self.transform == other.transform
            and _norm_expr(self.expression) == _norm_expr(other.expression)
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"field_id": self.field_id, "source_ids": list(self.source_ids)}
        if self.transform is not None:
            out["transform"] = self.transform.to_json()
        else:
            out["expression"] = self.expression
        out["result_type"] = data_type_to_json(self.result_type)
        return out

    @classmethod
    def from_json(cls, obj: Any, *, key: str) -> PartitionField:
        """Parse one field object (structure only; :func:`validate_field` checks the schema)."""
        if not isinstance(obj, Mapping):
            raise SpecError(f"expected a partition field object, got {obj!r}", key=key)
        field_id = obj.get("field_id")
        check_field_id(field_id, key=f"{key}.field_id")
        source_ids = obj.get("source_ids")
        if not isinstance(source_ids, list) or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in source_ids
        ):
            raise SpecError(
                f"'source_ids' must be an array of integers, got {source_ids!r}",
                key=f"{key}.source_ids",
            )
        if not source_ids:
            raise SpecError("'source_ids' must not be empty", key=f"{key}.source_ids")
        has_t, has_e = obj.get("transform") is not None, obj.get("expression") is not None
        if has_t == has_e:
            raise SpecError(
                "exactly one of 'transform' or 'expression' must be specified",
                key=f"{key}.transform" if has_t else key,
            )
        transform = Transform.from_json(obj["transform"], key=f"{key}.transform") if has_t else None
        expression = obj.get("expression")
        if has_e and (not isinstance(expression, str) or not expression.strip()):
            raise SpecError("'expression' must be a non-empty string", key=f"{key}.expression")
        if "result_type" not in obj:
            raise SpecError("'result_type' is required", key=f"{key}.result_type")
        result_type = data_type_from_json(obj["result_type"], key=f"{key}.result_type")
        return cls(field_id, tuple(source_ids), result_type, transform, expression)


def _norm_expr(expression: str | None) -> str | None:
    return None if expression is None else " ".join(expression.split())


def check_field_id(field_id: Any, *, key: str) -> None:
    if not isinstance(field_id, str) or not field_id:
        raise SpecError(f"'field_id' must be a non-empty string, got {field_id!r}", key=key)
    # The id becomes part of a Lance column name; '.' would read as a nested path.
    bad = sorted({c for c in field_id if c in ".`" or not c.isprintable() or c.isspace()})
    if bad:
        raise SpecError(f"'field_id' {field_id!r} contains disallowed characters {bad}", key=key)
