"""SQL pass ``storage_partitioned_join``: a join of two namespaces becomes one SPJ table.

For ``FROM ns1 a <join> ns2 b ON a.k = b.k [AND ...]`` (inner, left, right,
full, left/right semi and anti joins) whose :func:`plan_join` is compatible,
the join is replaced by a temporary :class:`~.spj_provider.SpjTable`. Each
join group runs the *group query*: the same join over the group's partition
tables, with the WHERE conjuncts that only use the two sides, and, when the
SELECT is an aggregation over the join (GROUP BY columns of the two sides and
``sum`` / ``count`` / ``min`` / ``max`` / ``avg``), the partial aggregation;
the outer query keeps the rest (final aggregation, HAVING, ORDER BY, further
joins), its columns rewritten to the SPJ table's (``"a.col"``, ``__p0``...).
That is what Spark does after a storage-partitioned join: only the small
partial results cross back into the user's query.

The user's session configuration is untouched, so other joins plan exactly as
before. Anything not understood leaves the query text unchanged (byte for
byte) and records the reason in ``ctx.spj_last_reason`` and, for EXPLAIN, in
``ctx.spj_reasons`` (shown as ``storage-partitioned join: not used (...)``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import datafusion
import sqlglot
from sqlglot import exp

from lance_sql.engines.datafusion.spj import JOIN_SQL
from lance_sql.engines.datafusion.spj_provider import (
    LEFT_TABLE,
    RIGHT_TABLE,
    SpjSide,
    SpjTable,
    group_schema,
    spj_column,
)
from lance_sql.engines.datafusion.sql_rewrite import (
    cte_names,
    fresh_table_name,
    namespace_name,
    register_pass,
    register_query_table,
)
from lance_sql.planning.joins import plan_join

#: (join side, join kind) as sqlglot parses them -> plan_join's ``how``
_KINDS = {
    ("", ""): "inner",
    ("", "INNER"): "inner",
    ("LEFT", ""): "left",
    ("LEFT", "OUTER"): "left",
    ("RIGHT", ""): "right",
    ("RIGHT", "OUTER"): "right",
    ("FULL", ""): "full",
    ("FULL", "OUTER"): "full",
    ("", "SEMI"): "semi",
    ("LEFT", "SEMI"): "semi",
    ("", "ANTI"): "anti",
    ("LEFT", "ANTI"): "anti",
    ("RIGHT", "SEMI"): "right_semi",
    ("RIGHT", "ANTI"): "right_anti",
}
#: the same join with its two tables written the other way round
_SWAPPED = {
    "inner": "inner",
    "left": "right",
    "right": "left",
    "full": "full",
    "semi": "right_semi",
    "anti": "right_anti",
    "right_semi": "semi",
    "right_anti": "anti",
}
#: which sides' columns a join type outputs
_VISIBLE = {"semi": "l", "anti": "l", "right_semi": "r", "right_anti": "r"}
#: sides whose rows a WHERE conjunct on them may prune before the join (not null-supplying)
_PRUNABLE = {
    "inner": "lr",
    "left": "l",
    "right": "r",
    "full": "",
    "semi": "l",
    "anti": "l",
    "right_semi": "r",
    "right_anti": "r",
}
_PARTIAL = (exp.Sum, exp.Count, exp.Min, exp.Max, exp.Avg)
_ALIAS = "__lance_spj"
_EXPLAIN = re.compile(r"^\s*explain\s+(?:(?:analyze|verbose)\s+)*", re.IGNORECASE)
_TRIGGER = re.compile(r"\bjoin\b|\bexists\b|\bin\s*\(\s*select\b", re.IGNORECASE)


class _Skip(Exception):
    """This join is not rewritten; the message is the reason."""


def storage_partitioned_join(ctx: Any, sql: str) -> str:
    namespaces = getattr(ctx, "_lance_namespaces", None)
    if not namespaces or not _TRIGGER.search(sql):
        return sql
    lowered = sql.lower()
    if not any(n.lower() in lowered for n in namespaces):
        return sql
    prefix = _EXPLAIN.match(sql)
    enabled = getattr(ctx, "spj_enabled", False)
    if not enabled and not prefix:
        return sql
    head = prefix.group(0) if prefix else ""
    try:
        tree = sqlglot.parse_one(sql[len(head) :], read="postgres")
    except Exception:
        return sql
    ctes = cte_names(tree)
    reasons: list[str] = []
    changed = False
    for select in list(tree.find_all(exp.Select)):
        try:
            if not enabled:
                if _namespace_join(namespaces, ctes, select):
                    raise _Skip("turned off; SET lance.spj = true turns it on")
                continue
            text = sql[len(head) :] if select is tree else None
            semi = _semi_join_form(namespaces, ctes, select)
            if semi is not None:
                original = text or select.sql(dialect="postgres")
                if _rewrite_select(ctx, namespaces, ctes, semi, original):
                    if select is tree:
                        tree = semi
                    else:
                        select.replace(semi)
                    changed = True
                continue
            changed |= _rewrite_select(ctx, namespaces, ctes, select, text)
        except _Skip as skip:
            reasons.append(str(skip))
    _record(ctx, reasons)
    if not changed:
        return sql
    if any(j.kind in ("SEMI", "ANTI") for j in tree.find_all(exp.Join)):
        # sqlglot would print a remaining semi/anti join as (NOT) EXISTS: keep the original
        _record(ctx, [*reasons, "another semi/anti join in the same query"])
        return sql
    return head + tree.sql(dialect="postgres")


def _record(ctx: Any, reasons: list[str]) -> None:
    ctx.spj_reasons = list(reasons)
    ctx.spj_last_reason = reasons[-1] if reasons else None


def _namespace_join(namespaces: dict[str, Any], ctes: set[str], select: exp.Select) -> bool:
    from_ = select.args.get("from_", select.args.get("from"))
    joins = select.args.get("joins") or []
    if from_ is None or not joins:
        return False
    tables = [from_.this, joins[0].this]
    return all(namespace_name(t, namespaces, ctes) for t in tables)


def _semi_join_form(
    namespaces: dict[str, Any], ctes: set[str], select: exp.Select
) -> exp.Select | None:
    """``FROM ns1 a WHERE [NOT] EXISTS (SELECT .. FROM ns2 b WHERE c)`` or ``WHERE a.x IN
    (SELECT b.y FROM ns2 b [WHERE c])`` as a copy with ``LEFT SEMI|ANTI JOIN ns2 b ON ..``.

    Only a top-level WHERE conjunct is taken; ``NOT IN`` is not (a NULL in the
    subquery makes it false for every row, which an anti join does not do).
    """
    from_ = select.args.get("from_", select.args.get("from"))
    where = select.args.get("where")
    if from_ is None or where is None or select.args.get("joins"):
        return None
    outer = from_.this
    if namespace_name(outer, namespaces, ctes) is None:
        return None
    conjuncts = _conjuncts(where.this)
    for i, conj in enumerate(conjuncts):
        negated = isinstance(conj, exp.Not)
        inner = conj.this if negated else conj
        if isinstance(inner, exp.Exists):
            sub, extra = inner.this, None
        elif isinstance(inner, exp.In) and not negated and inner.args.get("query") is not None:
            sub, extra = inner.args["query"], inner.this
        else:
            continue
        sub = sub.this if isinstance(sub, exp.Subquery) else sub
        if not isinstance(sub, exp.Select) or not _plain_subquery(namespaces, ctes, sub):
            continue
        table = sub.args.get("from_", sub.args.get("from")).this
        if table.alias_or_name == outer.alias_or_name:
            continue
        conds = _conjuncts(sub.args["where"].this) if sub.args.get("where") is not None else []
        if extra is not None:
            if len(sub.expressions) != 1 or not isinstance(sub.expressions[0], exp.Column):
                continue
            conds = [exp.EQ(this=extra.copy(), expression=sub.expressions[0].copy()), *conds]
        if not conds:
            continue
        copy = select.copy()
        rest = [c.copy() for j, c in enumerate(conjuncts) if j != i]
        copy.set("where", exp.Where(this=exp.and_(*rest)) if rest else None)
        join = exp.Join(this=table.copy(), on=exp.and_(*[c.copy() for c in conds]), side="LEFT")
        join.set("kind", "ANTI" if negated else "SEMI")
        copy.set("joins", [join])
        return copy
    return None


def _plain_subquery(namespaces: dict[str, Any], ctes: set[str], sub: exp.Select) -> bool:
    from_ = sub.args.get("from_", sub.args.get("from"))
    if from_ is None or sub.args.get("joins") or sub.args.get("with"):
        return False
    if any(sub.args.get(k) for k in ("group", "having", "limit", "offset", "distinct", "order")):
        return False
    return namespace_name(from_.this, namespaces, ctes) is not None


@dataclass
class _Sides:
    """Column resolution for the two sides of the join in one SELECT."""

    la: str
    ra: str
    lcols: list[str]
    rcols: list[str]
    others: bool  # further joins: unknown unqualified columns may be theirs
    outputs: set[str] = field(default_factory=set)  # SELECT aliases (ORDER BY may use them)

    def side_of(self, col: exp.Column) -> str | None:
        """ "l" / "r" for a column of a side, None for another table's; _Skip when unresolvable."""
        if col.table:
            if col.table == self.la:
                return "l"
            if col.table == self.ra:
                return "r"
            if self.others:
                return None
            raise _Skip(f"column {col.sql()} refers to another table")
        in_l, in_r = col.name in self.lcols, col.name in self.rcols
        if in_l and in_r:
            raise _Skip(f"column {col.name} is ambiguous")
        if in_l:
            return "l"
        if in_r:
            return "r"
        if self.others or col.name in self.outputs:
            return None
        raise _Skip(f"column {col.name} is not in either side")

    def alias(self, side: str) -> str:
        return self.la if side == "l" else self.ra


