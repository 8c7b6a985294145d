"""Partition specs and fields, exactly as the spec's JSON (``partition_spec_v{N}``).

These frozen dataclasses are the one in-memory form of a spec that every layer
shares: the writer applies them with :mod:`udfs`, the planner projects
predicates through them, SPJ compares them. Parsing and validation from JSON
(``PartitionSpec.from_json``) name the offending key in every error, e.g.
``partition_spec_v2.fields[1].transform.num_buckets``.

Validation covers every rule of the spec: exactly one of transform/expression,
known transform types with their parameters, result types matching the
transform, source ids that exist in the namespace schema and suit the
transform, field ids unique within a spec, and (across versions, see
:func:`validate_evolution`) field ids reused exactly when the definition repeats.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lance_sql.errors import SpecError
from lance_sql.tables.namespace.arrow_json import (
    data_type_from_json,
    data_type_to_json,
    dumps,
    field_id_of,
    iter_fields,
    loads_limited,
)
from udfs.canonical import is_supported
from udfs.expression import ALLOWED_FUNCTIONS
from udfs.transforms import TRANSFORM_TYPES

SPEC_KEY_PREFIX = "partition_spec_v"
_SPEC_KEY_RE = re.compile(r"^partition_spec_v([1-9][0-9]*)$")
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class Transform:
    """A well-known transform: ``{"type": ..., "num_buckets": N, "width": W}``."""

    type: str
    num_buckets: int | None = None
    width: int | None = None

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
        num_buckets = _positive_param(obj, "num_buckets", key, needed=name in BUCKET_TRANSFORMS)
        width = _positive_param(obj, "width", key, needed=name == "truncate")
        return cls(name, num_buckets, width)


BUCKET_TRANSFORMS = ("bucket", "multi_bucket")
_TIME_PARTS = ("year", "month", "day", "hour")


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
        _check_field_id(field_id, key=f"{key}.field_id")
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


def _check_field_id(field_id: Any, *, key: str) -> None:
    if not isinstance(field_id, str) or not field_id:
        raise SpecError(f"'field_id' must be a non-empty string, got {field_id!r}", key=key)
    # The id becomes part of a Lance column name; '.' would read as a nested path.
    bad = sorted({c for c in field_id if c in ".`" or not c.isprintable() or c.isspace()})
    if bad:
        raise SpecError(f"'field_id' {field_id!r} contains disallowed characters {bad}", key=key)


@dataclass(frozen=True)
class PartitionSpec:
    """Spec version ``id`` (the N of ``partition_spec_v{N}`` and of the ``v{N}`` namespace)."""

    id: int
    fields: tuple[PartitionField, ...]

    @property
    def namespace_name(self) -> str:
        return f"v{self.id}"

    @property
    def key(self) -> str:
        """The ``__manifest`` metadata key holding this spec."""
        return f"{SPEC_KEY_PREFIX}{self.id}"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "fields": [f.to_json() for f in self.fields]}

    def to_json_string(self) -> str:
        return dumps(self.to_json())

    @classmethod
    def from_json(
        cls,
        obj: Any,
        *,
        schema: pa.Schema,
        key: str | None = None,
        expected_id: int | None = None,
        allow_missing_sources: bool = False,
    ) -> PartitionSpec:
        """Parse and validate a spec object or JSON string against the namespace ``schema``.

        ``key`` is the path used in error messages (default ``partition_spec_v{id}``);
        ``expected_id`` is the N of the metadata key the document was stored under.
        """
        if isinstance(obj, (str, bytes)):
            obj = loads_limited(obj, key=key or "partition_spec")
        if not isinstance(obj, Mapping):
            raise SpecError(f"expected a partition spec object, got {obj!r}", key=key)
        spec_id = obj.get("id")
        key = key or (
            f"{SPEC_KEY_PREFIX}{spec_id}" if isinstance(spec_id, int) else "partition_spec"
        )
        if isinstance(spec_id, bool) or not isinstance(spec_id, int) or spec_id < 1:
            raise SpecError(f"'id' must be a positive integer, got {spec_id!r}", key=f"{key}.id")
        if expected_id is not None and spec_id != expected_id:
            raise SpecError(
                f"'id' is {spec_id} but the spec is stored as version {expected_id}",
                key=f"{key}.id",
            )
        fields = obj.get("fields")
        if not isinstance(fields, list):
            raise SpecError("'fields' must be an array", key=f"{key}.fields")
        parsed = tuple(
            PartitionField.from_json(f, key=f"{key}.fields[{i}]") for i, f in enumerate(fields)
        )
        spec = cls(spec_id, parsed)
        validate_spec(spec, schema, key=key, allow_missing_sources=allow_missing_sources)
        return spec


# ---------------------------------------------------------------------------
# Validation against the namespace schema


def _is_hashable(t: pa.DataType) -> bool:
    """Types murmur3 has canonical bytes for (design notes 2.1; decided in udfs.canonical)."""
    return is_supported(t) and not pa.types.is_null(t)


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_nested(t: pa.DataType) -> bool:
    return pa.types.is_nested(t) or pa.types.is_dictionary(t)


def _applicable(transform: str, t: pa.DataType) -> bool:
    if transform == "identity":
        return not _is_nested(t)
    if transform in ("year", "month", "day"):
        return pa.types.is_date(t) or pa.types.is_timestamp(t)
    if transform == "hour":
        return pa.types.is_timestamp(t)
    if transform in BUCKET_TRANSFORMS:
        return _is_hashable(t)
    if transform == "truncate":
        return _is_string(t) or pa.types.is_integer(t) or pa.types.is_decimal(t)
    return False


def expected_result_type(transform: Transform, source_types: list[pa.DataType]) -> pa.DataType:
    """The result type the spec prescribes for ``transform`` over these sources."""
    if transform.type in ("identity", "truncate"):
        return source_types[0]
    return pa.int32()


def source_fields(schema: pa.Schema) -> dict[int, tuple[str, pa.Field, bool]]:
    """Field id -> (dotted path, field, inside a list or map) for every field."""
    out: dict[int, tuple[str, pa.Field, bool]] = {}
    repeated_paths: set[str] = set()
    for path, field in iter_fields(schema):
        parent = path.rsplit(".", 1)[0] if "." in path else None
        in_repeated = parent in repeated_paths if parent else False
        t = field.type
        if in_repeated or pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
            repeated_paths.add(path)
        if pa.types.is_fixed_size_list(t):
            repeated_paths.add(path)
        fid = field_id_of(field)
        if fid is not None:
            out[fid] = (path, field, in_repeated)
    return out


def validate_field(
    field: PartitionField,
    schema: pa.Schema,
    *,
    key: str,
    sources: Mapping[int, tuple[str, pa.Field, bool]] | None = None,
    allow_missing_sources: bool = False,
) -> None:
    """Check one field against the schema: sources exist and suit it; result type matches."""
    sources = source_fields(schema) if sources is None else sources
    types: list[pa.DataType | None] = []
    for i, sid in enumerate(field.source_ids):
        found = sources.get(sid)
        if found is None:
            if allow_missing_sources:
                types.append(None)
                continue
            raise SpecError(
                f"source id {sid} is not a field id of the namespace schema",
                key=f"{key}.source_ids[{i}]",
            )
        path, src, repeated = found
        if repeated:
            raise SpecError(
                f"source {path!r} (id {sid}) is inside a list or map; it has no single value",
                key=f"{key}.source_ids[{i}]",
            )
        types.append(src.type)
    if len(set(field.source_ids)) != len(field.source_ids):
        raise SpecError("'source_ids' repeats a field id", key=f"{key}.source_ids")
    if _is_nested(field.result_type):
        raise SpecError(
            f"result type {field.result_type} is nested; partition values must be scalar",
            key=f"{key}.result_type",
        )
    if field.transform is None:
        _validate_expression(field.expression or "", len(field.source_ids), key=f"{key}.expression")
        return
    name = field.transform.type
    if name != "multi_bucket" and len(field.source_ids) != 1:
        raise SpecError(
            f"transform {name!r} takes exactly one source, got {len(field.source_ids)}",
            key=f"{key}.source_ids",
        )
    for i, t in enumerate(types):
        if t is not None and not _applicable(name, t):
            path = sources[field.source_ids[i]][0]
            raise SpecError(
                f"transform {name!r} cannot apply to source {path!r} of type {t}",
                key=f"{key}.transform.type",
            )
    if any(t is None for t in types):
        return
    expected = expected_result_type(field.transform, types)  # type: ignore[arg-type]
    if field.result_type != expected:
        raise SpecError(
            f"transform {name!r} yields {expected}, but result_type is {field.result_type}",
            key=f"{key}.result_type",
        )


# Functions whose value changes between calls or depends on session state.
_NONDETERMINISTIC = {
    "random",
    "rand",
    "randn",
    "uuid",
    "now",
    "today",
    "current_date",
    "current_time",
    "current_timestamp",
    "localtime",
    "localtimestamp",
    "statement_timestamp",
    "transaction_timestamp",
    "clock_timestamp",
    "current_user",
    "session_user",
    "user",
    "current_database",
    "current_schema",
    "version",
}
_NONDETERMINISTIC_CLASSES = {
    "Rand",
    "Randn",
    "Uuid",
    "CurrentDate",
    "CurrentTime",
    "CurrentTimestamp",
    "CurrentDatetime",
    "CurrentUser",
    "CurrentSchema",
    "CurrentVersion",
    "Localtime",
    "Localtimestamp",
}


def _validate_expression(expression: str, n_sources: int, *, key: str) -> None:
    """Refuse expressions that are not pure functions of ``col0..col{n-1}``.

    sqlglot parses the DataFusion SQL (its dialect is close to PostgreSQL's for
    scalar expressions); evaluation itself is :mod:`udfs`' job.
    """
    import sqlglot
    from sqlglot import expressions as exp

    try:
        tree = sqlglot.parse_one(expression, dialect="postgres")
    except sqlglot.errors.ParseError as exc:
        raise SpecError(f"cannot parse expression {expression!r}: {exc}", key=key) from exc
    if tree is None:
        raise SpecError("empty expression", key=key)
    for node in tree.walk():
        if isinstance(node, (exp.Select, exp.Subquery, exp.Query)):
            raise SpecError("subqueries are not allowed in a partition expression", key=key)
        if isinstance(node, exp.Column):
            name = node.name
            if node.table or not re.fullmatch(r"col(0|[1-9][0-9]*)", name):
                raise SpecError(
                    f"column {node.sql()!r} is not one of col0..col{n_sources - 1}", key=key
                )
            if int(name[3:]) >= n_sources:
                raise SpecError(
                    f"{name} has no source (source_ids has {n_sources} entries)", key=key
                )
        if isinstance(node, (exp.AggFunc, exp.Window)):
            raise SpecError(
                f"{node.sql(dialect='postgres')!r} is an aggregate or window function: a "
                "partition expression must compute each row's value from that row alone",
                key=key,
            )
        if isinstance(node, exp.Func):
            fname = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            if fname in _NONDETERMINISTIC or type(node).__name__ in _NONDETERMINISTIC_CLASSES:
                raise SpecError(f"function {fname}() is not deterministic and stateless", key=key)
            if isinstance(node, exp.Anonymous) and fname not in ALLOWED_FUNCTIONS:
                # Unknown to sqlglot: a UDF or a typo. Only the allow-list of udfs may run
                # when partition values are computed; refuse it now, not at the first write.
                raise SpecError(
                    f"function {fname}() is not on the allow-list of deterministic, stateless "
                    "functions for partition expressions",
                    key=key,
                )


def validate_spec(
    spec: PartitionSpec,
    schema: pa.Schema,
    *,
    key: str | None = None,
    allow_missing_sources: bool = False,
) -> None:
    """Check every field of ``spec`` and that field ids are unique within it."""
    key = key or spec.key
    sources = source_fields(schema)
    seen: dict[str, int] = {}
    for i, field in enumerate(spec.fields):
        fkey = f"{key}.fields[{i}]"
        _check_field_id(field.field_id, key=f"{fkey}.field_id")
        if field.field_id in seen:
            raise SpecError(
                f"field_id {field.field_id!r} is already used by fields[{seen[field.field_id]}]",
                key=f"{fkey}.field_id",
            )
        seen[field.field_id] = i
        if (field.transform is None) == (field.expression is None):
            raise SpecError(
                "exactly one of 'transform' or 'expression' must be specified", key=fkey
            )
        validate_field(
            field, schema, key=fkey, sources=sources, allow_missing_sources=allow_missing_sources
        )
        for j, other in enumerate(spec.fields[:i]):
            if other.same_definition(field):
                raise SpecError(
                    f"repeats the definition of fields[{j}] ({other.field_id!r})", key=fkey
                )


def validate_evolution(specs: Mapping[int, PartitionSpec]) -> None:
    """Field ids across versions: same definition <=> same field id (spec: Field ID Reuse)."""
    by_id: dict[str, tuple[PartitionField, str]] = {}
    for spec_id in sorted(specs):
        spec = specs[spec_id]
        for i, field in enumerate(spec.fields):
            fkey = f"{spec.key}.fields[{i}]"
            known = by_id.get(field.field_id)
            if known is not None:
                prev, prev_key = known
                if not prev.same_definition(field) or prev.result_type != field.result_type:
                    raise SpecError(
                        f"field_id {field.field_id!r} was defined differently in {prev_key}; "
                        "a field id must never be reused for a different partition field",
                        key=f"{fkey}.field_id",
                    )
                continue
            for prev, prev_key in by_id.values():
                if prev.same_definition(field):
                    raise SpecError(
                        f"same source_ids and transform/expression as {prev_key}: "
                        f"must reuse field_id {prev.field_id!r}",
                        key=f"{fkey}.field_id",
                    )
            by_id[field.field_id] = (field, fkey)


def parse_spec_key(name: str) -> int | None:
    """N for a ``partition_spec_v{N}`` metadata key, else None."""
    m = _SPEC_KEY_RE.match(name)
    return int(m.group(1)) if m else None
