"""truncate[W]: a monotonic transform (toward zero for numbers, a prefix for strings)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from lance_sql.errors import PlanningError
from lance_sql.spec.arrow_types import scalar_kind
from lance_sql.spec.literals import decimal_of, storage_domain, unscaled_of
from lance_sql.spec.partition_field import Transform
from lance_sql.spec.predicates import (
    FALSE,
    TRUE,
    Column,
    Compare,
    IsNull,
    Leaf,
    Literal,
    Predicate,
    StartsWith,
    Term,
    TransformTerm,
)
from lance_sql.spec.transforms.base import (
    RANGE_OPS,
    FieldTransform,
    TermForm,
    leaf_on_value,
    plain,
    same_column,
)


def _is_string(t: pa.DataType | None) -> bool:
    return t is not None and (pa.types.is_string(t) or pa.types.is_large_string(t))


@dataclass(frozen=True)
class TruncateForm(TermForm):
    """``left(s, W)`` / ``substr(s, 1, W)`` on strings, ``c - c % W`` on numbers."""

    name = "truncate"

    def value_type(self, term: TransformTerm) -> pa.DataType | None:
        return term.column.type

    def sql(self, term: TransformTerm) -> str:
        col = term.column.sql()
        if _is_string(term.column.type):
            return f"left({col}, {term.param})"
        return f"({col} - {col} % {term.param})"

    def values(self, term: TransformTerm, columns: list[pa.Array]) -> pa.Array:
        import udfs.transforms

        return plain(udfs.transforms.truncate(columns[0], term.param))

    def bind(self, term: TransformTerm, columns: tuple[Column, ...]) -> Term:
        src = columns[0].type
        if not (pa.types.is_integer(src) or pa.types.is_decimal(src) or _is_string(src)):
            raise PlanningError(
                f"{term.sql()}: cannot truncate column {columns[0].name!r} of type {src}"
            )
        return super().bind(term, columns)


TRUNCATE = TruncateForm()


def _succ(value: object, arrow_type: pa.DataType, step: int) -> object | None:
    """The next (step=1) / previous (step=-1) value of an integer or decimal type, or None."""
    is_decimal = pa.types.is_decimal(arrow_type)
    stored = (unscaled_of(value, arrow_type.scale) if is_decimal else int(value)) + step
    lo, hi = storage_domain(arrow_type)
    if not lo <= stored <= hi:
        return None
    return decimal_of(stored, arrow_type.scale) if is_decimal else stored


class TruncateTransform(FieldTransform):
    """truncate[W]: monotonic (toward zero for numbers, a prefix for strings)."""

    @property
    def width(self) -> int:
        return int(self.field.transform.width)

    @property
    def is_string(self) -> bool:
        return _is_string(self.source.type if self.source else None)

    @property
    def is_discrete(self) -> bool:
        t = self.source.type if self.source else None
        return t is not None and (pa.types.is_integer(t) or pa.types.is_decimal(t))

    def _one(self, value: object) -> object:
        return self.values_of([Literal(value, self.source.type)])[0]

    def _on_source(self, leaf: Leaf, strict: bool) -> Predicate:
        if isinstance(leaf, Compare) and leaf.op in RANGE_OPS:
            return self._range(leaf, strict)
        if isinstance(leaf, Compare) and leaf.op == "=" and self.is_string and strict:
            if len(str(leaf.literal.value)) < self.width:  # the partition holds only that string
                return Compare(self.partition_column, "=", leaf.literal)
            return FALSE
        if isinstance(leaf, StartsWith) and self.is_string:
            prefix, w = leaf.prefix, self.width
            if not leaf.negated:
                if strict:
                    return StartsWith(self.partition_column, prefix) if len(prefix) <= w else FALSE
                if len(prefix) >= w:
                    return Compare(self.partition_column, "=", self._value_literal(prefix[:w]))
                return StartsWith(self.partition_column, prefix)
            if len(prefix) <= w:
                return StartsWith(self.partition_column, prefix, negated=True)
            return StartsWith(self.partition_column, prefix[:w], negated=True) if strict else TRUE
        return super()._on_source(leaf, strict)

    def _range(self, leaf: Compare, strict: bool) -> Predicate:
        if self.is_string:
            p = self._value_literal(self._one(leaf.literal.value))
            if strict:
                return Compare(self.partition_column, ">" if leaf.op in (">", ">=") else "<", p)
            return Compare(self.partition_column, ">=" if leaf.op in (">", ">=") else "<=", p)
        if not self.is_discrete:
            return FALSE if strict else TRUE
        # monotonic non-decreasing over a discrete domain: inclusive, x > v -> p >= f(v+1) and
        # x < v -> p <= f(v-1); strict, x >= v -> p > f(v-1) and x <= v -> p < f(v+1)
        op, v = leaf.op, leaf.literal.value
        if op in ((">", "<") if strict else (">=", "<=")):
            return Compare(self.partition_column, op, self._value_literal(self._one(v)))
        nb = _succ(v, self.source.type, 1 if op in (">", "<=") else -1)
        if nb is None:  # no value above the maximum / below the minimum
            return IsNull(self.partition_column, negated=True) if strict else FALSE
        bound = self._value_literal(self._one(nb))
        return Compare(self.partition_column, op[0] if strict else op + "=", bound)

    @classmethod
    def accepts(cls, transform: Transform, t: pa.DataType) -> bool:
        return scalar_kind(t) in ("string", "string_view", "int", "decimal")

    @classmethod
    def result_type_of(cls, transform: Transform, sources: list[pa.DataType]) -> pa.DataType:
        return sources[0]

    @classmethod
    def default_name(cls, transform: Transform, columns: str, taken: set[str]) -> str:
        return f"{columns}_trunc_{transform.width}"

    def equals_term(self, term: TransformTerm) -> bool:
        # left(s, W) / c - c % W on the same column with the same width is this field
        # exactly (decimals excluded: DataFusion widens that term's type, e.g. decimal(11,2),
        # and the literal's coercion to it is not mirrored here).
        return (
            term.transform == TRUNCATE
            and term.param == self.width
            and len(term.columns) == 1
            and same_column(term.column, self.source)
            and (self.is_string or pa.types.is_integer(self.source.type))
        )

    def _project_term(self, leaf: Leaf, term: TransformTerm, strict: bool) -> Predicate:
        if self.equals_term(term):
            return leaf_on_value(leaf, self.partition_column)
        return FALSE if strict else TRUE
