"""Row estimates from Lance metadata, and the inner-join edits they decide (for :mod:`.join_stats`).

Estimates (docs/sql.md) only choose between plans that return the same rows:
:func:`swap_inner_joins` puts the smaller input on the left (DataFusion's hash
build side; without statistics it never swaps), :func:`reorder_flat_trees`
orders the inputs of inner-join trees DataFusion flattens and rebuilds greedily.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from substrait import algebra_pb2, plan_pb2

from lance_sql.engines.datafusion import join_order as jo
from lance_sql.engines.datafusion import substrait_plan as sp
from lance_sql.engines.datafusion.join_emit_names import output_fields
from lance_sql.format.metadata import open_metadata

Rel = algebra_pb2.Rel
J = algebra_pb2.JoinRel
INNER = J.JOIN_TYPE_INNER

#: the share of rows an estimate keeps per filter conjunct (no column statistics to do better)
FILTER_SELECTIVITY = 0.25
#: at most this many AND-ed conjuncts of one filter count (correlated conjuncts, such as the
#: two bounds of one range, select less than their product says)
MAX_FILTER_CONJUNCTS = 3
#: an inner join's inputs are swapped when the right one is estimated this many times smaller
SWAP_FACTOR = 2.0
_UNKNOWN = 1e15  # an input with no estimate counts as very large


class RelationRows:
    """Rows of Substrait relations, walked from the reads up (None: unknown).

    One walk for :class:`Estimator` and the exact bounds of :mod:`.join_stats`: a
    subclass says what a read, filter, aggregate, join and set operation return.
    """

    def rows(self, rel: Rel) -> Any:
        k = sp.kind(rel)
        body = getattr(rel, k, None)
        if k == "read" and body.HasField("virtual_table"):  # VALUES, SELECT without FROM
            return len(body.virtual_table.expressions)
        if k == "read":
            return self.read(rel)
        if k in ("filter", "project", "sort", "fetch"):
            below = self.rows(body.input)
            if k == "filter" and below is not None:
                return self.filter(below, body.condition)
            if k == "fetch" and (n := sp.fetch_count(body)) is not None:
                return n if below is None else min(n, below)
            return below
        if k == "aggregate":
            return self.aggregate(body)
        if k in ("join", "cross"):
            left, right = self.rows(body.left), self.rows(body.right)
            if k == "join":
                return self.join(body.type, left, right)
            return None if left is None or right is None else left * right
        if k == "set":
            parts = [self.rows(r) for r in body.inputs]
            return None if any(p is None for p in parts) else self.set(body.op, parts)
        return None


class Estimator(RelationRows):
    """Estimated output rows of Substrait relations.

    Tables: ``extra`` (estimated rows by name, e.g. storage-partitioned joins),
    then ``namespaces`` (by name), then ``lance_rows(name)`` (None: not Lance).
    """

    def __init__(
        self,
        functions: Mapping[int, str],
        namespaces: Mapping[str, Any],
        lance_rows: Callable[[str], int | None] = lambda _name: None,
        extra: Mapping[str, float] | None = None,
    ) -> None:
        #: function anchor -> name of the plan (:func:`.substrait_plan.function_names`)
        self.functions = dict(functions)
        self.namespaces, self.lance_rows, self.extra = namespaces, lance_rows, extra or {}

    def table_rows(self, name: str) -> float | None:
        if name in self.extra:
            return self.extra[name]
        table = self.namespaces.get(name)
        if table is not None:
            try:
                return namespace_rows(table.namespace)
            except Exception:
                return None
        n = self.lance_rows(name)
        return None if n is None else float(n)

    def guess(self, rel: Rel) -> float | None:
        """:meth:`rows`, None where it cannot estimate (an estimate is a hint only)."""
        try:
            return self.rows(rel)  # type: ignore[no-any-return]
        except Exception:
            return None

    def selectivity(self, condition: algebra_pb2.Expression) -> float:
        """The share of rows ``condition`` keeps: :data:`FILTER_SELECTIVITY` per conjunct."""
        n = len(sp.conjuncts(condition, self.functions))
        return FILTER_SELECTIVITY ** max(1, min(n, MAX_FILTER_CONJUNCTS))

    def read(self, rel: Rel) -> float | None:
        name = bare_table_name(rel)  # a qualified name may be another table than lance-sql's
        base = None if name is None else self.table_rows(name)
        if base is None:
            return None
        for key in ("filter", "best_effort_filter"):
            if rel.read.HasField(key):
                return base * self.selectivity(getattr(rel.read, key))
        return base

    def filter(self, below: float, condition: algebra_pb2.Expression) -> float:
        return below * self.selectivity(condition)

    def aggregate(self, agg: algebra_pb2.AggregateRel) -> float | None:
        if all(not g.expression_references for g in agg.groupings):
            return 1.0
        return self.rows(agg.input)

    def join(self, kind: int, left: float | None, right: float | None) -> float | None:
        if kind in sp.LEFT_ONLY_JOINS:
            return None if left is None else left / 2
        if kind in sp.RIGHT_ONLY_JOINS:
            return None if right is None else right / 2
        return None if left is None or right is None else max(left, right)

    def set(self, op: int, parts: list[float]) -> float:
        return sum(parts, 0.0)


def bare_table_name(rel: Rel) -> str | None:
    """The table a read names by a bare name (``t``), else None.

    A qualified name (``s2.t``) may be another table of the same last name.
    """
    if sp.kind(rel) != "read" or not rel.read.HasField("named_table"):
        return None
    names = rel.read.named_table.names
    return names[0] if len(names) == 1 else None


_NS_LOCK = threading.Lock()
_NS_ROWS: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()


def namespace_rows(namespace: Any) -> float:
    """Physical rows of a namespace view's partition tables (manifests only; cached per view)."""
    with _NS_LOCK:
        cached = _NS_ROWS.get(namespace)
    if cached is not None:
        return cached
    total = 0
    for entry in namespace.tables():
        meta = open_metadata(
            entry.uri, entry.read_version, storage_options=namespace.storage_options
        )
        total += sum(f.physical_rows for f in meta.fragments)
    with _NS_LOCK:
        _NS_ROWS[namespace] = float(total)
    return float(total)