def _rewrite_select(
    ctx: Any,
    namespaces: dict[str, Any],
    ctes: set[str],
    select: exp.Select,
    text: str | None = None,
) -> bool:
    """Rewrite one SELECT whose FROM joins two namespaces (``text``: its SQL as written)."""
    if not _namespace_join(namespaces, ctes, select):
        return False
    from_ = select.args.get("from_", select.args.get("from"))
    joins = select.args.get("joins") or []
    left_t, join = from_.this, joins[0]
    right_t = join.this
    key = ((join.side or "").upper(), (join.kind or "").upper())
    if key not in _KINDS or join.args.get("using") or join.args.get("method"):
        raise _Skip(f"join type {' '.join(k for k in key if k) or 'cross'} is not supported")
    how = _KINDS[key]
    la, ra = left_t.alias_or_name, right_t.alias_or_name
    if la == ra:
        raise _Skip("both sides have the same alias")
    lprov = namespaces[namespace_name(left_t, namespaces, ctes)]
    rprov = namespaces[namespace_name(right_t, namespaces, ctes)]
    sides = _Sides(la, ra, list(lprov.schema.names), list(rprov.schema.names), len(joins) > 1)
    sides.outputs = {e.alias for e in select.expressions if isinstance(e, exp.Alias)}
    on = join.args.get("on")
    if on is None:
        raise _Skip("no ON condition")
    if any(isinstance(n, (exp.Subquery, exp.Exists)) for n in on.walk()):
        raise _Skip("a subquery in the ON condition")

    for sub in select.find_all(exp.Select):
        if sub is not select and any(c.table in (la, ra) for c in sub.find_all(exp.Column)):
            raise _Skip("a subquery refers to the joined tables")

    keys: list[tuple[str, str]] = []
    for conj in _conjuncts(on):
        if (
            isinstance(conj, exp.EQ)
            and isinstance(conj.left, exp.Column)
            and isinstance(conj.right, exp.Column)
        ):
            s1, s2 = sides.side_of(conj.left), sides.side_of(conj.right)
            if {s1, s2} == {"l", "r"}:
                lc, rc = (conj.left, conj.right) if s1 == "l" else (conj.right, conj.left)
                keys.append((lc.name, rc.name))
    if not keys:
        raise _Skip("no equi-join condition between the two namespaces")
    for a, b in keys:
        if not lprov.schema.field(a).type.equals(rprov.schema.field(b).type):
            raise _Skip(f"join key types differ: {a} and {b}")
    visible = _VISIBLE.get(how, "lr")

    # WHERE conjuncts over the visible sides only run inside each group
    where = select.args.get("where")
    pushed: list[exp.Expression] = []
    kept: list[exp.Expression] = []
    for conj in _conjuncts(where.this) if where is not None else []:
        used = _sides_used(conj, sides)
        if used is not None and used <= set(visible):
            pushed.append(conj)
        else:
            kept.append(conj)
    side_filters: dict[str, list[str]] = {"l": [], "r": []}
    for conj in pushed:
        used = _sides_used(conj, sides) or set()
        if len(used) == 1 and next(iter(used)) in _PRUNABLE[how]:
            side_filters[next(iter(used))].append(_unqualified(conj))
    plan = _plan(lprov.namespace, rprov.namespace, keys, how, side_filters)
    if not plan.compatible:
        raise _Skip(plan.reason or "incompatible partitioning")

    names = _output_names(ctx, select, text)
    agg = _aggregation(select, sides, visible) if len(joins) == 1 and not kept else None
    lside = SpjSide(lprov.namespace, lprov.schema, la, left_t.name)
    rside = SpjSide(rprov.namespace, rprov.schema, ra, right_t.name)
    # DataFusion builds its hash table on the first table of the FROM: make it the smaller side
    rows = {"l": _rows(lprov.namespace, plan, "left"), "r": _rows(rprov.namespace, plan, "right")}
    first = (LEFT_TABLE, la, how)
    if rows["r"] < rows["l"]:
        first = (RIGHT_TABLE, ra, _SWAPPED[how])
    second = (RIGHT_TABLE, ra) if first[0] == LEFT_TABLE else (LEFT_TABLE, la)
    from_sql = (
        f"FROM {first[0]} AS {_q(first[1])} {JOIN_SQL[first[2]]} "
        f"{second[0]} AS {_q(second[1])} ON {on.sql(dialect='postgres')}"
    )
    if pushed:
        from_sql += " WHERE " + " AND ".join(f"({c.sql(dialect='postgres')})" for c in pushed)
    eager: str | None = None
    if agg is not None:
        group_sql, outer = agg.group_sql(from_sql), agg
        try:
            schema = group_schema(lside, rside, group_sql)
        except Exception:  # e.g. a function only the user's session knows: no partial step
            agg = None
        else:
            if agg.has_decimal_sum(schema):
                agg = None
    if agg is not None and how == "inner" and EAGER_AGGREGATION:
        pre = _eager_group_sql(agg, on, pushed, rows)
        if pre is not None:
            try:
                pre_schema = group_schema(lside, rside, pre[1])
            except Exception:  # the plain partial aggregation then
                pass
            else:
                if pre_schema.types == schema.types:
                    eager, group_sql, schema = pre[0], pre[1], pre_schema
    if agg is None:
        needed = _needed_columns(select, sides, visible, where_kept=kept, pushed=pushed)
        cols = [
            f"{_q(sides.alias(s))}.{_q(c)} AS {_q(spj_column(sides.alias(s), c))}"
            for s, c in needed
        ]
        group_sql = f"SELECT {', '.join(cols) or '1 AS __one'} {from_sql}"
        try:
            schema = group_schema(lside, rside, group_sql)
        except Exception as exc:
            raise _Skip(f"the per-group query cannot be planned on its own: {exc}") from exc
    name = fresh_table_name("__lance_spj")
    extra = [c for c in _conjuncts(on) if not _is_key(c, sides)]
    details = []
    if pushed:
        details.append("where")
    if agg is not None:
        details.append("partial aggregate")
    if eager is not None:
        details.append(f"{eager} aggregated before the join")
    table = SpjTable(
        plan,
        lside,
        rside,
        name=name,
        group_sql=group_sql,
        schema=schema,
        extra_condition=" AND ".join(c.sql() for c in extra) or None,
        pushed=" + ".join(details) or None,
    )
    register_query_table(ctx, name, table)
    if agg is not None:
        outer.apply(select, names)
    else:
        _apply_plain(select, sides, visible, names, kept)
    select.set(
        "from_" if "from_" in select.args else "from",
        exp.From(this=exp.alias_(exp.to_table(name), _ALIAS, table=True)),
    )
    select.set("joins", [_map(j, sides) for j in joins[1:]] or None)
    return True


