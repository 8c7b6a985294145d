"""Expression fields (appendix D): = and IN by substitution."""

from __future__ import annotations

from collections.abc import Sequence

from lance_sql.spec.predicates import (
    FALSE,
    TRUE,
    Leaf,
    Predicate,
)
from lance_sql.spec.transforms.base import (
    FieldTransform,
    enumerate_conjunction,
)


class ExpressionTransform(FieldTransform):
    """A DataFusion SQL expression over col0, col1, ...: = and IN by substitution (appendix D)."""

    _null_preserving = False

    def _refines(self, other: FieldTransform) -> bool:
        return self.field.expression == other.field.expression

    def _project_source(self, leaf: Leaf) -> Predicate:
        return TRUE  # handled by project_conjunction (it also covers one source)

    def _strict_source(self, leaf: Leaf) -> Predicate:
        return FALSE  # f(NULL) may equal f(v): nothing is provable per row

    def project_conjunction(self, leaves: Sequence[Leaf]) -> Predicate:
        return enumerate_conjunction(self, leaves)
