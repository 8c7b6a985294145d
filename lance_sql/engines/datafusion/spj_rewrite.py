"""SQL pass ``storage_partitioned_join``: a join of two namespaces becomes one SPJ table.

For ``FROM ns1 a [INNER|LEFT|RIGHT|FULL] JOIN ns2 b ON a.k = b.k [AND ...]``
whose :func:`plan_join` is compatible, the join is replaced by a temporary
:class:`~.spj_provider.SpjTable` (columns ``"a.col"``) and every reference to
``a`` / ``b`` columns in that SELECT is rewritten to it; the user's session
configuration is untouched, so other joins plan exactly as before. Anything
not understood leaves the query text unchanged (byte for byte) and records the
reason in ``ctx.spj_last_reason``.
"""

from __future__ import annotations

import re
from typing import Any

import sqlglot
from sqlglot import exp

from lance_sql.engines.datafusion.spj_provider import SpjSide, SpjTable, spj_column
from lance_sql.engines.datafusion.sql_rewrite import (
    fresh_table_name,
    register_pass,
    register_query_table,
)
from lance_sql.planning.joins import plan_join

_KINDS = {"": "inner", "INNER": "inner", "LEFT": "left", "RIGHT": "right", "FULL": "full"}
_ALIAS = "__lance_spj"
_EXPLAIN = re.compile(r"^\s*explain\s+(?:(?:analyze|verbose)\s+)*", re.IGNORECASE)


class _Skip(Exception):
    """This join is not rewritten; the message is the reason."""


def storage_partitioned_join(ctx: Any, sql: str) -> str:
    namespaces = getattr(ctx, "_lance_namespaces", None)
    if not namespaces or not getattr(ctx, "spj_enabled", False):
        return sql
    lowered = sql.lower()
    if "join" not in lowered or not any(n.lower() in lowered for n in namespaces):
        return sql
    prefix = _EXPLAIN.match(sql)
    head = prefix.group(0) if prefix else ""
    try:
        tree = sqlglot.parse_one(sql[len(head) :], read="postgres")
    except Exception:
        return sql
    changed = False
    for select in list(tree.find_all(exp.Select)):
        try:
            changed |= _rewrite_select(ctx, namespaces, select)
        except _Skip as skip:
            ctx.spj_last_reason = str(skip)
    if not changed:
        return sql
    return head + tree.sql(dialect="postgres")