def _rows(ns: Any, plan: Any, side: str) -> int:
    """Rows of the plan's partition tables of one side (table metadata; no data read)."""
    ids = [r.object_id for g in plan.groups for r in getattr(g, side)]
    try:
        return sum(u.estimated_rows or 0 for u in ns.scan_units(ids)) if ids else 0
    except Exception:  # an estimate only: fall back to counting partition tables
        return len(ids)


def _plan(lns: Any, rns: Any, keys: list[tuple[str, str]], how: str, filters: dict) -> Any:
    """plan_join with each side's WHERE conditions pruning it (without them if they fail)."""
    lf = " AND ".join(f"({f})" for f in filters["l"]) or None
    rf = " AND ".join(f"({f})" for f in filters["r"]) or None
    try:
        return plan_join(lns, rns, keys, how, left_filter=lf, right_filter=rf)
    except Exception:  # a condition the pruning planner cannot read prunes nothing
        pass
    try:
        return plan_join(lns, rns, keys, how)
    except Exception as exc:  # planning errors mean "plain join", never a failed query
        raise _Skip(f"join planning failed: {exc}") from exc


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    if node is None:
        return []
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return _conjuncts(node.left) + _conjuncts(node.right)
    return [node]


def _is_key(conj: exp.Expression, sides: _Sides) -> bool:
    if not (
        isinstance(conj, exp.EQ)
        and isinstance(conj.left, exp.Column)
        and isinstance(conj.right, exp.Column)
    ):
        return False
    return {sides.side_of(conj.left), sides.side_of(conj.right)} == {"l", "r"}


