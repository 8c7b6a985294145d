"""lance-sql: Lance datasets and partitioned namespaces as first-class DataFusion SQL tables."""

from __future__ import annotations

import os as _os

# pylance's Rust code logs WARN lines to stderr by default (e.g. "No existing dataset at
# .../__manifest, it will be created" on every create): quiet unless the user set LANCE_LOG.
# It is read when pylance loads, so it must be set before lance_sql imports it.
_os.environ.setdefault("LANCE_LOG", "error")

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
from lance_sql.tables.namespace import filter_hook as _filter_hook
from udfs import sql_engine as _sql_engine

__version__ = "0.1.0"


# Public API objects live in their layers; they are imported lazily so that
# ``import lance_sql`` stays cheap and the format layer needs no DataFusion.
_LAZY = {
    "SessionContext": "lance_sql.engines.datafusion.context",
    "ServicePool": "lance_sql.engines.datafusion.service_pool",
    "open_metadata": "lance_sql.format.metadata",
    "DatasetMetadata": "lance_sql.format.metadata",
    "PartitionedNamespace": "lance_sql.tables.namespace.namespace",
    "PartitionSpec": "lance_sql.tables.namespace.spec",
    "PartitionField": "lance_sql.spec.partition_field",
    "Transform": "lance_sql.spec.partition_field",
    "list_versions": "lance_sql.format.metadata",
    "list_tags": "lance_sql.format.metadata",
    "plan_partitions": "lance_sql.planning.planner",
    "plan_join": "lance_sql.planning.joins",
    "plan_scan": "lance_sql.planning.namespace_scan",
    "search": "lance_sql.planning.search",
    "ScanPlan": "lance_sql.planning.scan_plan",
    "JoinPlan": "lance_sql.planning.joins",
    "StagedWrite": "lance_sql.tables.namespace.staging",
}


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
    *_LAZY,
]


def _load_filter_planner() -> None:
    """Register the pruning planner for namespace row operations (called on first need)."""
    import importlib

    importlib.import_module("lance_sql.planning.mutation_plan")


def _load_sql_engine() -> object:
    import importlib

    return importlib.import_module("lance_sql.engines.datafusion.sql_evaluation").ENGINE


# Services the lower layers use without importing the layers above them: the root
# runs before any module of the package, and registers loaders (nothing is imported
# until first use). These two modules import nothing heavy.
_filter_hook.register_filter_planner_loader(_load_filter_planner)
_sql_engine.register_sql_engine_loader(_load_sql_engine)  # type: ignore[arg-type]


def __getattr__(name: str) -> object:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'lance_sql' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
