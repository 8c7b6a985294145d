"""Hash functions and partition transforms of the Lance partitioning spec, vectorized.

A package separate from ``lance_sql``: it needs pyarrow, numpy and numba only
(DataFusion is imported lazily, by :func:`evaluate_expression` and
:mod:`udfs.sql_dispatch`), so writers and Spark workers can compute partition
values without the SQL engine. Definitions: ``docs/hashing.md`` and NOTES 2.1/2.2.
"""

from __future__ import annotations

from udfs.errors import ExpressionError, UnsupportedTypeError
from udfs.expression import apply_partition_field, evaluate_expression
from udfs.hashing import murmur3, murmur3_multi
from udfs.transforms import (
    apply_transform,
    bucket,
    day,
    derived_expression,
    hour,
    identity,
    month,
    multi_bucket,
    truncate,
    year,
)

__all__ = [
    "ExpressionError",
    "UnsupportedTypeError",
    "apply_partition_field",
    "apply_transform",
    "bucket",
    "day",
    "derived_expression",
    "evaluate_expression",
    "hour",
    "identity",
    "month",
    "multi_bucket",
    "murmur3",
    "murmur3_multi",
    "truncate",
    "year",
]