def _sides_used(node: exp.Expression, sides: _Sides) -> set[str] | None:
    """The sides ``node`` reads; None when it reads anything else or cannot move into a group."""
    if any(isinstance(n, (exp.Subquery, exp.Exists, exp.Window, exp.AggFunc)) for n in node.walk()):
        return None
    used: set[str] = set()
    for col in node.find_all(exp.Column):
        if isinstance(col.this, exp.Star):
            return None
        side = sides.side_of(col)
        if side is None:
            return None
        used.add(side)
    return used


def _unqualified(node: exp.Expression) -> str:
    copy = node.copy()
    for col in copy.find_all(exp.Column):
        col.set("table", None)
    return copy.sql(dialect="postgres")


def _output_names(ctx: Any, select: exp.Select, text: str | None) -> list[str] | None:
    """DataFusion's output names of the SELECT as written (None when it cannot plan it alone)."""
    if text is None:
        if any(j.kind in ("SEMI", "ANTI") for j in select.find_all(exp.Join)):
            return None  # sqlglot prints these as (NOT) EXISTS
        text = select.sql(dialect="postgres")
    try:
        df = datafusion.SessionContext.sql(ctx, text)
        return list(df.schema().names)
    except Exception:
        return None


def _spj_col(alias: str, column: str) -> exp.Column:
    return exp.column(exp.to_identifier(spj_column(alias, column), quoted=True), _ALIAS)


