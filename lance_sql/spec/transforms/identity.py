"""identity: every leaf on the source maps to the same leaf on the partition column."""

from __future__ import annotations

import pyarrow as pa

from lance_sql.spec.literals import coerce_compare, coerce_in
from lance_sql.spec.partition_field import Transform
from lance_sql.spec.predicates import (
    FALSE,
    TRUE,
    Compare,
    InList,
    IsNull,
    Leaf,
    Predicate,
)
from lance_sql.spec.transforms.base import (
    FieldTransform,
    is_nested,
    leaf_on_value,
)


class IdentityTransform(FieldTransform):
    """identity: every leaf on the source maps to the same leaf on the partition column."""

    @classmethod
    def accepts(cls, transform: Transform, t: pa.DataType) -> bool:
        return not is_nested(t)

    @classmethod
    def result_type_of(cls, transform: Transform, sources: list[pa.DataType]) -> pa.DataType:
        return sources[0]

    @classmethod
    def default_name(cls, transform: Transform, columns: str, taken: set[str]) -> str:
        return columns

    def _on_source(self, leaf: Leaf, strict: bool) -> Predicate:
        if self._float_order_differs(leaf):
            return FALSE if strict else TRUE
        return self._same_leaf(leaf)

    def _float_order_differs(self, leaf: Leaf) -> bool:
        """Ranges and != on floats: DataFusion orders NaN above every number, pyarrow
        (which evaluates the ``__manifest`` filter) makes every NaN comparison false."""
        t = self.source.type
        if not pa.types.is_floating(t):
            return False
        return not (
            (isinstance(leaf, Compare) and leaf.op == "=")
            or (isinstance(leaf, InList) and not leaf.negated)
            or isinstance(leaf, IsNull)
        )

    def _same_leaf(self, leaf: Leaf) -> Predicate:
        if self.result_type != self.source.type:
            if isinstance(leaf, Compare):
                return coerce_compare(
                    self.partition_column, leaf.op, leaf.literal, self.result_type
                )
            if isinstance(leaf, InList):
                return coerce_in(self.partition_column, leaf.values, leaf.negated, self.result_type)
        return leaf_on_value(leaf, self.partition_column)
