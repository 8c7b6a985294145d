"""Spark ``replaceWhere`` overwrites: the face of ``ns.overwrite(data, where=...)``.

The rows matching the filter are replaced by the DataFrame's in one ``__manifest``
commit. The filter is parsed as ``ns.overwrite`` parses it and planned on the driver
before any task runs; a task fails on a row outside it
(:class:`~lance_sql.tables.namespace.overwrite.RowsOutsideFilterError`). The commit
runs :func:`~lance_sql.tables.namespace.delete.delete_matching` and adopts the staged
files into the same mutation. A concurrent ``__manifest`` commit raises
``CommitConflictError``: staged files cannot be replayed, so unlike ``ns.overwrite``
it is not retried.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from lance_sql.errors import LanceSqlError

OPTION = "replaceWhere"


def check_filter(root: str, where: str, schema: pa.Schema) -> None:
    """Plan ``where`` over ``schema`` as the row operations' condition (no rows read)."""
    from lance_sql.tables.namespace.sql_eval import SqlExpressionError, row_condition

    try:
        row_condition(schema, where)
    except SqlExpressionError as exc:
        raise LanceSqlError(f"lance_ns {root}: option {OPTION}: {exc}") from exc


def checked(batches: Iterable[pa.RecordBatch], root: str, where: str) -> Iterator[pa.RecordBatch]:
    """``batches`` (namespace schema), refusing the first one with a row outside ``where``."""
    from lance_sql.tables.namespace.overwrite import RowsOutsideFilterError
    from lance_sql.tables.namespace.sql_eval import matching_mask

    for batch in batches:
        if batch.num_rows:
            mask = matching_mask(pa.Table.from_batches([batch]), where)
            outside = batch.num_rows - int(mask.true_count)
            if outside:
                raise RowsOutsideFilterError(
                    f"lance_ns {root}: {outside} row(s) of the DataFrame do not match option "
                    f"{OPTION} ({where}); nothing was written"
                )
        yield batch


def commit_replace_where(plan: Any, where: str, stages: Sequence[Any]) -> Any:
    """Delete the rows ``where`` matches and adopt ``stages``, in one ``__manifest`` commit."""
    from lance_sql.tables.namespace.delete import delete_matching
    from lance_sql.tables.namespace.mutation import Mutation
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    ns = PartitionedNamespace.open(plan.root, storage_options=plan.storage_options)
    m = Mutation(ns)
    delete_matching(m, where)
    return commit_with_stages(m, stages)


def commit_with_stages(m: Any, stages: Sequence[Any]) -> Any:
    """Commit ``m`` (a :class:`Mutation` without inserts) with the staged files as its new rows.

    The staged files join their partitions in the mutation's snapshot (after
    its drops: a dropped partition's rows go to a new table, files moved there).
    """
    snap = m.commit(stages)
    m.ns._set_snapshot(snap)
    return snap
