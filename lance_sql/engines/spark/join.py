"""Partition-wise (storage-partitioned) join on Spark, without an Exchange.

A Python data source cannot report its partitioning, so Spark's own SPJ never applies:
the driver plans the join groups, ``spark.range(0, n, 1, n)`` gives ``n`` tasks without
a shuffle, and each joins its groups locally (:mod:`.join_arrow`).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from lance_sql.engines.spark.join_arrow import arrow_join_supports, join_group, read_side
from lance_sql.engines.spark.join_profile import profiled
from lance_sql.engines.spark.options import open_at, read_options
from lance_sql.engines.spark.read_packing import pack_groups, packing_from_spark, unit_bytes
from lance_sql.engines.spark.types import map_tasks
from lance_sql.errors import LanceSqlError

_SPARK_HOW = {"semi": "left_semi", "anti": "left_anti", "full": "full_outer"}


def _on_pairs(on: Any) -> list[tuple[str, str]]:
    if isinstance(on, str):
        return [(on, on)]
    return [(p, p) if isinstance(p, str) else (p[0], p[1]) for p in on]


def output_schema(left: pa.Schema, right: pa.Schema, how: str) -> pa.Schema:
    """The left columns, then the right ones (a clashing name gets ``_right``); semi/anti:
    the left ones."""
    if how in ("semi", "anti"):
        return left
    fields = list(left)
    for f in right:
        name = f"{f.name}_right" if f.name in left.names else f.name
        fields.append(pa.field(name, f.type, True))
    if how in ("right", "full"):
        fields[: len(left)] = [pa.field(f.name, f.type, True) for f in left]
    return pa.schema(fields)


def read_columns(
    left: pa.Schema, right: pa.Schema, on: Sequence[tuple[str, str]], how: str
) -> tuple[list[str], list[str]]:
    """Columns a task reads of each side: all, but only the keys on the right of semi/anti."""
    if how in ("semi", "anti"):
        return list(left.names), list(dict.fromkeys(rk for _, rk in on))
    return list(left.names), list(right.names)


def _batch_rows(spark: Any) -> int:
    """Rows per output batch: Spark's ``spark.sql.execution.arrow.maxRecordsPerBatch``."""
    try:
        n = int(spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch", "10000"))
    except (TypeError, ValueError):
        n = 10_000
    return n if n > 0 else 1 << 30


def partitioned_join(
    spark: Any,
    left_root: str,
    right_root: str,
    *,
    on: Any,
    how: str = "inner",
    left_filter: str | None = None,
    right_filter: str | None = None,
    left_version: int | None = None,
    right_version: int | None = None,
    storage_options: Mapping[str, str] | None = None,
    tasks: int | None = None,
) -> Any:
    """Join two partitioned namespaces on Spark, shuffle-free: each task joins whole join groups.

    ``on``: a column name, or a list of names or ``(left, right)`` pairs. ``how``: inner,
    left, right, full, semi, anti. ``left_filter`` / ``right_filter``: SQL applied to
    that side (and pruning it). Output: the left columns, then the right ones (a clashing
    name gets ``_right``); semi/anti: the left ones. Partitionings not compatible for
    ``on``: a warning and Spark's own join of the two reads. ``tasks``: Spark tasks
    (default: groups packed by bytes, :func:`.read_packing.pack_groups`).
    """
    from lance_sql.planning.joins import plan_join
    from lance_sql.planning.joins.plan import normalize_how

    if tasks is not None and (isinstance(tasks, bool) or not isinstance(tasks, int) or tasks < 1):
        raise LanceSqlError(f"partitioned_join: tasks={tasks!r} is not a positive integer")
    pairs = _on_pairs(on)
    how = normalize_how(how)
    lns = open_at(left_root, left_version, storage_options)
    rns = open_at(right_root, right_version, storage_options)
    left_root, right_root = str(lns.root), str(rns.root)
    plan = plan_join(lns, rns, pairs, how, left_filter=left_filter, right_filter=right_filter)
    lschema, rschema = lns.schema, rns.schema
    reason = plan.reason if not plan.compatible else None
    if reason is None and not arrow_join_supports(lschema, rschema, pairs, how):
        reason = "key types Arrow's hash join does not compare"
    if reason is not None:
        warnings.warn(
            f"partitioned_join {left_root} x {right_root}: not partition-compatible "
            f"({reason}); falling back to a Spark join with a shuffle",
            stacklevel=2,
        )
        return _spark_join(
            spark,
            left_root,
            right_root,
            pairs,
            how,
            left_filter,
            right_filter,
            left_version=lns.manifest_version,
            right_version=rns.manifest_version,
            storage_options=storage_options,
        )
    groups = [
        (
            lns.scan_units([p.object_id for p in g.left]) if g.left else [],
            rns.scan_units([p.object_id for p in g.right]) if g.right else [],
        )
        for g in plan.groups
    ]
    out = output_schema(lschema, rschema, how)
    lcols, rcols = read_columns(lschema, rschema, pairs, how)
    lfilter, rfilter = plan.left_filter, plan.right_filter
    batch_rows = _batch_rows(spark)

    def joined(task_groups: Sequence[tuple[Any, Any]]) -> Iterator[pa.RecordBatch]:
        for lu, ru in task_groups:
            left = read_side(lu, lfilter, lschema, lcols)
            right = read_side(ru, rfilter, rschema, rcols)
            for rb in join_group(left, right, pairs, how, out, batch_rows):
                if rb.num_rows:
                    yield rb

    def task(task_groups: Sequence[tuple[Any, Any]]) -> Iterator[pa.RecordBatch]:
        return profiled(joined(task_groups))  # LANCE_SQL_JOIN_PROFILE: see join_profile

    sizes = [sum(unit_bytes(u) for u in (*lu, *ru)) for lu, ru in groups]
    bins = pack_groups(sizes, packing_from_spark(spark), tasks)
    return map_tasks(spark, [[groups[i] for i in b] for b in bins], task, out)


def _spark_join(
    spark: Any,
    left_root: str,
    right_root: str,
    on: Sequence[tuple[str, str]],
    how: str,
    left_filter: str | None,
    right_filter: str | None,
    *,
    left_version: int | None = None,
    right_version: int | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> Any:
    """Spark's own join of two ``lance_ns`` reads at the planned versions, named like
    :func:`output_schema`.

    The side filters go to the ``where`` option: read as DataFusion SQL, never as Spark SQL
    (``k / 2 = 3`` is integer division in one, not in the other).
    """
    from pyspark.sql import functions as F

    def load(root: str, version: int | None, where: str | None) -> Any:
        options = read_options(root, version, storage_options, where=where)
        return spark.read.format("lance_ns").options(**options).load()

    ldf = load(left_root, left_version, left_filter)
    rdf = load(right_root, right_version, right_filter)
    renamed = {c: (f"{c}_right" if c in ldf.columns else c) for c in rdf.columns}
    rdf = rdf.select([F.col(c).alias(n) for c, n in renamed.items()])
    cond = [ldf[lk] == rdf[renamed[rk]] for lk, rk in on]
    return ldf.join(rdf, cond, _SPARK_HOW.get(how, how))
