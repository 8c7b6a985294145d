"""Project a prepared predicate (:func:`.passes.prepare`) through one partition spec.

pyiceberg's rules: inclusive turns a leaf into the AND of every field's (and time
chain's) inclusive projection, Unsupported into TRUE; strict into the OR of the
fields' strict projections, Unsupported into FALSE. ``year(d) op Y`` is also read as
a range on ``d`` (dates, naive timestamps: a zoned year has no fixed start instant).
"""

from __future__ import annotations

import datetime

import pyarrow as pa

from lance_sql.spec.arrow_json import field_id_of
from lance_sql.spec.literals import PER_SECOND, int_range
from lance_sql.spec.predicates import (
    FALSE,
    TRUE,
    And,
    Column,
    Compare,
    Const,
    InList,
    IsNull,
    Leaf,
    Literal,
    Or,
    Predicate,
    TransformTerm,
    Unsupported,
    and_,
    is_leaf,
    or_,
)
from lance_sql.spec.transforms import (
    LITERAL_ERRORS,
    FieldTransform,
    TimeChain,
    TimeTransform,
    make_transform,
)
from lance_sql.spec.transforms.time_fields import YEAR
from lance_sql.tables.namespace.spec import PartitionSpec


def schema_columns(schema: pa.Schema) -> dict[int, Column]:
    """Bound columns of the namespace schema keyed by Lance field id, fields inside
    struct columns (a partition source may be one) included."""
    out: dict[int, Column] = {}

    def walk(f: pa.Field, path: tuple[str, ...]) -> None:
        fid = field_id_of(f)
        if fid is not None:  # (a top-level column has no path)
            out.setdefault(fid, Column(".".join(path), fid, f.type, path if len(path) > 1 else ()))
        if pa.types.is_struct(f.type):  # not inside lists or maps
            for child in f.type:
                walk(child, (*path, child.name))

    for f in schema:
        walk(f, (f.name,))
    return out


class SpecProjector:
    """The transforms of one spec version bound to the namespace schema."""

    def __init__(self, spec: PartitionSpec, schema: pa.Schema) -> None:
        self.spec = spec
        columns = schema_columns(schema)
        self.transforms: list[FieldTransform] = [
            make_transform(f, tuple(columns.get(i) for i in f.source_ids)) for f in spec.fields
        ]
        by_source: dict[int, dict[str, TimeTransform]] = {}
        for t in self.transforms:
            if isinstance(t, TimeTransform) and t.source is not None:
                by_source.setdefault(t.source.field_id, {}).setdefault(t.kind, t)
        self.chains = [
            chain for fid, fields in by_source.items() if (chain := TimeChain(columns[fid], fields))
        ]

    # ------------------------------------------------------------------ inclusive
    def inclusive(self, pred: Predicate) -> Predicate:
        if isinstance(pred, Const):
            return pred
        if isinstance(pred, Unsupported):
            return TRUE
        if isinstance(pred, And):
            parts = [self.inclusive(c) for c in pred.children]
            leaves = [c for c in pred.children if is_leaf(c)]
            return and_(*parts, *self._conjunction(leaves))
        if isinstance(pred, Or):
            return or_(*(self.inclusive(c) for c in pred.children))
        if is_leaf(pred):
            return and_(self._leaf(pred, strict=False), *self._conjunction([pred]))
        return TRUE  # a NOT left above an Unsupported leaf

    def _conjunction(self, leaves: list[Leaf]) -> list[Predicate]:
        out = []
        for t in self.transforms:
            try:
                out.append(t.project_conjunction(leaves))
            except LITERAL_ERRORS:  # a literal udfs cannot evaluate prunes nothing
                out.append(TRUE)
        return out

    # --------------------------------------------------------------------- strict
    def strict(self, pred: Predicate) -> Predicate:
        if isinstance(pred, Const):
            return pred
        if isinstance(pred, And):
            return and_(*(self.strict(c) for c in pred.children))
        if isinstance(pred, Or):
            return or_(*(self.strict(c) for c in pred.children))
        if isinstance(pred, Unsupported) or not is_leaf(pred):
            return FALSE
        return self._leaf(pred, strict=True)

    def _has_year_field(self, source: Column) -> bool:
        """Whether a year field on ``source`` already answers a year term exactly."""
        year = TransformTerm(YEAR, (source,))
        return any(t.equals_term(year) for t in self.transforms)

    # ---------------------------------------------------------------------- leaves
    def _leaf(self, leaf: Leaf, strict: bool) -> Predicate:
        parts: list[Predicate] = []
        for t in [*self.transforms, *self.chains]:
            try:
                parts.append(t.strict_project(leaf) if strict else t.project(leaf))
            except LITERAL_ERRORS:  # undecidable literal: no pruning, no proof
                parts.append(FALSE if strict else TRUE)
        alt = year_term_as_range(leaf)  # year(d) = 2025 also prunes identity(d), truncate...
        if alt is not None and not self._has_year_field(leaf.term.column):
            parts.append(self.strict(alt) if strict else self.inclusive(alt))
        return or_(*parts) if strict else and_(*parts)


def _year_start(year: int, t: pa.DataType) -> Literal | None:
    """The first value of calendar ``year`` in ``t``'s storage units, if representable."""
    if not 1 <= year <= 9999:
        return None
    days = (datetime.date(year, 1, 1) - datetime.date(1970, 1, 1)).days
    if pa.types.is_date32(t):
        return Literal(days, t)
    value = days * 86_400 * PER_SECOND[t.unit]
    lo, hi = int_range(pa.int64())
    if not lo <= value <= hi:
        return None
    return Literal(value, t)


def year_term_as_range(leaf: Leaf) -> Predicate | None:
    """The range form of a leaf on ``date_part('year', c)``, or None where not exact."""
    term = getattr(leaf, "term", None)
    if not (isinstance(term, TransformTerm) and term.transform == YEAR):
        return None
    col: Column = term.column
    t = col.type
    if t is None or not (pa.types.is_date32(t) or (pa.types.is_timestamp(t) and t.tz is None)):
        return None
    if isinstance(leaf, IsNull):
        return IsNull(col, leaf.negated)
    if isinstance(leaf, InList):
        parts = [_compare(col, "!=" if leaf.negated else "=", int(v.value)) for v in leaf.values]
        if any(p is None for p in parts):
            return None
        return and_(*parts) if leaf.negated else or_(*parts)
    if isinstance(leaf, Compare):
        return _compare(col, leaf.op, int(leaf.literal.value))
    return None


def _compare(col: Column, op: str, year: int) -> Predicate | None:
    start, end = _year_start(year, col.type), _year_start(year + 1, col.type)
    if start is None or end is None:
        return None
    if op == "=":
        return and_(Compare(col, ">=", start), Compare(col, "<", end))
    if op == "!=":
        return or_(Compare(col, "<", start), Compare(col, ">=", end))
    if op == "<":
        return Compare(col, "<", start)
    if op == "<=":
        return Compare(col, "<", end)
    if op == ">":
        return Compare(col, ">=", end)
    return Compare(col, ">=", start)
