"""The writable namespace behind a registered table and a DML statement's input rows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
from sqlglot import exp

from lance_sql.engines.datafusion.dataframe import LanceDataFrame
from lance_sql.engines.datafusion.lance_provider import catalog_name
from lance_sql.errors import (
    LanceSqlError,
    SchemaMismatchError,
    UnsupportedFeatureError,
    datafusion_error_kinds,
)


def registered_target(ctx: Any, name: str, *, as_written: bool = False) -> tuple[str, Any] | None:
    """("namespace" | "lance", table) registered as ``name`` (a plan's name: exactly, as
    ``"Foo"`` and ``foo`` are two tables; ``as_written``: then as an identifier resolves)."""
    kinds = (("namespace", ctx.registered_namespaces()), ("lance", ctx._lance_tables))
    for key in (name, catalog_name(name)) if as_written else (name,):
        for kind, tables in kinds:
            if key in tables:
                return kind, tables[key]
    return None


def writable_namespace(table: Any, name: str) -> Any:
    """The latest writable view of the namespace behind ``table`` (a ``NamespaceTable``)."""
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    if not table.follow_latest:
        raise UnsupportedFeatureError(
            f"namespace {name!r} is registered at a fixed __manifest version "
            f"({table.namespace.manifest_version}); register it without a version to write"
        )
    return PartitionedNamespace.open(table.root, storage_options=table.storage_options)


def source_rows(ctx: Any, plan: Any, what: str) -> pa.Table:
    """Run a DML statement's input plan; a value that does not fit its column is a
    :class:`SchemaMismatchError`."""
    try:
        return LanceDataFrame(ctx.create_dataframe_from_logical_plan(plan), ctx).to_arrow_table()
    except LanceSqlError:
        raise
    except Exception as exc:
        text, kinds = str(exc), datafusion_error_kinds(exc)
        if "not_null" in kinds:
            schema = ctx.create_dataframe_from_logical_plan(plan).schema()
            names = [f.name for f in schema if not f.nullable]
            reason = next((ln for ln in text.splitlines() if "non-nullable" in ln), text)
            raise SchemaMismatchError(
                f"{what}: NULL given for a NOT NULL column (NOT NULL: {names}): {reason.strip()}"
            ) from exc
        if "cast" in kinds:
            reason = next((ln for ln in text.splitlines() if "ast" in ln), text)
            raise SchemaMismatchError(f"{what}: {reason.strip()}") from exc
        raise


def resolved_name(ident: Any) -> str:
    """A sqlglot identifier as DataFusion resolves it: unquoted means lower case."""
    if not isinstance(ident, exp.Identifier):
        return str(ident.name if hasattr(ident, "name") else ident)
    return ident.name if ident.quoted else ident.name.lower()


def schema_column(col: str, schema: pa.Schema, missing: Callable[[], Exception]) -> str:
    """A column as written, or the one column of ``schema`` it names case-insensitively;
    else ``missing()`` is raised."""
    if col in schema.names:
        return col
    folded = [n for n in schema.names if n.lower() == col.lower()]
    if len(folded) == 1:
        return folded[0]
    raise missing()
