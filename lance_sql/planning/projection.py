"""Project a prepared predicate through one partition spec (inclusive and strict).

The predicate must be in the normal form of :func:`.passes.prepare` (bound,
NOT pushed to the leaves). The rules are those of pyiceberg's projections:

- inclusive: AND -> AND, OR -> OR, leaf -> AND over every field of the spec
  (and every time chain) of that field's inclusive projection; an AND also
  gets each field's :meth:`~.transforms.FieldTransform.project_conjunction`
  (multi-column and expression fields). Unsupported -> TRUE.
- strict: AND -> AND, OR -> OR, leaf -> OR over the fields' strict
  projections (one field proving the leaf is enough). Unsupported -> FALSE.

Both results are predicates over the spec's ``partition_field_*`` columns.
A field the spec lacks simply contributes nothing, so it never prunes.
"""

from __future__ import annotations

import pyarrow as pa

from lance_sql.planning.unwrap import year_term_as_range
from lance_sql.spec.arrow_json import field_id_of
from lance_sql.spec.predicates import (
    FALSE,
    TRUE,
    And,
    Column,
    Const,
    Leaf,
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
