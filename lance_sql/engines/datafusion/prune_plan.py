"""Transform-term pruning over a query's plan: conditions DataFusion keeps above a namespace scan.

DataFusion pushes into a Python table only the conditions it can express as
pyarrow expressions; conditions on transform terms (``date_trunc('day', ts) =
...``, ``CAST(ts AS DATE) = ...``, ``murmur3(k) % 16 = 3``, ``left(s, 2) =
'ab'``) stay in a ``Filter`` above the scan. This pass reads each such filter
from the optimized logical plan and points the matching Substrait read at a
query-scoped copy of the namespace table that also prunes with it
(:meth:`NamespaceTable.with_prune_filter`). The ``Filter`` itself stays where
it is, so rows are filtered exactly as before: the copy can only skip
partition tables no row of which could pass.

The filter's text comes from DataFusion's own unparser (plan -> SQL); a
condition on a time-zoned timestamp column is left out (the unparser drops
the zone of timestamp literals), and so is a filter with a string literal
holding two quotes in a row (the unparser prints ``a''b`` as ``a'b``) or a
SIMILAR TO (printed as LIKE), which only prunes less.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import sqlglot
from sqlglot import exp
from substrait import plan_pb2

from lance_sql.engines.datafusion import substrait_plan as sp
from lance_sql.engines.datafusion.namespace_provider import NamespaceTable
from lance_sql.engines.datafusion.sql_rewrite import fresh_table_name, register_query_table

_PASS_THROUGH = ("SubqueryAlias", "Projection")


def preorder(plan: Any) -> list[Any]:
    """Logical plan nodes, parent first, inputs left to right (the Substrait producer's order)."""
    out = [plan]
    for child in plan.inputs():
        out.extend(preorder(child))
    return out


def scan_name(node: Any) -> str | None:
    v = node.to_variant()
    return str(v.table_name()).split(".")[-1] if type(v).__name__ == "TableScan" else None


def _filtered_scan(node: Any) -> Any | None:
    """The TableScan right under a Filter node (through aliases and projections), else None."""
    child = node.inputs()[0]
    while type(child.to_variant()).__name__ in _PASS_THROUGH:
        child = child.inputs()[0]
    return child if scan_name(child) is not None else None


def attach_prune_filters(
    ctx: Any, plan: plan_pb2.Plan, logical: Any, namespaces: Mapping[str, NamespaceTable]
) -> dict[str, NamespaceTable]:
    """Point reads of filtered namespace scans at pruning copies: {copy name: copy}."""
    nodes = preorder(logical)
    reads = [r for r in sp.walk(sp.root_rel(plan)) if sp.table_name(r) is not None]
    scans = [name for n in nodes if (name := scan_name(n)) is not None]
    if scans != [sp.table_name(r) for r in reads]:
        return {}  # the two plans do not line up (a subquery expression): prune nothing more
    prune_sql: dict[int, str] = {}
    seen = 0  # TableScans before this node in pre-order: a Filter's scan is the next one
    for node in nodes:
        kind = type(node.to_variant()).__name__
        if kind == "TableScan":
            seen += 1
            continue
        if kind != "Filter" or _filtered_scan(node) is None:
            continue
        table = namespaces.get(scans[seen])
        if table is None or not table.prunes_with_planner:
            continue
        sql = _filter_sql(node, table.schema)
        if sql:
            prune_sql[seen] = sql
    attached: dict[str, NamespaceTable] = {}
    for index, sql in prune_sql.items():
        read = reads[index]
        old = sp.table_name(read) or ""
        name = fresh_table_name("__lance_pruned")
        copy = namespaces[old].with_prune_filter(sql)
        register_query_table(ctx, name, copy)
        sp.rename_tables(read, old, name)
        attached[name] = copy
    return attached


def _filter_sql(node: Any, schema: pa.Schema) -> str | None:
    """The Filter node's condition as SQL over unqualified namespace column names."""
    from datafusion.unparser import Dialect, Unparser

    shown = node.display_indent().splitlines()[0]
    if "''" in shown or " SIMILAR TO " in shown:
        # DataFusion 55's unparser prints a string literal holding two quotes in a row
        # wrongly (the value a''b as 'a''b', i.e. a'b) and SIMILAR TO as LIKE: pruning
        # with its text could skip the partitions the condition does match
        return None
    try:
        text = Unparser(Dialect.default()).plan_to_sql(node)
        select = sqlglot.parse_one(str(text), read="postgres")
        where = select.args.get("where")
    except Exception:  # something the unparser or sqlglot cannot print: prune nothing more
        return None
    if where is None:
        return None
    zoned = {
        f.name
        for f in schema
        if pa.types.is_timestamp(f.type) and getattr(f.type, "tz", None) is not None
    }
    fields = _struct_fields(select, schema)
    kept = []
    for conj in where.this.flatten() if isinstance(where.this, exp.And) else [where.this]:
        conj = conj.transform(lambda n: fields.get(n.name, n) if _bare(n) else n)
        cols = list(conj.find_all(exp.Column))
        if not cols or any(c.name in zoned or c.name not in schema.names for c in cols):
            continue
        for c in cols:
            c.set("table", None)
        kept.append(conj.sql(dialect="postgres"))
    return " AND ".join(f"({k})" for k in kept) or None


def _bare(node: exp.Expression) -> bool:
    return isinstance(node, exp.Column) and not node.table


def _struct_fields(select: exp.Expression, schema: pa.Schema) -> dict[str, exp.Expression]:
    """The Filter's input columns that are fields inside struct columns, as ``s['a']``.

    DataFusion 55's optimizer moves ``s['a']`` out of a Filter into a projection
    under it (``t.s.a AS __datafusion_extracted_1``); the unparser prints that
    projection in the SELECT list and the Filter over the alias.
    """
    out: dict[str, exp.Expression] = {}
    for item in select.expressions:
        if not isinstance(item, exp.Alias) or not isinstance(item.this, exp.Column):
            continue
        parts = [p.name for p in item.this.parts]
        while len(parts) > 1 and parts[0] not in schema.names:
            parts = parts[1:]  # a table qualifier
        if len(parts) < 2 or not pa.types.is_struct(schema.field(parts[0]).type):
            continue
        node: exp.Expression = exp.column(parts[0], quoted=True)
        for key in parts[1:]:
            node = exp.Bracket(this=node, expressions=[exp.Literal.string(key)])
        out[item.alias] = node
    return out


__all__ = ["attach_prune_filters", "preorder", "scan_name"]
