"""Put two compatibly partitioned namespaces of an inner-join chain next to each other.

DataFusion joins ``customer, orders, lineitem`` as ``(customer JOIN orders) JOIN
lineitem``, so :mod:`.spj_plan` never sees orders and lineitem as one join's
inputs. Each inner-join tree is flattened and rebuilt with such a pair joined
first; every condition lands on the lowest join that sees its columns and the
tree emits its original column order, so the rows are the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from substrait import algebra_pb2, plan_pb2

from lance_sql.engines.datafusion import substrait_plan as sp

Rel = algebra_pb2.Rel
Expr = algebra_pb2.Expression
#: A column of the flattened tree: (input number, field number within that input)
Col = tuple[int, int]

INNER = algebra_pb2.JoinRel.JOIN_TYPE_INNER


class NotFlat(ValueError):
    """The subtree is not a tree of inner joins this pass can rebuild.

    Callers catch ``ValueError``, which :mod:`.substrait_plan` also raises for a
    subquery, an outer reference or a plan that declares no function.
    """


@dataclass
class _Tree:
    leaves: list[Rel] = field(default_factory=list)
    widths: list[int] = field(default_factory=list)
    conds: list[Expr] = field(default_factory=list)  # field refs hold 1_000_000 * leaf + field
    between: int = 0  # filters and projections with joins below them, flattened


_SCALE = 1_000_000


def reorder_namespace_joins(
    plan: plan_pb2.Plan,
    is_pair: Callable[[sp.ScanChain, sp.ScanChain, list[tuple[str, str]]], bool],
    namespaces: Mapping[str, Any],
    width: Callable[[Rel], int],
) -> int:
    """Rebuild inner-join trees so a compatible namespace pair is joined first; how many.

    ``is_pair(left, right, keys)`` says whether two namespace scans joined on
    ``keys`` (column pairs) would be storage-partitioned; ``width(rel)`` is
    the number of output columns of a relation that is not a join.
    """
    names = sp.function_names(plan)
    done = 0
    pending = [sp.root_rel(plan)]
    while pending:
        rel = pending.pop()
        if sp.kind(rel) == "join" and rel.join.type == INNER:
            try:
                if _rebuild(plan, rel, names, is_pair, namespaces, width):
                    done += 1
                    continue
            except ValueError:  # NotFlat, or a condition this pass cannot renumber
                pass
        pending.extend(sp.inputs(rel))
    return done


def _flatten(rel: Rel, tree: _Tree, width: Callable[[Rel], int]) -> list[Col]:
    """Add ``rel`` to ``tree``; the columns it outputs, in order."""
    k = sp.kind(rel)
    if k == "join" and rel.join.type == INNER and not rel.join.HasField("post_join_filter"):
        cols = _flatten(rel.join.left, tree, width) + _flatten(rel.join.right, tree, width)
        if rel.join.HasField("expression"):
            tree.conds.append(_globalize(rel.join.expression, cols))
        return sp.emitted(rel, cols)
    if k == "filter" and _is_join_tree(rel.filter.input):
        n = len(tree.leaves)
        cols = _flatten(rel.filter.input, tree, width)
        tree.between += len(tree.leaves) - n > 1
        tree.conds.append(_globalize(rel.filter.condition, cols))
        return sp.emitted(rel, cols)
    if k == "project" and _is_join_tree(rel.project.input):
        if any(sp.field_ref(e) is None for e in rel.project.expressions):
            raise NotFlat("a computed projection between joins")
        n = len(tree.leaves)
        cols = _flatten(rel.project.input, tree, width)
        tree.between += len(tree.leaves) - n > 1
        return sp.through(rel, cols)
    n = len(tree.leaves)
    tree.leaves.append(rel)
    try:
        tree.widths.append(width(rel))
    except Exception as exc:  # an input DataFusion cannot plan on its own
        raise NotFlat(f"width of an input: {exc}") from exc
    return [(n, j) for j in range(tree.widths[-1])]


def flat_tree(
    rel: Rel, names: dict[int, str], width: Callable[[Rel], int]
) -> tuple[_Tree, list[Col], list[Expr]]:
    """The flattened tree of ``rel``, the columns it outputs and its conditions' conjuncts."""
    tree = _Tree()
    out = _flatten(rel, tree, width)
    return tree, out, [c for cond in tree.conds for c in sp.conjuncts(cond, names)]


