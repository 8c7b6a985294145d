"""Whether a compatible namespace join is worth running storage-partitioned (docs/joins.md).

SPJ pays where both inputs are large; where one is small after its filters the
plain hash join builds it once and streams the other, where SPJ would read each
group's share of the large input and pay a nested query per group. Inputs are
compared by :class:`.join_swap.Estimator`; the knobs are ``ctx.spj_small_side_rows``
(0: always SPJ) and ``ctx.spj_large_side_rows``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from substrait import algebra_pb2

from lance_sql.engines.datafusion.join_stats import table_count
from lance_sql.engines.datafusion.join_swap import Estimator

#: a join whose smaller input is estimated at most this many rows ...
SMALL_SIDE_ROWS = 500_000
#: ... and whose larger input at least this many runs as the plain join
LARGE_SIDE_ROWS = 1_000_000


@dataclass(frozen=True)
class SpjDecision:
    """The estimates of a join's two inputs and whether to storage-partition it."""

    use: bool
    left_rows: float | None
    right_rows: float | None
    small: int
    large: int
    #: the join's estimated output rows (None: unknown)
    output_rows: float | None = None

    def explain(self) -> str:
        """One line for EXPLAIN."""
        lr, rr = _fmt(self.left_rows), _fmt(self.right_rows)
        if self.use:
            return f"inputs ~{lr} x ~{rr} rows estimated"
        return (
            f"the smaller input is small (~{lr} x ~{rr} rows estimated; "
            f"<= {self.small:,} against >= {self.large:,}): the plain hash join builds it "
            "once and streams the larger one (ctx.spj_small_side_rows = 0 forces SPJ)"
        )


def _knobs(ctx: Any) -> tuple[int, int]:
    small = int(getattr(ctx, "spj_small_side_rows", SMALL_SIDE_ROWS))
    return small, int(getattr(ctx, "spj_large_side_rows", LARGE_SIDE_ROWS))


def _fmt(rows: float | None) -> str:
    return "?" if rows is None else f"{round(rows):,}"


def unaggregated_cost(ctx: Any, output_rows: float | None) -> str | None:
    """Why an SPJ whose output leaves its groups unaggregated is not worth it (None: it is).

    Every row a group outputs crosses from its nested query through Python into
    the outer query; with no partial aggregate in the groups that is the whole output.
    """
    small, large = _knobs(ctx)
    if small <= 0 or output_rows is None or output_rows < large:
        return None
    return (
        f"~{round(output_rows):,} output rows estimated and no aggregate inside the groups "
        f"(>= {large:,}): every row would cross from the groups into the query, the plain "
        "join streams them"
    )


def decide(
    ctx: Any,
    left: algebra_pb2.Rel,
    right: algebra_pb2.Rel,
    namespaces: Mapping[str, Any],
    functions: Mapping[int, str],
    join: algebra_pb2.Rel | None = None,
) -> SpjDecision:
    """Whether a join of ``left`` and ``right`` would be worth storage-partitioning
    (with the estimated output rows of ``join``, their join, when given).

    Also asked by :func:`.join_order.reorder_namespace_joins`: a pair SPJ will not
    run stays where DataFusion's own order puts it.
    """
    small, large = _knobs(ctx)
    # a dimension table joined into a side: its live rows
    estimate = Estimator(
        functions, namespaces, lambda n: getattr(table_count(ctx, n), "rows", None)
    )
    lr, rr = estimate.guess(left), estimate.guess(right)
    use = True
    if small > 0 and lr is not None and rr is not None:
        lo, hi = min(lr, rr), max(lr, rr)
        use = not (lo <= small and hi >= large)
    output = None if join is None else estimate.guess(join)
    return SpjDecision(use, lr, rr, small, large, output)
