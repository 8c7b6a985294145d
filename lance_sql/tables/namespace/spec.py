"""Partition specs and fields, exactly as the spec's JSON (``partition_spec_v{N}``).

The one in-memory form of a spec every layer shares. Parsing validates every rule of
the spec and names the offending key in each error, e.g.
``partition_spec_v2.fields[1].transform.num_buckets``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lance_sql.errors import SpecError
from lance_sql.spec.arrow_json import dumps, loads_limited, source_fields
from lance_sql.spec.partition_field import PartitionField, check_field_id
from lance_sql.spec.transforms import transform_class
from lance_sql.spec.transforms.base import is_nested
from udfs.expression import ALLOWED_FUNCTIONS

SPEC_KEY_PREFIX = "partition_spec_v"
_SPEC_KEY_RE = re.compile(r"^partition_spec_v([1-9][0-9]*)$")


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
    if is_nested(field.result_type):
        raise SpecError(
            f"result type {field.result_type} is nested; partition values must be scalar",
            key=f"{key}.result_type",
        )
    if field.transform is None:
        _validate_expression(field.expression or "", len(field.source_ids), key=f"{key}.expression")
        return
    name = field.transform.type
    rules = transform_class(field.transform)
    if not rules.takes_sources(field.transform, len(field.source_ids)):
        raise SpecError(
            f"transform {name!r} takes exactly one source, got {len(field.source_ids)}",
            key=f"{key}.source_ids",
        )
    for i, t in enumerate(types):
        if t is not None and not rules.accepts(field.transform, t):
            path = sources[field.source_ids[i]][0]
            raise SpecError(
                f"transform {name!r} cannot apply to source {path!r} of type {t}",
                key=f"{key}.transform.type",
            )
    if any(t is None for t in types):
        return
    expected = rules.result_type_of(field.transform, types)  # type: ignore[arg-type]
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
    """Refuse expressions that are not pure functions of ``col0..col{n-1}`` (parsed with
    sqlglot)."""
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
        check_field_id(field.field_id, key=f"{fkey}.field_id")
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


def all_fields(specs: Mapping[int, PartitionSpec]) -> list[PartitionField]:
    """Every partition field of every spec version (one per field id, first seen)."""
    seen: dict[str, PartitionField] = {}
    for n in sorted(specs):
        for f in specs[n].fields:
            seen.setdefault(f.field_id, f)
    return list(seen.values())


def parse_spec_key(name: str) -> int | None:
    """N for a ``partition_spec_v{N}`` metadata key, else None."""
    m = _SPEC_KEY_RE.match(name)
    return int(m.group(1)) if m else None
