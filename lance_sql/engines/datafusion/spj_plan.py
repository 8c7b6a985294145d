"""The storage-partitioned-join pass over a query's Substrait plan.

Every join of two namespace scans on compatible partition keys is replaced, in
place, by a read of a query-scoped :class:`SpjTable` whose columns are exactly
the join's, in order (Substrait refers to columns by position); each group runs
the same join subtree over its partition tables. Conditions above the join stay
above it. A namespace join left alone gets a reason (EXPLAIN prints it).

Only where it pays (:func:`decide`, docs/joins.md): where one input is small after
its filters the plain hash join builds it once and streams the other, where SPJ
would read each group's share of the large input and pay a nested query per
group. Inputs are compared by :class:`.join_swap.Estimator`; the knobs are
``ctx.spj_small_side_rows`` (0: always SPJ) and ``ctx.spj_large_side_rows``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from substrait import algebra_pb2, plan_pb2

from lance_sql.engines.datafusion import substrait_plan as sp
from lance_sql.engines.datafusion.join_stats import table_count
from lance_sql.engines.datafusion.join_swap import Estimator
from lance_sql.engines.datafusion.namespace_provider import NamespaceTable
from lance_sql.engines.datafusion.spj_provider import SpjTable
from lance_sql.engines.datafusion.spj_sides import (
    LEFT_TABLE,
    RIGHT_TABLE,
    GroupQuery,
    SpjSide,
)
from lance_sql.planning.joins.plan import plan_join

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


#: column name prefixes of the two sides inside a group's query
LEFT_PREFIX, RIGHT_PREFIX = "l$", "r$"
#: Substrait join type -> JoinPlan ``how`` (mark and single joins are never storage-partitioned)
JOIN_HOW = {
    algebra_pb2.JoinRel.JOIN_TYPE_INNER: "inner",
    algebra_pb2.JoinRel.JOIN_TYPE_LEFT: "left",
    algebra_pb2.JoinRel.JOIN_TYPE_RIGHT: "right",
    algebra_pb2.JoinRel.JOIN_TYPE_OUTER: "full",
    algebra_pb2.JoinRel.JOIN_TYPE_LEFT_SEMI: "semi",
    algebra_pb2.JoinRel.JOIN_TYPE_LEFT_ANTI: "anti",
    algebra_pb2.JoinRel.JOIN_TYPE_RIGHT_SEMI: "right_semi",
    algebra_pb2.JoinRel.JOIN_TYPE_RIGHT_ANTI: "right_anti",
}


@dataclass
class SpjOutcome:
    """What the pass did: tables it created (EXPLAIN lines) and joins it left, with reasons."""

    used: list[SpjTable] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


def storage_partitioned_joins(
    ctx: Any,
    plan: plan_pb2.Plan,
    namespaces: Mapping[str, NamespaceTable],
    skip: Mapping[frozenset[str], str] | None = None,
) -> SpjOutcome:
    """Replace every compatible namespace join of ``plan`` (in place); see the module doc.

    ``skip``: namespace pairs (:func:`pair_key`) left to DataFusion, with why.
    """
    outcome = SpjOutcome()
    names = sp.function_names(plan)
    for rel in sp.walk(sp.root_rel(plan)):  # a replaced join is a read: its inputs not walked
        if sp.kind(rel) == "join":
            why = _replace(ctx, plan, rel, namespaces, names, outcome, skip or {})
            if why:
                outcome.reasons.append(why)
    return outcome


def compatible_pair(
    namespaces: Mapping[str, NamespaceTable],
    left: sp.ScanChain,
    right: sp.ScanChain,
    keys: list[tuple[str, str]],
    *,
    ctx: Any,
    functions: Mapping[int, str],
    skip: Mapping[frozenset[str], str],
) -> bool:
    """Whether two namespace scans joined (inner) on ``keys`` can be storage-partitioned,
    and whether it is worth it (:func:`decide`)."""
    lt, rt = namespaces[left.table], namespaces[right.table]
    if not plan_join(lt._current(), rt._current(), on=keys, how="inner").compatible:
        return False
    if pair_key(namespaces, left.table, right.table) in skip:
        return False
    return decide(ctx, left.read, right.read, namespaces, functions).use


def _namespaces_under(rel: algebra_pb2.Rel, namespaces: Mapping[str, Any]) -> list[str]:
    return [t for r in sp.walk(rel) if (t := sp.table_name(r)) is not None and t in namespaces]


def _replace(
    ctx: Any,
    plan: plan_pb2.Plan,
    rel: algebra_pb2.Rel,
    namespaces: Mapping[str, NamespaceTable],
    names: dict[int, str],
    outcome: SpjOutcome,
    skip: Mapping[frozenset[str], str],
) -> str | None:
    """Replace join ``rel``; None when replaced, else why not ("" when it is no namespace join)."""
    join = rel.join
    lns, rns = _namespaces_under(join.left, namespaces), _namespaces_under(join.right, namespaces)
    if not lns or not rns or join.common.hint.alias == sp.NOT_IN_HINT:
        return ""
    where = f"{'/'.join(lns)} x {'/'.join(rns)}"
    left, right = side_chain(join.left, namespaces), side_chain(join.right, namespaces)
    if left is None or right is None:
        return f"{where}: an input of the join is not a plain scan of a namespace"
    how = JOIN_HOW.get(join.type)
    if how is None:
        return f"{where}: {algebra_pb2.JoinRel.JoinType.Name(join.type)} joins are not supported"
    keys, one_sided = _keys(join, left.columns, right.columns, names)
    if not keys:
        return f"{where}: no equality of plain columns between the two sides"
    if one_sided:
        # DataFusion 55's Substrait consumer reads every column equality of a join
        # condition as a join key, even one between two columns of one side, and the
        # group query then fails to plan: leave such a join to DataFusion.
        return f"{where}: the ON condition equates two columns of one side"
    ltable, rtable = namespaces[left.table], namespaces[right.table]
    lsnap, rsnap = ltable._current(), rtable._current()
    jp = plan_join(lsnap, rsnap, on=keys, how=how)
    if not jp.compatible:
        return f"{where}: {jp.reason}"
    skipped = skip.get(pair_key(namespaces, left.table, right.table))
    if skipped is not None:
        return skipped
    decision = decide(ctx, join.left, join.right, namespaces, names, join=rel)
    if not decision.use:
        return f"{where}: {decision.explain()}"
    group_plan = sp.subplan(plan, rel)
    body = sp.root_rel(group_plan).join
    sp.rename_tables(body.left, left.table, LEFT_TABLE)
    sp.rename_tables(body.right, right.table, RIGHT_TABLE)
    # Distinct column names on the two sides: DataFusion 55's physical filter pushdown
    # resolves columns by name and can move a condition onto the other side of a join
    # whose sides share a column name (apache/datafusion#21246; a self-join always does).
    sp.prefix_read_columns(body.left, LEFT_TABLE, LEFT_PREFIX)
    sp.prefix_read_columns(body.right, RIGHT_TABLE, RIGHT_PREFIX)
    group = GroupQuery.of(ctx, group_plan)
    lside = SpjSide(lsnap, _prefixed(ltable.schema, LEFT_PREFIX), left.table, ltable.name)
    rside = SpjSide(rsnap, _prefixed(rtable.schema, RIGHT_PREFIX), right.table, rtable.name)
    table = SpjTable.register(ctx, "__lance_spj", jp, lside, rside, group)
    table.estimate, table.output_rows, table.where = decision.explain(), decision.output_rows, where
    # the group query is the join *with* its output mapping (``common.emit``): the
    # table's columns are already the join's output columns
    rel.CopyFrom(sp.table_read(ctx, table.name))
    outcome.used.append(table)
    return None


def side_chain(rel: algebra_pb2.Rel, namespaces: Any) -> sp.ScanChain | None:
    """A join input as one namespace scan, possibly inner-joined with other tables' scans
    (their columns map to None); None for no namespace read, two, or other relations."""
    k = sp.kind(rel)
    if k == "join":
        join = rel.join
        if join.type != algebra_pb2.JoinRel.JOIN_TYPE_INNER or join.HasField("post_join_filter"):
            return None
        left, right = _any_chain(join.left, namespaces), _any_chain(join.right, namespaces)
        if left is None or right is None or (left.table is None) == (right.table is None):
            return None
        main = left if left.table is not None else right
        return sp.ScanChain(
            main.read, main.table, tuple(sp.emitted(rel, [*left.columns, *right.columns]))
        )
    if k in sp.ROW_WISE and sp.kind(getattr(rel, k).input) == "join":
        below = side_chain(getattr(rel, k).input, namespaces)
        return None if below is None else sp.above(rel, below)
    chain = sp.scan_chain(rel)
    return chain if chain is not None and chain.table in namespaces else None


def _any_chain(rel: algebra_pb2.Rel, namespaces: Any) -> sp.ScanChain | None:
    """:func:`side_chain`, or a scan of another table (its columns all None, table None)."""
    chain = side_chain(rel, namespaces)
    if chain is not None:
        return chain
    other = sp.scan_chain(rel)
    if other is None or other.table in namespaces:
        return None
    return sp.ScanChain(other.read, None, tuple(None for _ in other.columns))  # type: ignore[arg-type]


def pair_key(namespaces: Mapping[str, NamespaceTable], left: str, right: str) -> frozenset[str]:
    """The registered names of two joined namespaces (stable across rewrites of one query)."""
    return frozenset((namespaces[left].name, namespaces[right].name))


def unaggregated_pairs(
    ctx: Any, plan: plan_pb2.Plan, used: list[SpjTable]
) -> dict[frozenset[str], str]:
    """The namespace pairs of ``used`` whose SPJ output stays large and unaggregated, with why.

    Called after :func:`.agg_plan.push_partial_aggregates`. The caller plans the
    query again with these pairs skipped: putting the plain join back here is not
    enough, the join reordering has already built the tree around the pair.
    """
    read = {sp.table_name(r) for r in sp.walk(sp.root_rel(plan)) if sp.kind(r) == "read"}
    out: dict[frozenset[str], str] = {}
    for table in used:
        why = unaggregated_cost(ctx, table.output_rows)
        if table.name in read and why is not None:
            out[frozenset((table.left.name, table.right.name))] = f"{table.where}: {why}"
    return out


def _prefixed(schema: pa.Schema, prefix: str) -> pa.Schema:
    """``schema`` with prefixed column names (field ids kept: sides read by field id)."""
    return pa.schema([f.with_name(prefix + f.name) for f in schema], metadata=schema.metadata)


def _keys(
    join: algebra_pb2.JoinRel,
    lcols: tuple[str | None, ...],
    rcols: tuple[str | None, ...],
    names: dict[int, str],
) -> tuple[list[tuple[str, str]], bool]:
    """The join's ``left column = right column`` equalities, as namespace column names, and
    whether it also has an equality of two columns of one side."""
    if not join.HasField("expression"):
        return [], False
    n = len(lcols)
    keys: list[tuple[str, str]] = []
    one_sided = False
    for conj in sp.conjuncts(join.expression, names):
        pair = sp.equality_fields(conj, names)
        if pair is None:
            continue
        a, b = sorted(pair)
        if a >= n or b < n:
            one_sided = True
            continue
        if b - n >= len(rcols):
            continue
        lc, rc = lcols[a], rcols[b - n]
        if lc is not None and rc is not None and (lc, rc) not in keys:
            keys.append((lc, rc))
    return keys, one_sided
