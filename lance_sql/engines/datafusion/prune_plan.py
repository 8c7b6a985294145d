"""Transform-term pruning over a query's plan: conditions DataFusion keeps above a namespace scan.

Conditions DataFusion cannot push as pyarrow expressions (``date_trunc``, casts,
``murmur3(k) % 16``, ``LIKE 'ab%'``) are decoded from the Substrait plan into the
predicate IR and prune a query-scoped copy of the namespace table; the
``Filter`` stays, so rows are filtered exactly as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from substrait import algebra_pb2, plan_pb2

from lance_sql.engines.datafusion import substrait_plan as sp
from lance_sql.engines.datafusion.sql_rewrite import fresh_table_name, register_query_table
from lance_sql.planning.substrait_filter import Computed, decode_condition
from lance_sql.spec.predicates import Predicate, Unsupported, and_, columns_of, conjuncts

if TYPE_CHECKING:
    from lance_sql.engines.datafusion.namespace_provider import NamespaceTable

#: an input field of a relation: the read's column it is (its name, then the names of
#: struct fields inside it), else the expression computing it
_Path = tuple[str, ...] | Computed | None


def preorder(plan: Any) -> list[Any]:
    """Logical plan nodes, parent first, inputs left to right (the Substrait producer's order)."""
    out = [plan]
    for child in plan.inputs():
        out.extend(preorder(child))
    return out


def scan_name(node: Any) -> str | None:
    v = node.to_variant()
    return str(v.table_name()).split(".")[-1] if type(v).__name__ == "TableScan" else None


def attach_prune_filters(
    ctx: Any, plan: plan_pb2.Plan, namespaces: Mapping[str, NamespaceTable]
) -> dict[str, NamespaceTable]:
    """Point reads of filtered namespace scans at pruning copies: {copy name: copy}."""
    functions = sp.function_names(plan)
    attached: dict[str, NamespaceTable] = {}
    for rel in list(sp.walk(sp.root_rel(plan))):
        found = filter_predicate(rel, namespaces, functions)
        if found is None:
            continue
        read, table, pred = found
        name = fresh_table_name("__lance_pruned")
        copy = table.with_prune_filter(pred)
        register_query_table(ctx, name, copy)
        sp.rename_tables(read, sp.table_name(read) or "", name)
        attached[name] = copy
    return attached


def filter_predicate(
    rel: sp.Rel,
    namespaces: Mapping[str, NamespaceTable],
    functions: dict[int, str],
    *,
    strict: bool = False,
) -> tuple[sp.Rel, NamespaceTable, Predicate] | None:
    """A Filter over a namespace read: (the read, its table, the condition's pruning IR);
    with ``strict`` the IR means the whole condition, so it may prove partitions."""
    if sp.kind(rel) != "filter":
        return None
    found = _read_fields(rel.filter.input, namespaces, functions)
    if found is None:
        return None
    read, table, fields = found
    if _nested_literal(rel.filter.condition):
        # DataFusion 55's Substrait consumer names a struct literal's fields c0, c1, ...:
        # the re-read plan could not compare a list-of-struct column with it
        return (read, table, Unsupported("a nested literal")) if strict else None
    pred = condition_predicate(rel.filter.condition, functions, table.schema, fields, strict)
    return None if pred is None else (read, table, pred)


_NESTED_LITERALS = frozenset({"list", "empty_list", "struct", "map", "empty_map"})


def _nested_literal(message: Any) -> bool:
    """Whether a Substrait expression holds a list, struct or map literal anywhere."""
    return any(
        isinstance(m, algebra_pb2.Expression.Literal)
        and m.WhichOneof("literal_type") in _NESTED_LITERALS
        for m in sp.messages(message)
    )


def _read_fields(
    rel: sp.Rel, namespaces: Mapping[str, NamespaceTable], functions: dict[int, str]
) -> tuple[sp.Rel, NamespaceTable, list[_Path]] | None:
    """The namespace read under ``rel``, its table, and what each output field is."""
    kind = sp.kind(rel)
    if kind == "read":
        table = namespaces.get(sp.table_name(rel) or "")
        if table is None or not table.prunes_with_planner:
            return None
        names = table.schema.names
        items = sp.read_fields(rel.read)
        if any(not 0 <= i < len(names) for i in items):
            return None  # a read whose schema is not the table's: prune nothing more
        return rel, table, sp.emitted(rel, [(names[i],) for i in items])
    if kind != "project":
        return None
    below = _read_fields(rel.project.input, namespaces, functions)
    if below is None:
        return None
    read, table, fields = below
    out = list(fields)
    for expr in rel.project.expressions:
        out.append(_path_of(expr, fields, functions) or Computed(expr, fields))
    return read, table, sp.emitted(rel, out)


def _path_of(expr: Any, fields: list[_Path], functions: dict[int, str]) -> _Path:
    """The column a projected expression is: a column, or ``get_field`` of a struct column."""
    ref = sp.field_ref(expr)
    if ref is not None:
        return fields[ref] if ref < len(fields) else None
    if expr.WhichOneof("rex_type") != "scalar_function":
        return None
    fn = expr.scalar_function
    args = [a.value for a in fn.arguments]
    if functions.get(fn.function_reference) != "get_field" or len(args) < 2:
        return None
    base = _path_of(args[0], fields, functions)
    keys = [a.literal for a in args[1:] if a.WhichOneof("rex_type") == "literal"]
    if not isinstance(base, tuple) or len(keys) != len(args) - 1:
        return None
    if any(k.WhichOneof("literal_type") != "string" for k in keys):
        return None
    return (*base, *(k.string for k in keys))


def condition_predicate(
    condition: Any,
    functions: dict[int, str],
    schema: pa.Schema,
    fields: list[_Path],
    strict: bool = False,
) -> Predicate | None:
    """A Filter's condition as pruning IR over the namespace columns, else None."""
    zoned = {f.name for f in schema if pa.types.is_timestamp(f.type) and f.type.tz is not None}
    pred = decode_condition(condition, functions, schema, fields)
    kept = []
    for c in conjuncts(pred):
        if columns_of(c) & zoned and strict:
            kept.append(Unsupported("a condition on a zoned timestamp", tuple(columns_of(c))))
        elif (columns_of(c) or strict) and not columns_of(c) & zoned:
            kept.append(c)
    return and_(*kept) if kept else None