def _rewrite_select(ctx: Any, namespaces: dict[str, Any], select: exp.Select) -> bool:
    from_ = select.args.get("from_", select.args.get("from"))
    joins = select.args.get("joins") or []
    if from_ is None or not joins:
        return False
    left_t, join = from_.this, joins[0]
    right_t = join.this
    if not (isinstance(left_t, exp.Table) and isinstance(right_t, exp.Table)):
        return False
    if left_t.db or right_t.db or left_t.name not in namespaces or right_t.name not in namespaces:
        return False
    kind = (join.side or join.kind or "").upper()
    if kind not in _KINDS or join.args.get("using") or join.args.get("method"):
        raise _Skip(f"join type {kind or 'cross'} is not supported")
    how = _KINDS[kind]
    la, ra = left_t.alias_or_name, right_t.alias_or_name
    if la == ra:
        raise _Skip("both sides have the same alias")
    lprov, rprov = namespaces[left_t.name], namespaces[right_t.name]
    lcols, rcols = list(lprov.schema.names), list(rprov.schema.names)
    on = join.args.get("on")
    if on is None:
        raise _Skip("no ON condition")

    def side_of(col: exp.Column) -> str:
        if col.table:
            if col.table == la:
                return "l"
            if col.table == ra:
                return "r"
            raise _Skip(f"column {col.sql()} refers to another table")
        in_l, in_r = col.name in lcols, col.name in rcols
        if in_l and in_r:
            raise _Skip(f"column {col.name} is ambiguous")
        if in_l:
            return "l"
        if in_r:
            return "r"
        raise _Skip(f"column {col.name} is not in either side")

    keys: list[tuple[str, str]] = []
    extra: list[exp.Expression] = []
    for conj in on.flatten() if isinstance(on, exp.And) else [on]:
        if (
            isinstance(conj, exp.EQ)
            and isinstance(conj.left, exp.Column)
            and isinstance(conj.right, exp.Column)
        ):
            s1, s2 = side_of(conj.left), side_of(conj.right)
            if {s1, s2} == {"l", "r"}:
                lc, rc = (conj.left, conj.right) if s1 == "l" else (conj.right, conj.left)
                keys.append((lc.name, rc.name))
                continue
        extra.append(conj)
    if not keys:
        raise _Skip("no equi-join condition between the two namespaces")
    if extra and how != "inner":
        raise _Skip(f"non-equi ON conditions on a {how} join")
    if len(joins) > 1 and any(isinstance(s, exp.Star) for s in select.expressions):
        raise _Skip("SELECT * with further joins")
    lns, rns = lprov.namespace, rprov.namespace
    try:
        plan = plan_join(lns, rns, keys, how)
    except Exception as exc:  # planning errors mean "plain join", never a failed query
        raise _Skip(f"join planning failed: {exc}") from exc
    if not plan.compatible:
        raise _Skip(plan.reason or "incompatible partitioning")
    for a, b in keys:
        if not lprov.schema.field(a).type.equals(rprov.schema.field(b).type):
            raise _Skip(f"join key types differ: {a} and {b}")

    # every column of either side becomes "alias.col" of the SPJ table
    def to_spj(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            try:
                side = side_of(node)
            except _Skip:
                if node.table in (la, ra) or (not node.table and len(joins) == 1):
                    raise
                return node
            alias = la if side == "l" else ra
            return exp.column(exp.to_identifier(spj_column(alias, node.name), quoted=True), _ALIAS)
        return node

    used = _used_columns(select, la, ra, side_of, lcols, rcols)
    new_exprs: list[exp.Expression] = []
    out_names: list[str] = []
    for e in select.expressions:
        if isinstance(e, exp.Star):
            out_names += lcols + rcols
        elif isinstance(e, exp.Column) and isinstance(e.this, exp.Star):
            out_names += lcols if e.table == la else rcols if e.table == ra else []
        else:
            out_names.append(e.alias_or_name)
    dup = {n for n in out_names if out_names.count(n) > 1}

    def named(col: exp.Expression, name: str) -> exp.Expression:
        # a name two outputs share stays "alias.col" (DataFusion forbids duplicates)
        return col if name in dup else exp.alias_(col, exp.to_identifier(name, quoted=True))

    for e in select.expressions:
        if isinstance(e, exp.Star):
            pairs = [(la, c) for c in lcols] + [(ra, c) for c in rcols]
        elif isinstance(e, exp.Column) and isinstance(e.this, exp.Star) and e.table in (la, ra):
            pairs = [(e.table, c) for c in (lcols if e.table == la else rcols)]
        else:
            pairs = []
        if pairs:
            for alias, c in pairs:
                col = exp.column(exp.to_identifier(spj_column(alias, c), quoted=True), _ALIAS)
                new_exprs.append(named(col, c))
            continue
        if isinstance(e, exp.Column):
            new_exprs.append(named(_map(e, to_spj), e.name))
        else:
            new_exprs.append(_map(e, to_spj))
    rest = {k: _map(v, to_spj) for k, v in select.args.items() if k in _CLAUSES and v is not None}
    later = [_map(j, to_spj) for j in joins[1:]]
    name = fresh_table_name("__lance_spj")
    table = SpjTable(
        plan,
        SpjSide(lns, lprov.schema, la, left_t.name, tuple(c for c in lcols if ("l", c) in used)),
        SpjSide(rns, rprov.schema, ra, right_t.name, tuple(c for c in rcols if ("r", c) in used)),
        name=name,
    )
    register_query_table(ctx, name, table)
    source: exp.Expression = exp.to_table(name)
    if extra:
        cond = exp.and_(*[_map(c.copy(), to_spj) for c in extra])
        source = (
            exp.select("*").from_(exp.alias_(exp.to_table(name), _ALIAS, table=True)).where(cond)
        ).subquery(_ALIAS)
    else:
        source = exp.alias_(source, _ALIAS, table=True)
    select.set("expressions", new_exprs)
    select.set("from_" if "from_" in select.args else "from", exp.From(this=source))
    select.set("joins", later or None)
    for k, v in rest.items():
        select.set(k, v)
    ctx.spj_last_reason = None
    return True


_CLAUSES = ("where", "group", "having", "order", "qualify", "distribute", "sort", "cluster")


def _map(node: exp.Expression, fn: Any) -> exp.Expression:
    """Rewrite columns of ``node`` that belong to this SELECT (not to nested subqueries)."""

    def visit(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Column):
            outer = n.find_ancestor(exp.Select)
            if outer is not None and outer is not top_select:
                return n
            return fn(n)
        return n

    top_select = node.find_ancestor(exp.Select) if not isinstance(node, exp.Select) else node
    return node.transform(visit, copy=False)


def _used_columns(
    select: exp.Select, la: str, ra: str, side_of: Any, lcols: list[str], rcols: list[str]
) -> set[tuple[str, str]]:
    used: set[tuple[str, str]] = set()
    for e in select.expressions:
        if isinstance(e, exp.Star):
            return {("l", c) for c in lcols} | {("r", c) for c in rcols}
        if isinstance(e, exp.Column) and isinstance(e.this, exp.Star):
            if e.table == la:
                used |= {("l", c) for c in lcols}
            elif e.table == ra:
                used |= {("r", c) for c in rcols}
    for col in select.find_all(exp.Column):
        if isinstance(col.this, exp.Star):
            continue
        try:
            used.add((side_of(col), col.name))
        except _Skip:
            continue
    return used


register_pass("storage_partitioned_join", storage_partitioned_join)

__all__ = ["storage_partitioned_join"]
