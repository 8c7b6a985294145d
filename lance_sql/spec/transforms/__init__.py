"""Partition transforms that know their own algebra (one class per transform).

Each class answers, for a leaf predicate, its inclusive projection (``project``), its
strict projection (``strict_project``) and the projection of a whole AND
(``project_conjunction``). Partition values of literals are computed with :mod:`udfs`,
the code that computed the stored ones; the planner never switches on transform names.
"""

from __future__ import annotations

from lance_sql.spec.partition_field import PartitionField, Transform
from lance_sql.spec.predicates import Column
from lance_sql.spec.time_ranges import TIME_CHAIN
from lance_sql.spec.transforms.base import (
    LITERAL_ERRORS,
    ExpressionTransform,
    FieldTransform,
    TermForm,
    apply_field,
    same_column,
)
from lance_sql.spec.transforms.bucket import BUCKET, HASH_MOD, MURMUR3, BucketTransform
from lance_sql.spec.transforms.identity import IdentityTransform
from lance_sql.spec.transforms.time_fields import DATE_PARTS, DATE_TRUNC, TimeChain, TimeTransform
from lance_sql.spec.transforms.truncate import TRUNCATE, TruncateTransform

__all__ = [
    "LITERAL_ERRORS",
    "BucketTransform",
    "ExpressionTransform",
    "FieldTransform",
    "IdentityTransform",
    "TimeChain",
    "TimeTransform",
    "TruncateTransform",
    "apply_field",
    "default_field_id",
    "make_transform",
    "same_column",
    "term_form",
    "transform_class",
]

_TERM_FORMS: dict[str, TermForm] = {
    f.name: f for f in (*DATE_PARTS.values(), DATE_TRUNC, BUCKET, HASH_MOD, MURMUR3, TRUNCATE)
}


def term_form(name: str) -> TermForm:
    """The query-term form called ``name`` (as :mod:`~lance_sql.planning.plan_json` writes it)."""
    try:
        return _TERM_FORMS[name]
    except KeyError:
        raise ValueError(f"unknown transform term kind {name!r}") from None


_CLASSES: dict[str, type[FieldTransform]] = {
    "identity": IdentityTransform,
    **dict.fromkeys(TIME_CHAIN, TimeTransform),
    "bucket": BucketTransform,
    "multi_bucket": BucketTransform,
    "truncate": TruncateTransform,
}


def transform_class(transform: Transform | None) -> type[FieldTransform]:
    """The class of fields of ``transform`` (None: an expression field)."""
    if transform is None:
        return ExpressionTransform
    if transform.type not in _CLASSES:
        raise ValueError(f"unknown transform type {transform.type!r}")
    return _CLASSES[transform.type]


def default_field_id(transform: Transform, columns: str, taken: set[str]) -> str:
    """The field id a field of ``transform`` over ``columns`` gets when none is given."""
    name = transform_class(transform).default_name(transform, columns, taken)
    base, n = name, 2
    while name in taken:  # never one an earlier field of another definition holds
        name, n = f"{base}_{n}", n + 1
    return name


def make_transform(field: PartitionField, sources: tuple[Column | None, ...]) -> FieldTransform:
    """The transform object for ``field`` bound to its source columns."""
    try:
        cls = transform_class(field.transform)
    except ValueError as exc:
        raise ValueError(f"{exc} in partition field {field.field_id!r}") from None
    return cls(field, sources)