# ---- swapping the inputs of one join -------------------------------------------------------

#: join type -> (the type with the inputs swapped, whether the output holds both inputs'
#: columns, so the old order must be emitted); a semi or anti join returns one input's columns
MIRROR: dict[int, tuple[int, bool]] = {
    INNER: (INNER, True),
    J.JOIN_TYPE_LEFT: (J.JOIN_TYPE_RIGHT, True),
    J.JOIN_TYPE_RIGHT: (J.JOIN_TYPE_LEFT, True),
    J.JOIN_TYPE_LEFT_SEMI: (J.JOIN_TYPE_RIGHT_SEMI, False),
    J.JOIN_TYPE_LEFT_ANTI: (J.JOIN_TYPE_RIGHT_ANTI, False),
}


def swap_inner_joins(
    plan: plan_pb2.Plan, estimate: Estimator, width: Callable[[Rel], int]
) -> list[str]:
    """Swap joins whose right input is estimated much smaller (in place); what was done.

    Inner joins only where DataFusion will not flatten and rebuild them: neither
    input nor the parent is an inner join directly; never where an input is hinted.
    """
    done: list[str] = []
    for rel, under_inner in _under_inner(plan):
        if sp.kind(rel) == "join" and rel.join.type in MIRROR and _swappable(rel.join, under_inner):
            left, right = estimate.rows(rel.join.left), estimate.rows(rel.join.right)
            smaller = left is not None and right is not None and right * SWAP_FACTOR <= left
            kind = J.JoinType.Name(rel.join.type).removeprefix("JOIN_TYPE_").lower()
            if smaller and _swap(rel, width):
                done.append(
                    f"{kind} join inputs swapped: the right input (~{right:,.0f} rows "
                    f"estimated) builds the hash table, the left (~{left:,.0f}) probes"
                )
    return done


def _under_inner(plan: plan_pb2.Plan) -> Iterator[tuple[Rel, bool]]:
    """Every relation (walked as edited when yielded) and whether its parent is an inner join."""
    pending: list[tuple[Rel, bool]] = [(sp.root_rel(plan), False)]
    while pending:
        rel, under_inner = pending.pop()
        yield rel, under_inner
        is_inner = sp.kind(rel) == "join" and rel.join.type == INNER
        pending.extend((child, is_inner) for child in sp.inputs(rel))


def _swappable(join: algebra_pb2.JoinRel, under_inner: bool) -> bool:
    if join.type == INNER and under_inner:
        return False
    for side in (join.left, join.right):
        if sp.kind(side) == "fetch":
            return False
        if join.type == INNER and sp.kind(side) == "join" and side.join.type == INNER:
            return False
    return True


