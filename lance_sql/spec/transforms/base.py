"""The base class of partition transforms, the helpers every transform shares, and
expression fields (:class:`ExpressionTransform`, built on those helpers alone)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

import udfs
from lance_sql.errors import PlanningError
from lance_sql.spec.literals import in_pred
from lance_sql.spec.partition_field import PartitionField, Transform
from lance_sql.spec.predicates import (
    FALSE,
    TRUE,
    Column,
    Compare,
    InList,
    IsNull,
    Leaf,
    Literal,
    Predicate,
    StartsWith,
    Term,
    TransformTerm,
    or_,
)

#: What computing the partition value of a literal may raise; it then prunes nothing.
#: (Programming errors - TypeError, AttributeError, ... - are never swallowed.)
LITERAL_ERRORS: tuple[type[BaseException], ...] = (
    PlanningError,
    ValueError,
    ArithmeticError,
    pa.ArrowException,
    udfs.ExpressionError,
    udfs.UnsupportedTypeError,
)

#: Largest cross product of IN lists enumerated for multi-column fields.
MAX_ENUMERATION = 1024
#: Largest bucket count whose partition values are enumerated for bucket terms.
MAX_BUCKET_ENUMERATION = 65536

RANGE_OPS = ("<", "<=", ">", ">=")


def apply_field(field: PartitionField, columns: Sequence[pa.Array]) -> pa.Array:
    """The partition values of ``field`` for source ``columns`` (via :mod:`udfs`)."""
    out = udfs.apply_partition_field(
        columns=list(columns),
        transform=field.transform,
        expression=field.expression,
        result_type=field.result_type,
    )
    out = plain(out)
    return out if out.type.equals(field.result_type) else out.cast(field.result_type)


def is_nested(t: pa.DataType) -> bool:
    return pa.types.is_nested(t) or pa.types.is_dictionary(t)


def same_column(a: Column, b: Column | None) -> bool:
    """Whether two bound columns are the same source (by field id when both have one)."""
    if b is None:
        return False
    if a.field_id is not None and b.field_id is not None:
        return a.field_id == b.field_id
    return a.name == b.name


def literal_array(values: Sequence[Literal | None], arrow_type: pa.DataType) -> pa.Array:
    return pa.array([None if v is None else v.value for v in values], type=arrow_type)


class NotThisTerm(Exception):
    """A term whose text fits a transform that its column's type does not."""


class TermForm:
    """A query term a transform equals: ``date_part('year', c)``, ``murmur3(c) % N``, ...

    It answers for its terms' value type, SQL, values, pyarrow expression and binding.
    Subclasses are frozen dataclasses (equal by value).
    """

    name = ""

    def value_type(self, term: TransformTerm) -> pa.DataType | None:
        return pa.int32()

    def sql(self, term: TransformTerm) -> str:
        raise NotImplementedError

    def values(self, term: TransformTerm, columns: list[pa.Array]) -> pa.Array:
        """The term's value for every row of its source ``columns``."""
        raise NotImplementedError

    def pyarrow(self, term: TransformTerm) -> pc.Expression | None:
        """A pyarrow expression computing the term, or None (no pyarrow function does)."""
        return None

    def bind(self, term: TransformTerm, columns: tuple[Column, ...]) -> Term:
        """The term over its bound ``columns``; :class:`PlanningError` for a wrong type."""
        return TransformTerm(self, columns, term.param, term.unit, term.as_date)