def equalities(conds: list[Expr], names: dict[int, str]) -> list[tuple[Col, Col]]:
    """The column equalities between two inputs among ``conds`` (what joins them)."""
    out = []
    for cond in conds:
        pair = sp.equality_fields(cond, names)
        if pair is not None:
            (la, ja), (lb, jb) = ((g // _SCALE, g % _SCALE) for g in pair)
            if la != lb:
                out.append(((la, ja), (lb, jb)))
    return out


def _is_join_tree(rel: Rel) -> bool:
    k = sp.kind(rel)
    if k == "join":
        return rel.join.type == INNER
    return k in ("filter", "project") and _is_join_tree(getattr(rel, k).input)


def _globalize(expr: Expr, cols: list[Col]) -> Expr:
    out = Expr()
    out.CopyFrom(expr)
    for ref in sp.field_references(out):
        leaf, j = cols[ref.direct_reference.struct_field.field]
        ref.direct_reference.struct_field.field = leaf * _SCALE + j
    return out


def _localize(expr: Expr, cols: list[Col]) -> Expr:
    index = {c: i for i, c in enumerate(cols)}
    out = Expr()
    out.CopyFrom(expr)
    for ref in sp.field_references(out):
        g = ref.direct_reference.struct_field.field
        ref.direct_reference.struct_field.field = index[(g // _SCALE, g % _SCALE)]
    return out


def _leaves_of(expr: Expr) -> set[int]:
    return {r.direct_reference.struct_field.field // _SCALE for r in sp.field_references(expr)}


def _rebuild(
    plan: plan_pb2.Plan,
    rel: Rel,
    names: dict[int, str],
    is_pair: Callable[[sp.ScanChain, sp.ScanChain, list[tuple[str, str]]], bool],
    namespaces: Mapping[str, Any],
    width: Callable[[Rel], int],
) -> bool:
    tree, out, conds = flat_tree(rel, names, width)
    if len(tree.leaves) < 3:
        return False
    chains = {
        i: c
        for i, leaf in enumerate(tree.leaves)
        if (c := sp.scan_chain(leaf)) is not None and c.table in namespaces
    }
    pair = _pick_pair(conds, chains, names, is_pair)
    if pair is None or _already_siblings(rel, pair, tree):
        return False
    linked = [_leaves_of(c) for c in conds]
    sides = _attach(pair, linked, tree, set(chains))
    first = [*sides[0], *sides[1]]
    order = connected(first, list(range(len(tree.leaves))), linked)
    if order is None:  # an input joined to the others by no condition: leave the tree alone
        return False
    rest = order[len(first) :]
    rel.CopyFrom(_build(tree, sides, rest, conds, names, plan).emitting(out))
    return True


def _attach(
    pair: tuple[int, int], linked: list[set[int]], tree: _Tree, namespaces: set[int]
) -> tuple[list[int], list[int]]:
    """The inputs each side of the pair takes into its groups, the pair's scan first.

    A filtered non-namespace scan joined to one side only joins that side inside
    every group (TPC-H q8, q9: lineitem then meets only the kept parts). Inner
    joins distribute over the groups; such an input is read once per group,
    which is why only filtered scans qualify.
    """
    sides = ([pair[0]], [pair[1]])
    candidates = [
        i
        for i, leaf in enumerate(tree.leaves)
        if i not in namespaces and i not in pair and sp.scan_chain(leaf) and filters_rows(leaf)
    ]
    changed = True
    while changed:
        changed = False
        for leaf in candidates:
            if leaf in sides[0] or leaf in sides[1]:
                continue
            touch = [
                side
                for side in sides
                if any(leaf in s and len(s) > 1 and s <= set(side) | {leaf} for s in linked)
            ]
            if len(touch) == 1:
                touch[0].append(leaf)
                changed = True
    return sides


def filters_rows(rel: Rel) -> bool:
    """Whether ``rel`` filters rows anywhere: a filter, or a read with a (best-effort) filter."""
    for r in sp.walk(rel):
        k = sp.kind(r)
        if k == "filter" or (
            k == "read" and (r.read.HasField("filter") or r.read.HasField("best_effort_filter"))
        ):
            return True
    return False


def _pick_pair(
    conds: list[Expr],
    chains: dict[int, sp.ScanChain],
    names: dict[int, str],
    is_pair: Callable[[sp.ScanChain, sp.ScanChain, list[tuple[str, str]]], bool],
) -> tuple[int, int] | None:
    keys: dict[tuple[int, int], list[tuple[str, str]]] = {}
    for (la, ja), (lb, jb) in equalities(conds, names):
        if la not in chains or lb not in chains:
            continue
        if la > lb:
            (la, ja), (lb, jb) = (lb, jb), (la, ja)
        ca, cb = chains[la].columns[ja], chains[lb].columns[jb]
        if ca is not None and cb is not None:
            keys.setdefault((la, lb), []).append((ca, cb))
    for (a, b), on in keys.items():
        if is_pair(chains[a], chains[b], on):
            return a, b
    return None


def _already_siblings(rel: Rel, pair: tuple[int, int], tree: _Tree) -> bool:
    """Whether the pair's two scans are the two inputs of one join already."""
    a, b = (tree.leaves[i] for i in pair)
    for node in sp.walk(rel):
        if sp.kind(node) == "join":
            left, right = node.join.left, node.join.right
            if (left == a and right == b) or (left == b and right == a):
                return True
    return False


def connected(first: list[int], inputs: list[int], linked: list[set[int]]) -> list[int] | None:
    """``first``, then every other of ``inputs``, each connected by a condition to those
    before it (the first such in ``inputs`` order); None when one is connected to none."""
    order = list(first)
    rest = [i for i in inputs if i not in order]
    while rest:
        have = set(order)
        nxt = next(
            (i for i in rest if any(i in s and s & have and s <= have | {i} for s in linked)), None
        )
        if nxt is None:
            return None
        order.append(nxt)
        rest.remove(nxt)
    return order


class TreeBuilder:
    """Joins inputs one by one, each condition on the lowest join that sees its inputs."""

    def __init__(
        self, tree: _Tree, conds: list[Expr], names: dict[int, str], plan: plan_pb2.Plan
    ) -> None:
        self.tree, self.conds, self.names, self.plan = tree, conds, names, plan
        self.placed = [False] * len(conds)
        self.cur: tuple[Rel, list[Col], set[int]] | None = None  # the last join built

    def leaf(self, i: int) -> tuple[Rel, list[Col], set[int]]:
        rel = Rel()
        rel.CopyFrom(self.tree.leaves[i])
        return rel, [(i, j) for j in range(self.tree.widths[i])], {i}

    def join(
        self, left: tuple[Rel, list[Col], set[int]], right: tuple[Rel, list[Col], set[int]]
    ) -> tuple[Rel, list[Col], set[int]]:
        cols = left[1] + right[1]
        have = left[2] | right[2]
        here = []
        for i, cond in enumerate(self.conds):
            if not self.placed[i] and _leaves_of(cond) <= have:
                self.placed[i] = True
                here.append(_localize(cond, cols))
        out = Rel()
        out.join.type = INNER
        out.join.left.CopyFrom(left[0])
        out.join.right.CopyFrom(right[0])
        if here:
            out.join.expression.CopyFrom(_and(here, self.names, self.plan))
        self.cur = (out, cols, have)
        return self.cur

    def emitting(self, out: list[Col]) -> Rel:
        """The tree joined last, emitting the original tree's columns ``out``."""
        if not all(self.placed):
            raise NotFlat("a condition refers to no input")
        assert self.cur is not None
        rebuilt, cols, _ = self.cur
        position = {c: i for i, c in enumerate(cols)}
        emit = rebuilt.join.common.emit.output_mapping
        del emit[:]
        emit.extend(position[c] for c in out)
        return rebuilt

    def side(self, leaves: list[int]) -> tuple[Rel, list[Col], set[int]]:
        """The side's scan, then each input it takes as the build (left) side over it."""
        cur = self.leaf(leaves[0])
        for leaf in leaves[1:]:
            cur = self.join(self.leaf(leaf), cur)
        return cur


def _build(
    tree: _Tree,
    sides: tuple[list[int], list[int]],
    rest: list[int],
    conds: list[Expr],
    names: dict[int, str],
    plan: plan_pb2.Plan,
) -> TreeBuilder:
    """The builder that joined the tree: the pair's two sides first, then every further
    input as the *left* (hash build) input over the tree so far."""
    b = TreeBuilder(tree, conds, names, plan)
    side_a = _ordered(sides[0], conds)
    side_b = _ordered(sides[1], conds)
    cur = b.join(b.side(side_a), b.side(side_b))
    for leaf in rest:
        cur = b.join(b.leaf(leaf), cur)
    return b


def _ordered(leaves: list[int], conds: list[Expr]) -> list[int]:
    """``leaves`` (scan first) in an order where each joins by a condition to those before."""
    linked = [s for s in (_leaves_of(c) for c in conds) if s <= set(leaves)]
    order = connected(leaves[:1], leaves, linked)
    if order is None:
        raise NotFlat("a side's inputs are not connected")
    return order


def _and(exprs: list[Expr], names: dict[int, str], plan: plan_pb2.Plan) -> Expr:
    out = sp.conjunction(plan, exprs)
    if len(exprs) > 1:
        names[out.scalar_function.function_reference] = "and"
    return out
