"""``register_namespace``: a directory namespace as DataFusion tables (a partitioned one as
one :class:`~.namespace_provider.NamespaceTable`, a plain one as a schema of its tables)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from lance_sql.engines.datafusion.lance_provider import LanceDatasetTable
from lance_sql.engines.datafusion.namespace_plans import PlannerPrune, PruneHook
from lance_sql.engines.datafusion.namespace_provider import NamespaceTable
from lance_sql.tables.lance_table import LanceTable
from lance_sql.tables.namespace.layout import root_uri
from lance_sql.tables.namespace.manifest_table import read_manifest
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.namespace.properties import NotPartitionedError, parse_properties
from lance_sql.tables.namespace.reader import table_entries


def register_namespace(
    ctx: Any,
    name: str,
    root: str | os.PathLike[str],
    *,
    version: int | None = None,
    storage_options: Mapping[str, str] | None = None,
    prune: PruneHook | str | None = "planner",
    partitions: int | None = None,
) -> NamespaceTable | list[str]:
    """Register the directory namespace at ``root`` in ``ctx`` (see ``SessionContext``).

    ``prune``: ``"planner"`` (:class:`PlannerPrune`), None (read every partition table)
    or a callable ``prune(filter, namespace) -> object ids | None``.
    """
    root_s = root_uri(root)
    snapshot = read_manifest(root_s, version, storage_options=storage_options)
    try:
        parse_properties(snapshot.properties)
    except NotPartitionedError:
        return _register_directory(ctx, name, root_s, snapshot, storage_options, partitions)
    ns = PartitionedNamespace(root_s, snapshot, storage_options=storage_options, read_only=True)
    if prune == "planner":
        prune = PlannerPrune(ns.schema)
    elif isinstance(prune, str):
        raise ValueError(f"prune must be 'planner', None or a callable, got {prune!r}")
    provider = NamespaceTable(
        ns, name=name, follow_latest=version is None, prune=prune, partitions=partitions
    )
    if ctx.table_exist(name):
        ctx.deregister_table(name)
    ctx.register_table(name, provider)
    return provider


def _register_directory(
    ctx: Any,
    name: str,
    root: str,
    snapshot: Any,
    storage_options: Mapping[str, str] | None,
    partitions: int | None,
) -> list[str]:
    from datafusion.catalog import Schema

    entries = table_entries(snapshot.rows, root, [], partitions_only=False)
    schema = Schema.memory_schema()
    k = partitions or max(1, os.cpu_count() or 1)
    names = []
    for entry in entries:
        table = LanceTable.open(
            entry.uri, version=entry.read_version, storage_options=storage_options
        )
        schema.register_table(
            entry.object_id,
            LanceDatasetTable(table, name=f"{name}.{entry.object_id}", partitions=k),
        )
        names.append(entry.object_id)
    catalog = ctx.catalog()
    if name in catalog.schema_names():
        catalog.deregister_schema(name)
    catalog.register_schema(name, schema)
    return names