def plain(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


class Projects:
    """Inclusive and strict projection of one leaf through ``_project(leaf, strict)``."""

    def project(self, leaf: Leaf) -> Predicate:
        """Inclusive projection of one leaf (TRUE when this cannot prune on it)."""
        return self._project(leaf, strict=False)

    def strict_project(self, leaf: Leaf) -> Predicate:
        """Strict projection of one leaf (FALSE when this cannot prove it)."""
        return self._project(leaf, strict=True)

    def _project(self, leaf: Leaf, strict: bool) -> Predicate:
        raise NotImplementedError


class FieldTransform(Projects):
    """Base class: a partition field bound to its source columns (None = column missing)."""

    def __init__(self, field: PartitionField, sources: tuple[Column | None, ...]) -> None:
        self.field = field
        self.sources = sources
        self.partition_column = Column(field.column_name, None, field.result_type)

    # ---- the spec's rules for fields of this transform (no field needed)
    @classmethod
    def accepts(cls, transform: Transform, t: pa.DataType) -> bool:
        """Whether a field of ``transform`` may take a source column of type ``t``."""
        return False

    @classmethod
    def takes_sources(cls, transform: Transform, count: int) -> bool:
        return count == 1

    @classmethod
    def result_type_of(cls, transform: Transform, sources: list[pa.DataType]) -> pa.DataType:
        """The result type the spec prescribes for ``transform`` over these source types."""
        return pa.int32()

    @classmethod
    def default_name(cls, transform: Transform, columns: str, taken: set[str]) -> str:
        """The field id a field gets when none is given (before numbering repeats)."""
        return f"{columns}_{transform.type}"

    # ---- identity of the transform
    @property
    def kind(self) -> str:
        return self.field.transform.type if self.field.transform else "expression"

    @property
    def result_type(self) -> pa.DataType:
        return self.field.result_type

    @property
    def source(self) -> Column | None:
        return self.sources[0] if len(self.sources) == 1 else None

    # ---- values
    def values_of(self, literals: Sequence[Literal | None]) -> list[object]:
        """Partition values of single-source literal values (None = NULL)."""
        src = self.source
        assert src is not None and src.type is not None
        out = apply_field(self.field, [literal_array(literals, src.type)])
        return out.to_pylist()

    def _value_literal(self, value: object) -> Literal:
        return Literal(value, self.result_type)

    # ---- projections
    def on_source(self, term: Term) -> bool:
        return (
            isinstance(term, Column) and self.source is not None and same_column(term, self.source)
        )

    def _project(self, leaf: Leaf, strict: bool) -> Predicate:
        term = getattr(leaf, "term", None)
        if isinstance(leaf, IsNull) and self.on_source(term) and self._null_preserving:
            return IsNull(self.partition_column, leaf.negated)
        if self.on_source(term):
            return self._on_source(leaf, strict)
        if isinstance(term, TransformTerm):
            return self._project_term(leaf, term, strict)
        return FALSE if strict else TRUE

    def project_conjunction(self, leaves: Sequence[Leaf]) -> Predicate:
        """Inclusive projection of an AND of leaves beyond the per-leaf projections."""
        return TRUE

    #: f(NULL) is NULL and f(x) is not NULL for x not NULL.
    _null_preserving = True

    def _on_source(self, leaf: Leaf, strict: bool) -> Predicate:
        """Projection of a leaf on the source column (default: = / IN, strictly != / NOT IN)."""
        if isinstance(leaf, Compare) and leaf.op == ("!=" if strict else "="):
            literals = [leaf.literal]
        elif isinstance(leaf, InList) and leaf.negated == strict:
            literals = list(leaf.values)
        else:
            return FALSE if strict else TRUE
        values = distinct(self.values_of(literals))
        lits = [self._value_literal(v) for v in values if v is not None]
        return in_pred(self.partition_column, lits, negated=strict)

    def equals_term(self, term: TransformTerm) -> bool:
        """Whether the partition value is exactly ``term``'s value on every row."""
        return False

    def _project_term(self, leaf: Leaf, term: TransformTerm, strict: bool) -> Predicate:
        return FALSE if strict else TRUE


def distinct(values: list[object]) -> list[object]:
    out: list[object] = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def leaf_on_value(leaf: Leaf, column: Column) -> Predicate:
    """The same leaf with its term replaced by a partition column of the same value type."""
    if isinstance(leaf, Compare):
        return Compare(column, leaf.op, leaf.literal)
    if isinstance(leaf, InList):
        return InList(column, leaf.values, leaf.negated)
    if isinstance(leaf, IsNull):
        return IsNull(column, leaf.negated)
    if isinstance(leaf, StartsWith):
        return StartsWith(column, leaf.prefix, leaf.negated)
    return TRUE


def equal_literals(leaf: Leaf) -> list[Literal] | None:
    """The finite set of literals a leaf allows (``=`` / ``IN``), else None."""
    if isinstance(leaf, Compare) and leaf.op == "=":
        return [leaf.literal]
    if isinstance(leaf, InList) and not leaf.negated:
        return list(leaf.values)
    return None


def holds(leaf: Leaf, value: object) -> bool | None:
    """Evaluate a leaf on a plain Python value (None = NULL) under SQL semantics."""
    if isinstance(leaf, IsNull):
        return (value is not None) if leaf.negated else (value is None)
    if value is None:
        return None
    if isinstance(leaf, Compare):
        v = leaf.literal.value
        return {
            "=": value == v,
            "!=": value != v,
            "<": value < v,
            "<=": value <= v,
            ">": value > v,
            ">=": value >= v,
        }[leaf.op]
    if isinstance(leaf, InList):
        found = any(value == lit.value for lit in leaf.values)
        return (not found) if leaf.negated else found
    return None


def enumerate_conjunction(transform: FieldTransform, leaves: Sequence[Leaf]) -> Predicate:
    """``p IN {f(v0, v1, ...)}`` when every source is bound to a finite set by the leaves
    (``IS NULL`` binds it to {NULL}; a source missing from the schema is NULL)."""
    domains: list[list[Literal | None]] = []
    for src in transform.sources:
        if src is None:
            domains.append([None])
            continue
        allowed: list[Literal | None] | None = None
        for leaf in leaves:
            term = getattr(leaf, "term", None)
            if not (isinstance(term, Column) and same_column(term, src)):
                continue
            is_null = isinstance(leaf, IsNull) and not leaf.negated
            values: list[Literal | None] | None = [None] if is_null else equal_literals(leaf)
            if values is None:
                continue
            allowed = values if allowed is None else [v for v in allowed if v in values]
        if allowed is None:
            return TRUE
        domains.append(allowed)
    combos = 1
    for d in domains:
        combos *= len(d)
    if combos == 0:
        return FALSE
    if combos > MAX_ENUMERATION:
        return TRUE
    rows = list(itertools.product(*domains))
    arrays = []
    for i, src in enumerate(transform.sources):
        src_type = src.type if src is not None else pa.null()
        arrays.append(literal_array([row[i] for row in rows], src_type))
    try:
        values = apply_field(transform.field, arrays).to_pylist()
    except LITERAL_ERRORS:  # an expression failing on a literal prunes nothing
        return TRUE
    unique = distinct(values)
    lits = [Literal(v, transform.result_type) for v in unique if v is not None]
    pred = in_pred(transform.partition_column, lits)
    if None in unique:
        pred = or_(pred, IsNull(transform.partition_column))
    return pred


class ExpressionTransform(FieldTransform):
    """A DataFusion SQL expression over col0, col1, ...: = and IN by substitution (appendix D)."""

    _null_preserving = False

    def _on_source(self, leaf: Leaf, strict: bool) -> Predicate:
        # inclusive: handled by project_conjunction (it also covers one source);
        # strict: f(NULL) may equal f(v), nothing is provable per row
        return FALSE if strict else TRUE

    def project_conjunction(self, leaves: Sequence[Leaf]) -> Predicate:
        return enumerate_conjunction(self, leaves)
