"""Storage-partitioned joins: which partitions of two namespaces can only meet each other.

Rules and formats: ``docs/joins.md``; run in DataFusion by
:mod:`lance_sql.engines.datafusion.spj_plan`.
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
