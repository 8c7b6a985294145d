"""lance-sql: Lance datasets and partitioned namespaces as first-class DataFusion SQL tables."""

from __future__ import annotations

from lance_sql.errors import (
    CommitConflictError,
    FormatError,
    LanceSqlError,
    NotFoundError,
    PlanningError,
    SchemaMismatchError,
    SpecError,
    UnsafeLocationError,
    UnsupportedFeatureError,
)

__version__ = "0.1.0"

__all__ = [
    "CommitConflictError",
    "FormatError",
    "LanceSqlError",
    "NotFoundError",
    "PlanningError",
    "SchemaMismatchError",
    "SpecError",
    "UnsafeLocationError",
    "UnsupportedFeatureError",
    "__version__",
]
