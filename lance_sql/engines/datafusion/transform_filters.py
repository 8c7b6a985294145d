"""SQL pass: predicates on transform terms prune partitioned namespaces.

DataFusion 55 hands a Python table only the filters it can turn into pyarrow
expressions. ``date_trunc('day', ts) = ...``, ``CAST(ts AS DATE) = ...``,
``murmur3(k) % 16 = 3``, ``abs(murmur3(k)) % 16 = 3``, ``left(s, 2) = 'ab'``,
``date_part('month', d) IN (1, 2)`` or ``s LIKE 'ab%'`` never reach the
namespace provider, so without this pass such a query opens every partition
table although the planner can project each of them onto partition fields.

For every SELECT that reads a registered partitioned namespace (plain table
reference, planner pruning), the pass takes the WHERE conjuncts (and the ON
conjuncts of inner joins) that reference only that table's columns, keeps
those the planner reads, and, when at least one of them is a form DataFusion
does not push, replaces the table reference by a derived
:class:`NamespaceTable` that prunes with them too
(:meth:`NamespaceTable.with_prune_filter`): ``FROM ns`` becomes
``FROM __lance_prune_3 AS ns``. The WHERE clause is untouched: DataFusion
still evaluates every predicate on every row read, so results cannot change;
pruning only skips partition tables in which no row can match.

The pass edits the query text only at the table references' own positions
(sqlglot is used to find them and the conjuncts, never to print the query), so
everything else DataFusion reads stays byte-for-byte what the user wrote, and
a query without such predicates is returned unchanged. It must run before
``murmur3_dispatch``, which renames ``murmur3`` calls.

Row safety with joins: a predicate may prune a table only where a row it
removes can only remove result rows the WHERE would drop anyway. That holds
for every table of a SELECT whose joins are all inner (or cross); with
LEFT / SEMI / ANTI joins only the FROM table (the preserved side) is pruned,
by WHERE conjuncts whose columns all carry its qualifier; with a RIGHT or
FULL join nothing is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from lance_sql.engines.datafusion.namespace_provider import NamespaceTable
from lance_sql.engines.datafusion.sql_rewrite import (
    cte_names,
    fresh_table_name,
    identifier_name,
    namespace_name,
    register_pass,
    register_query_table,
)
from lance_sql.planning.predicates import (
    And,
    Compare,
    Const,
    InList,
    IsNull,
    Not,
    Or,
    Predicate,
    StartsWith,
    TransformTerm,
    Unsupported,
)

#: words one of which a query must contain for the pass to parse it
_TRIGGER = re.compile(
    r"date_part|datepart|extract|date_trunc|datetrunc|cast|::|murmur3|left|substr|%|like|"
    r"starts_with|year|month|day|hour",
    re.IGNORECASE,
)
_EXPLAIN = re.compile(
    r"^\s*explain(?:\s+analyze)?(?:\s+verbose)?(?:\s+format\s+\w+)?\s+", re.IGNORECASE
)
PREFIX = "__lance_prune"


def transform_filters(ctx: Any, sql: str) -> str:
    """The rewrite pass (module docstring); ``sql`` unchanged when it does not apply."""
    namespaces: dict[str, NamespaceTable] = dict(getattr(ctx, "_lance_namespaces", None) or {})
    namespaces = {n: t for n, t in namespaces.items() if t.prunes_with_planner}
    if not namespaces or not _TRIGGER.search(sql):
        return sql
    lowered = sql.lower()
    if not any(name.lower() in lowered for name in namespaces):
        return sql
    head = _EXPLAIN.match(sql)
    offset = head.end() if head else 0
    try:
        tree = sqlglot.parse_one(sql[offset:], read="postgres")
    except Exception:  # sqlglot cannot read it: DataFusion will judge the query itself
        return sql
    if tree is None:
        return sql
    ctes = cte_names(tree)
    spj = bool(getattr(ctx, "spj_enabled", False))
    edits: list[tuple[int, int, str]] = []
    try:
        for select in tree.find_all(exp.Select):
            for target in _targets(select, namespaces, ctes, spj):
                edit = _rewrite_target(ctx, target, offset)
                if edit is not None:
                    edits.append(edit)
    except Exception:  # pruning is only an optimisation: never fail a query over it
        return sql
    if not edits:
        return sql
    out = sql
    for start, end, text in sorted(edits, reverse=True):
        out = out[:start] + text + out[end:]
    return out


# ------------------------------------------------------------------ finding targets


@dataclass
class _Target:
    """One reference to a namespace in one SELECT, with the conjuncts that may prune it."""

    table: exp.Table
    provider: NamespaceTable
    qualifier: str  # alias or name, as DataFusion resolves it
    conjuncts: list[exp.Expression]
    unqualified_ok: bool


def _from_of(select: exp.Select) -> exp.Expression | None:
    node = select.args.get("from_") or select.args.get("from")
    return node.this if isinstance(node, exp.From) else None


def _is_inner(join: exp.Join) -> bool:
    side = (join.args.get("side") or "").upper()
    kind = (join.args.get("kind") or "").upper()
    return not side and kind in ("", "INNER", "CROSS") and not join.args.get("method")


def _and_parts(node: exp.Expression | None) -> list[exp.Expression]:
    if node is None:
        return []
    return list(node.flatten()) if isinstance(node, exp.And) else [node]


def _targets(
    select: exp.Select, namespaces: dict[str, NamespaceTable], ctes: set[str], spj: bool
) -> list[_Target]:
    first = _from_of(select)
    joins: list[exp.Join] = list(select.args.get("joins") or [])
    if first is None or (
        spj and joins and all(namespace_name(t, namespaces, ctes) for t in (first, joins[0].this))
    ):
        return []  # a join of two namespaces: the storage-partitioned-join pass needs their names
    where = select.args.get("where")
    where_parts = _and_parts(where.this if isinstance(where, exp.Where) else None)
    all_inner = all(_is_inner(j) for j in joins)
    preserved_from = all((j.args.get("side") or "").upper() not in ("RIGHT", "FULL") for j in joins)
    sources: list[tuple[exp.Expression, bool]] = [(first, True)]
    sources += [(j.this, False) for j in joins]
    on_parts: list[exp.Expression] = []
    if all_inner:
        for j in joins:
            on = j.args.get("on")
            on_parts += _and_parts(on)
    out = []
    for source, is_from in sources:
        name = namespace_name(source, namespaces, ctes)
        if name is None:
            continue
        provider = namespaces[name]
        alias_node = source.args.get("alias")
        alias = identifier_name(alias_node.this) if isinstance(alias_node, exp.TableAlias) else None
        qualifier = alias or name
        if all_inner:
            parts, unqualified_ok = where_parts + on_parts, True
        elif is_from and preserved_from:
            parts, unqualified_ok = where_parts, False
        else:
            continue
        out.append(_Target(source, provider, qualifier, parts, unqualified_ok))
    return out


# ------------------------------------------------------------------ rewriting one target


def _rewrite_target(ctx: Any, target: _Target, offset: int) -> tuple[int, int, str] | None:
    kept: list[str] = []
    triggered = False
    for part in target.conjuncts:
        text = _conjunct_text(part, target)
        if text is None:
            continue
        pred = _parse(text, target.provider)
        if pred is None:
            continue
        kept.append(text)
        triggered = triggered or _not_pushed(pred)
    if not triggered:
        return None
    ident = target.table.this
    meta = ident.meta
    start, end = meta.get("start"), meta.get("end")
    if start is None or end is None:
        return None
    name = fresh_table_name(PREFIX)
    derived = target.provider.with_prune_filter(" AND ".join(f"({t})" for t in kept))
    register_query_table(ctx, name, derived)
    # The old name stays as the alias: columns keep their qualifier, and so
    # do the names DataFusion gives computed output columns (`sum(ns.x)`).
    has_alias = isinstance(target.table.args.get("alias"), exp.TableAlias)
    replacement = name if has_alias else f"{name} AS {ident.sql(dialect='postgres')}"
    return offset + start, offset + end + 1, replacement


def _conjunct_text(part: exp.Expression, target: _Target) -> str | None:
    """``part`` as SQL over the namespace's own column names, or None if it is not only its."""
    if part.find(exp.Query, exp.Subquery, exp.Placeholder, exp.Parameter) is not None:
        return None
    if _null_unsound_in_datafusion(part):
        return None
    part = part.copy()
    columns = list(part.find_all(exp.Column))
    if not columns:
        return None
    for col in columns:
        if col.args.get("db") or col.args.get("catalog"):
            return None
        qualifier = col.args.get("table")
        if qualifier is None:
            if not target.unqualified_ok:
                return None
            continue
        if identifier_name(qualifier) != target.qualifier:
            return None
        col.set("table", None)
    try:
        return part.sql(dialect="postgres")
    except Exception:
        return None


