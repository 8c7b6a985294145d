"""Storage-partitioned joins: which partitions of two namespaces can only meet each other.

- :mod:`.keys` — join-key columns and which values compare equal across types;
- :mod:`.compatibility` — compatible partition fields and the common group key;
- :mod:`.grouping` — each partition's group key, from its own spec version;
- :mod:`.plan` — :func:`plan_join` / :func:`plan_join_partitions` and
  :class:`JoinPlan` (JSON form for shipping to tasks, through
  :mod:`lance_sql.planning.plan_json`).

Running a plan in DataFusion: :mod:`lance_sql.engines.datafusion.spj_plan`.

Rules and formats: ``docs/joins.md``.
"""

from __future__ import annotations

from lance_sql.planning.joins.grouping import PartitionRef
from lance_sql.planning.joins.plan import (
    JoinGroup,
    JoinPlan,
    plan_join,
    plan_join_partitions,
)

__all__ = ["JoinGroup", "JoinPlan", "PartitionRef", "plan_join", "plan_join_partitions"]