def _map(node: exp.Expression, sides: _Sides, replace: Any = None) -> exp.Expression:
    """Rewrite this SELECT's column references (not nested subqueries') to the SPJ table."""
    top = node if isinstance(node, exp.Select) else node.find_ancestor(exp.Select)

    def visit(n: exp.Expression) -> exp.Expression:
        if replace is not None:
            r = replace(n)
            if r is not None:
                return r
        if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
            outer = n.find_ancestor(exp.Select)
            if outer is not None and outer is not top:
                return n
            side = sides.side_of(n)
            if side is None:
                return n
            return _spj_col(sides.alias(side), n.name)
        return n

    return node.transform(visit, copy=False)


def _star_pairs(e: exp.Expression, sides: _Sides, visible: str) -> list[tuple[str, str]] | None:
    lpairs = [(sides.la, c) for c in sides.lcols] if "l" in visible else []
    rpairs = [(sides.ra, c) for c in sides.rcols] if "r" in visible else []
    if isinstance(e, exp.Star):
        return lpairs + rpairs
    if isinstance(e, exp.Column) and isinstance(e.this, exp.Star):
        if e.table == sides.la:
            return lpairs
        if e.table == sides.ra:
            return rpairs
    return None


def _select_list(
    select: exp.Select, sides: _Sides, visible: str, names: list[str] | None, mapper: Any
) -> list[exp.Expression]:
    """The rewritten SELECT list: stars expanded, every output keeps its original name."""
    expanded: list[tuple[exp.Expression, str | None]] = []
    for e in select.expressions:
        pairs = _star_pairs(e, sides, visible)
        if pairs is not None:
            expanded += [(_spj_col(a, c), c) for a, c in pairs]
        elif isinstance(e, exp.Alias):
            expanded.append((mapper(e), None))
        elif isinstance(e, exp.Column):
            expanded.append((mapper(e), e.name))
        else:
            expanded.append((mapper(e), ""))
    if names is not None and len(names) != len(expanded):
        names = None
    taken = [n for _, n in expanded if n]
    out = []
    for i, (node, name) in enumerate(expanded):
        if name is None:
            out.append(node)
        elif name == "":
            out.append(node if names is None else exp.alias_(node, _ident(names[i])))
        elif taken.count(name) > 1:
            out.append(node)  # a name two outputs share stays "alias.col" (no duplicates)
        else:
            out.append(exp.alias_(node, _ident(name)))
    return out


