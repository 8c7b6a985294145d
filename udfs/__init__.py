"""Hash functions and partition transforms of the Lance partitioning spec, vectorized.

A package separate from ``lance_sql`` (pyarrow, numpy and numba only), so writers and
Spark workers compute partition values without the SQL engine. Definitions:
``docs/hashing.md``.
"""

from __future__ import annotations

# Imported on first use (PEP 562), so that ``udfs.sql_engine`` and ``udfs.errors``
# import without pyarrow, numpy or numba.
_TRANSFORMS = (
    "apply_transform", "bucket", "day", "derived_expression", "hour", "identity", "month",
    "multi_bucket", "truncate", "year",
)  # fmt: skip
_LAZY = {
    "ExpressionError": "udfs.errors",
    "UnsupportedTypeError": "udfs.errors",
    "apply_partition_field": "udfs.expression",
    "evaluate_expression": "udfs.expression",
    "murmur3": "udfs.hashing",
    "murmur3_multi": "udfs.hashing",
    **dict.fromkeys(_TRANSFORMS, "udfs.transforms"),
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> object:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'udfs' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
