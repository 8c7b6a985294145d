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

    def _on_source(self, leaf: Leaf, strict: bool) -> Predicate:
        # inclusive: handled by project_conjunction (it also covers one source);
        # strict: f(NULL) may equal f(v), nothing is provable per row
        return FALSE if strict else TRUE

    def project_conjunction(self, leaves: Sequence[Leaf]) -> Predicate:
        return enumerate_conjunction(self, leaves)