def _null_unsound_in_datafusion(part: exp.Expression) -> bool:
    """True for a NOT above a boolean combination of IN lists.

    DataFusion 55's simplifier folds ``x IN (0) AND x IN (1)`` to FALSE even
    for a NULL ``x`` (where SQL says NULL), so ``NOT (...)`` of it keeps the
    NULL rows. The planner follows SQL and would prune their partitions; the
    result must equal what DataFusion computes, so such conjuncts are not used
    (the pushed-filter path sees DataFusion's own simplified filter and is
    unaffected).
    """
    for node in part.find_all(exp.Not):
        inner = node.this
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Connector) and inner.find(exp.In) is not None:
            return True
    return False


def _parse(text: str, provider: NamespaceTable) -> Predicate | None:
    """The conjunct in the planner's IR over ``provider``'s schema (None: the planner cannot)."""
    from lance_sql.planning.sql_filter import parse_filter

    try:
        pred = parse_filter(text, provider.schema)
    except Exception:  # unknown column (another table's), unparsable: not ours to prune with
        return None
    if isinstance(pred, (Unsupported, Const)):
        return None
    return pred


def _not_pushed(pred: Predicate) -> bool:
    """True when ``pred`` holds a form DataFusion does not push into a Python table."""
    if isinstance(pred, (And, Or)):
        return any(_not_pushed(p) for p in pred.children)
    if isinstance(pred, Not):
        return _not_pushed(pred.child)
    if isinstance(pred, StartsWith):
        return True
    if isinstance(pred, (Compare, InList, IsNull)):
        return isinstance(pred.term, TransformTerm)
    return False


register_pass("transform_filters", transform_filters, before="murmur3_dispatch")

__all__ = ["PREFIX", "transform_filters"]
