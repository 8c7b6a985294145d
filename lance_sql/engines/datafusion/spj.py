"""Run a :class:`~lance_sql.planning.joins.JoinPlan` in DataFusion without a shuffle.

DataFusion cannot be told from Python that two tables are co-partitioned. What
works (NOTES section 1): write the join as ``UNION ALL`` of one join per group,
each side a table that scans only that group's partition tables, and plan it
with ``repartition_joins`` and round-robin repartitioning off: every group
becomes a ``HashJoinExec`` under one ``UnionExec``, with no ``RepartitionExec``.
Each side of a group is a :class:`NamespaceTable` pinned to the plan's
``__manifest`` snapshot whose pruning hook returns exactly the group's object ids.
A plan that is not compatible runs as one ordinary join of the two namespaces.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import datafusion

from lance_sql.engines.datafusion.namespace_provider import NamespaceTable
from lance_sql.planning.joins.plan import JoinGroup, JoinPlan
from lance_sql.tables.namespace.namespace import PartitionedNamespace

SPJ_CONFIG = {
    "datafusion.optimizer.repartition_joins": "false",
    "datafusion.optimizer.enable_round_robin_repartition": "false",
}
#: the SQL join keyword of each JoinPlan ``how``
JOIN_SQL = {
    "inner": "JOIN",
    "left": "LEFT JOIN",
    "right": "RIGHT JOIN",
    "full": "FULL JOIN",
    "semi": "LEFT SEMI JOIN",
    "anti": "LEFT ANTI JOIN",
    "right_semi": "RIGHT SEMI JOIN",
    "right_anti": "RIGHT ANTI JOIN",
}


def spj_context() -> datafusion.SessionContext:
    """A SessionContext configured so per-group joins are not repartitioned."""
    config = datafusion.SessionConfig()
    for key, value in SPJ_CONFIG.items():
        config = config.set(key, value)
    return datafusion.SessionContext(config)


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _select_list(
    plan: JoinPlan, left_cols: Sequence[str], right_cols: Sequence[str], right_prefix: str
) -> str:
    if plan.how in ("semi", "anti"):
        return ", ".join(f"l.{_q(c)}" for c in left_cols)
    if plan.how in ("right_semi", "right_anti"):
        return ", ".join(f"r.{_q(c)}" for c in right_cols)
    taken = set(left_cols)
    items = [f"l.{_q(c)} AS {_q(c)}" for c in left_cols]
    items += [f"r.{_q(c)} AS {_q(right_prefix + c if c in taken else c)}" for c in right_cols]
    return ", ".join(items)


def spj_dataframe(
    plan: JoinPlan,
    left: PartitionedNamespace,
    right: PartitionedNamespace,
    *,
    ctx: datafusion.SessionContext | None = None,
    left_columns: Sequence[str] | None = None,
    right_columns: Sequence[str] | None = None,
    right_prefix: str = "right_",
    name: str = "spj",
) -> datafusion.DataFrame:
    """The join of ``plan`` as a DataFrame (UNION ALL of per-group joins).

    ``left`` / ``right`` must be the namespace snapshots the plan was made
    from. Output columns: the left columns, then the right ones (a right
    column whose name is taken gets ``right_prefix``); semi/anti joins return
    one side only. ``ctx`` must have :data:`SPJ_CONFIG` set (default: a new
    :func:`spj_context`).
    """
    ctx = ctx or spj_context()
    lcols = list(left_columns or left.schema.names)
    rcols = list(right_columns or right.schema.names)
    cond = " AND ".join(f"l.{_q(a)} = r.{_q(b)}" for a, b in plan.on)
    select = _select_list(plan, lcols, rcols, right_prefix)
    join = JOIN_SQL[plan.how]
    if not plan.compatible:
        lname, rname = f"{name}_left", f"{name}_right"
        _register(ctx, lname, left, None)
        _register(ctx, rname, right, None)
        return ctx.sql(f"SELECT {select} FROM {_q(lname)} AS l {join} {_q(rname)} AS r ON {cond}")
    groups: Sequence[JoinGroup] = plan.groups or (JoinGroup((), (), ()),)
    parts = []
    for i, g in enumerate(groups):
        lname, rname = f"{name}_g{i}_left", f"{name}_g{i}_right"
        _register(ctx, lname, left, [r.object_id for r in g.left])
        _register(ctx, rname, right, [r.object_id for r in g.right])
        parts.append(f"SELECT {select} FROM {_q(lname)} AS l {join} {_q(rname)} AS r ON {cond}")
    return ctx.sql("\nUNION ALL\n".join(parts))


def _register(
    ctx: datafusion.SessionContext,
    name: str,
    ns: PartitionedNamespace,
    object_ids: list[str] | None,
) -> None:
    def prune(_filter: Any, _ns: PartitionedNamespace) -> list[str] | None:
        return None if object_ids is None else list(object_ids)

    table = NamespaceTable(ns, name=name, follow_latest=False, prune=prune, partitions=1)
    if ctx.table_exist(name):
        ctx.deregister_table(name)
    ctx.register_table(name, table)


__all__ = ["JOIN_SQL", "SPJ_CONFIG", "spj_context", "spj_dataframe"]