def _ident(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


_CLAUSES = ("group", "having", "order", "qualify", "distribute", "sort", "cluster")


def _apply_plain(
    select: exp.Select,
    sides: _Sides,
    visible: str,
    names: list[str] | None,
    kept: list[exp.Expression],
) -> None:
    def mapper(e: exp.Expression) -> exp.Expression:
        return _map(e, sides)

    select.set("expressions", _select_list(select, sides, visible, names, mapper))
    for k in _CLAUSES:
        if select.args.get(k) is not None:
            select.set(k, mapper(select.args[k]))
    if kept:
        select.set("where", exp.Where(this=mapper(exp.and_(*kept))))
    else:
        select.set("where", None)


def _needed_columns(
    select: exp.Select,
    sides: _Sides,
    visible: str,
    *,
    where_kept: list[exp.Expression],
    pushed: list[exp.Expression],
) -> list[tuple[str, str]]:
    """Side columns the outer query reads, in side order (star: all visible columns)."""
    used: set[tuple[str, str]] = set()
    for e in select.expressions:
        pairs = _star_pairs(e, sides, visible)
        if pairs is not None:
            used |= {("l" if a == sides.la else "r", c) for a, c in pairs}
    nodes = [e for e in select.expressions] + where_kept
    nodes += [select.args[k] for k in _CLAUSES if select.args.get(k) is not None]
    nodes += (select.args.get("joins") or [])[1:]
    for node in nodes:
        for col in node.find_all(exp.Column):
            if isinstance(col.this, exp.Star):
                continue
            outer = col.find_ancestor(exp.Select)
            if outer is not None and outer is not select:
                continue
            side = sides.side_of(col)
            if side is not None:
                used.add((side, col.name))
    order = [("l", c) for c in sides.lcols] + [("r", c) for c in sides.rcols]
    return [p for p in order if p in used and p[0] in visible]


@dataclass
class _Aggregation:
    """A GROUP BY over the join split into a per-group partial and an outer final step."""

    sides: _Sides
    visible: str
    group_cols: list[tuple[str, str]]
    partials: dict[str, tuple[str, exp.Expression]] = field(default_factory=dict)  # sql -> name

    def group_sql(self, from_sql: str, partials: dict[str, str] | None = None) -> str:
        """The per-group query over ``from_sql`` (``partials``: name -> SQL replacing a partial)."""
        cols = [
            f"{_q(self.sides.alias(s))}.{_q(c)} AS {_q(spj_column(self.sides.alias(s), c))}"
            for s, c in self.group_cols
        ]
        items = cols + [
            f"{(partials or {}).get(name) or node.sql(dialect='postgres')} AS {_q(name)}"
            for name, node in self.partials.values()
        ]
        group = ", ".join(f"{_q(self.sides.alias(s))}.{_q(c)}" for s, c in self.group_cols)
        return f"SELECT {', '.join(items)} {from_sql}" + (f" GROUP BY {group}" if group else "")

    def has_decimal_sum(self, schema: Any) -> bool:
        """Sums of decimals widen at each step: a two-step sum would change the result type."""
        import pyarrow as pa

        return any(
            isinstance(node, exp.Sum) and pa.types.is_decimal(schema.field(name).type)
            for name, node in self.partials.values()
        )

    def final(self, agg: exp.Expression) -> exp.Expression:
        def part(node: exp.Expression) -> exp.Column:
            key = node.sql(dialect="postgres")
            if key not in self.partials:
                self.partials[key] = (f"__p{len(self.partials)}", node)
            return exp.column(_ident(self.partials[key][0]), _ALIAS)

        if isinstance(agg, exp.Sum):
            return exp.Sum(this=part(agg.copy()))
        if isinstance(agg, exp.Count):
            return exp.Sum(this=part(agg.copy()))
        if isinstance(agg, (exp.Min, exp.Max)):
            return type(agg)(this=part(agg.copy()))
        # avg(x) = sum(x) / count(x), in float64 like DataFusion's avg of numbers
        s = part(exp.Sum(this=agg.this.copy()))
        n = part(exp.Count(this=agg.this.copy()))
        num = exp.cast(exp.Sum(this=s), "DOUBLE")
        den = exp.cast(exp.Nullif(this=exp.Sum(this=n), expression=exp.Literal.number(0)), "DOUBLE")
        return exp.Div(this=num, expression=den)

    def apply(self, select: exp.Select, names: list[str] | None) -> None:
        def replace(n: exp.Expression) -> exp.Expression | None:
            if isinstance(n, _PARTIAL):
                return self.final(n)
            return None

        def mapper(e: exp.Expression) -> exp.Expression:
            return _map(e, self.sides, replace)

        exprs = _select_list(select, self.sides, self.visible, names, mapper)
        select.set("expressions", exprs)
        for k in ("having", "order", "qualify"):
            if select.args.get(k) is not None:
                select.set(k, mapper(select.args[k]))
        select.set(
            "group",
            exp.Group(expressions=[_spj_col(self.sides.alias(s), c) for s, c in self.group_cols])
            if self.group_cols
            else None,
        )
        select.set("where", None)


#: Aggregate one side of an inner join before the join inside each group (see below).
EAGER_AGGREGATION = True
#: ... when that side has at least this many times the other side's rows.
EAGER_MIN_RATIO = 2
#: how a partial over pre-aggregated rows combines them (COUNT: a sum of counts)
_COMBINE = {
    exp.Sum: "SUM({})",
    exp.Count: "COALESCE(SUM({}), 0)",
    exp.Min: "MIN({})",
    exp.Max: "MAX({})",
}


def _eager_group_sql(
    agg: _Aggregation,
    on: exp.Expression,
    pushed: list[exp.Expression],
    rows: dict[str, int],
) -> tuple[str, str] | None:
    """``(alias, group query)`` that aggregates one side before an inner join, or None.

    When every partial aggregate reads one side P only (``count(*)`` reads
    none), each group can first aggregate P by the columns of P the rest of
    the query needs (the join keys, other ON and WHERE columns, GROUP BY
    columns) and join the other side B to those few rows: each P row then
    stands for its group's rows, so a sum of sums, a sum of counts and a min of
    mins equal the aggregates over the joined rows, whatever the multiplicity
    of B's keys (the pushing-aggregation-through-joins transformation, as
    Trino's ``push_partial_aggregation_through_join``). It pays when P's keys
    repeat: it is used only when P holds :data:`EAGER_MIN_RATIO` times B's rows
    (so a key of B meets that many rows of P on average). Inner joins only: an
    outer join's NULL-extended rows would need different combinations.
    """
    sides = agg.sides
    touched: set[str] = set()
    for node in (n for _, n in agg.partials.values()):
        if type(node) not in _COMBINE:
            return None
        if isinstance(node, exp.Count) and isinstance(node.this, exp.Star):
            continue
        used = _sides_used(node.this, sides) if node.this is not None else None
        if not used or len(used) > 1:
            return None
        touched |= used
    if len(touched) > 1:
        return None
    p = next(iter(touched)) if touched else max("lr", key=lambda s: rows[s])
    b = "r" if p == "l" else "l"
    if rows[p] < EAGER_MIN_RATIO * max(rows[b], 1):
        return None
    p_only = [c for c in pushed if _sides_used(c, sides) == {p}]
    rest = [c for c in pushed if not any(c is q for q in p_only)]
    keys: set[str] = {c for side, c in agg.group_cols if side == p}
    for node in [on, *rest]:
        keys |= {col.name for col in node.find_all(exp.Column) if sides.side_of(col) == p}
    p_cols = sides.lcols if p == "l" else sides.rcols
    ordered = [c for c in p_cols if c in keys]
    if not ordered:
        return None
    pa_, ba = _q(sides.alias(p)), _q(sides.alias(b))
    items = [f"{pa_}.{_q(c)} AS {_q(c)}" for c in ordered]
    combined: dict[str, str] = {}
    for i, (name, node) in enumerate(agg.partials.values()):
        items.append(f"{node.sql(dialect='postgres')} AS {_q(f'__e{i}')}")
        combined[name] = _COMBINE[type(node)].format(f"{pa_}.{_q(f'__e{i}')}")
    where = " AND ".join(f"({c.sql(dialect='postgres')})" for c in p_only)
    pre = (
        f"SELECT {', '.join(items)} FROM {LEFT_TABLE if p == 'l' else RIGHT_TABLE} AS {pa_}"
        + (f" WHERE {where}" if where else "")
        + f" GROUP BY {', '.join(f'{pa_}.{_q(c)}' for c in ordered)}"
    )
    from_sql = (
        f"FROM {LEFT_TABLE if b == 'l' else RIGHT_TABLE} AS {ba} JOIN ({pre}) AS {pa_} "
        f"ON {on.sql(dialect='postgres')}"
    )
    if rest:
        from_sql += " WHERE " + " AND ".join(f"({c.sql(dialect='postgres')})" for c in rest)
    return sides.alias(p), agg.group_sql(from_sql, combined)


def _aggregation(select: exp.Select, sides: _Sides, visible: str) -> _Aggregation | None:
    """The partial/final split of this SELECT, or None when it is not such an aggregation."""
    group = select.args.get("group")
    aggs = [a for e in select.expressions for a in e.find_all(exp.AggFunc)]
    if group is None and not aggs:
        return None
    if any(select.args.get(k) for k in ("qualify", "distribute", "sort", "cluster")):
        return None
    if any(isinstance(n, (exp.Window, exp.Subquery)) for n in select.walk()):
        return None
    if any(_star_pairs(e, sides, visible) is not None for e in select.expressions):
        return None
    group_cols: list[tuple[str, str]] = []
    for g in group.expressions if group is not None else []:
        if not isinstance(g, exp.Column) or isinstance(g.this, exp.Star):
            return None
        side = sides.side_of(g)
        if side is None or side not in visible:
            return None
        if (side, g.name) not in group_cols:
            group_cols.append((side, g.name))
    if group is not None and any(group.args.get(k) for k in ("rollup", "cube", "grouping_sets")):
        return None
    nodes = list(select.expressions)
    nodes += [select.args[k] for k in ("having", "order") if select.args.get(k) is not None]
    for node in nodes:
        for agg in node.find_all(exp.AggFunc):
            if not isinstance(agg, _PARTIAL) or agg.find(exp.Distinct) is not None:
                return None
            if agg.find_ancestor(exp.AggFunc) is not None:
                return None
            inner = agg.this
            if isinstance(agg, exp.Count) and isinstance(inner, exp.Star):
                continue
            if len(agg.args.get("expressions") or []) > 0:
                return None
            used = _sides_used(inner, sides) if inner is not None else None
            if used is None or not used <= set(visible):
                return None
        # a column outside aggregates must be a GROUP BY column (or an output alias)
        for col in node.find_all(exp.Column):
            if col.find_ancestor(exp.AggFunc) is not None:
                continue
            side = sides.side_of(col)
            if side is not None and (side, col.name) not in group_cols:
                return None
    out = _Aggregation(sides, visible, group_cols)
    for node in nodes:  # name the partials now: the group query is built before apply()
        for agg in node.find_all(exp.AggFunc):
            out.final(agg)
    return out


# Before murmur3_dispatch: each group query dispatches its own murmur3 calls in its context.
register_pass("storage_partitioned_join", storage_partitioned_join, before="murmur3_dispatch")

__all__ = ["storage_partitioned_join"]