def _swap(rel: Rel, width: Callable[[Rel], int]) -> bool:
    """Swap ``rel``'s inputs: mirrored type, renumbered conditions, the old column order."""
    join = rel.join
    mirrored, both = MIRROR[join.type]
    try:
        nl, nr = width(join.left), width(join.right)
        exprs = [join.expression] if join.HasField("expression") else []
        if join.HasField("post_join_filter"):
            exprs.append(join.post_join_filter)
        refs = [r for e in exprs for r in sp.field_references(e)]
    except Exception:  # a subquery, an outer reference, an input DataFusion cannot plan
        return False

    def moved(i: int) -> int:
        return i + nr if i < nl else i - nl

    for ref in refs:
        f = ref.direct_reference.struct_field
        f.field = moved(f.field)
    left = Rel()
    left.CopyFrom(join.left)
    join.left.CopyFrom(join.right)
    join.right.CopyFrom(left)
    join.type = mirrored
    if both:
        emit = join.common.emit.output_mapping
        old = list(emit) if join.common.HasField("emit") else list(range(nl + nr))
        del emit[:]
        emit.extend(moved(i) for i in old)
    return True


# ---- ordering the inputs of trees DataFusion flattens ----------------------------------------


def reorder_flat_trees(
    plan: plan_pb2.Plan, estimate: Estimator, width: Callable[[Rel], int]
) -> list[str]:
    """Order the inputs of directly nested inner-join trees (in place); what was done."""
    names = sp.function_names(plan)
    done: list[str] = []
    for rel, under_inner in _under_inner(plan):
        is_inner = sp.kind(rel) == "join" and rel.join.type == INNER
        if is_inner and not under_inner and _flat_tree(rel):
            try:
                line = _reorder(plan, rel, names, estimate, width)
            except ValueError:  # jo.NotFlat, or a condition it cannot renumber
                line = None
            if line is not None:
                done.append(line)
    return done


def _flat_tree(rel: Rel) -> bool:
    """Whether ``rel`` (an inner join) has an inner join directly as an input."""
    return any(
        sp.kind(c) == "join" and c.join.type == INNER for c in (rel.join.left, rel.join.right)
    )


def _reorder(
    plan: plan_pb2.Plan,
    rel: Rel,
    names: dict[int, str],
    estimate: Estimator,
    width: Callable[[Rel], int],
) -> str | None:
    tree, out, conds = jo.flat_tree(rel, names, width)
    if len(tree.leaves) < 3 or tree.between:
        return None  # the tree holds filters or projections between its joins: not flattened
    links = [{a[0], b[0]} for a, b in jo.equalities(conds, names)]
    rows = [estimate.rows(leaf) for leaf in tree.leaves]
    size = [_UNKNOWN if r is None else r for r in rows]
    order = _greedy_order(size, links)
    inputs = list(range(len(size)))
    if order is None or order == jo.connected(inputs[:1], inputs, links):
        return None  # DataFusion's own rebuild gives this order already
    b = jo.TreeBuilder(tree, conds, names, plan)
    cur = b.leaf(order[0])
    for i in order[1:]:
        cur = b.join(cur, b.leaf(i))
    rel.CopyFrom(b.emitting(out))
    shown = ", ".join(
        f"{_leaf_name(tree.leaves[i])} (~{'?' if rows[i] is None else f'{rows[i]:,.0f}'})"
        for i in order
    )
    return f"inner joins ordered by estimated rows: {shown}"


def _greedy_order(size: list[float], links: list[set[int]]) -> list[int] | None:
    """The smallest input linked to the largest, the largest, then the others smallest first."""
    largest = max(range(len(size)), key=lambda i: size[i])
    linked = [i for i in range(len(size)) if {i, largest} in links]
    if not linked:
        return None
    first = min(linked, key=lambda i: size[i])
    rest = sorted(
        (i for i in range(len(size)) if i not in (first, largest)),
        key=lambda i: size[i],
    )
    order = [first, largest, *rest]
    return jo.connected(order[:1], order, links)


def _leaf_name(rel: Rel) -> str:
    tables = [t for r in sp.walk(rel) if (t := sp.table_name(r)) is not None]
    return "+".join(tables) if tables else sp.kind(rel)


def native_width(rel: Rel) -> int | None:
    """How many columns ``rel`` outputs, read from the message (None: ask DataFusion)."""
    body = getattr(rel, sp.kind(rel), None)
    if body is not None and body.common.HasField("emit"):
        return len(body.common.emit.output_mapping)
    fields = output_fields(rel, lambda read: sp.read_fields(read.read))
    return None if fields is None else len(fields)


def output_width(ctx: Any, plan: plan_pb2.Plan, rel: Rel) -> int:
    """How many columns ``rel`` outputs: :func:`native_width`, else DataFusion says."""
    known = native_width(rel)
    if known is not None:
        return known
    logical = sp.from_substrait(ctx, sp.subplan(plan, rel))
    return len(ctx.create_dataframe_from_logical_plan(logical).schema())
