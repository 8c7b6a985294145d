"""A DELETE's condition and an UPDATE's new values, read from DataFusion's own plan.

The condition's predicate IR is decoded from the *optimized* plan's Substrait
form (literals typed and folded) to prune; the rows are filtered by DataFusion's
own expressions from the *unoptimized* plan (literals as written), so a
statement touches exactly the rows DataFusion's condition keeps.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import datafusion
import pyarrow as pa
from substrait import plan_pb2

from lance_sql.engines.datafusion import substrait_plan as sp
from lance_sql.engines.datafusion.dml_struct_check import refuse_dropped_fields
from lance_sql.engines.datafusion.prune_plan import condition_predicate, filter_predicate
from lance_sql.engines.datafusion.sql_dispatch import dispatch_sql
from lance_sql.engines.datafusion.sql_rewrite import registered
from lance_sql.engines.datafusion.substrait_stand_ins import producing
from lance_sql.errors import SchemaMismatchError, UnsupportedFeatureError
from lance_sql.spec.predicates import Predicate, Unsupported, and_
from lance_sql.tables.namespace.sql_eval import ROW, EnginePlan, RowCondition, quote
from lance_sql.tables.substrait_schema import without_field_metadata

_SUBQUERIES = frozenset({"ScalarSubquery", "Exists", "InSubquery", "OuterReferenceColumn"})


@dataclass(frozen=True)
class RowsPlan:
    """DataFusion expressions over the rows of one table (``table``: the name they
    qualify columns with), or of its inner join with table ``right`` on ``on``, for
    :meth:`.sql_evaluation.DataFusionSqlEngine.run_plan`: the rows where ``where`` is
    TRUE (None: all), as ``select``."""

    table: str
    select: tuple[Any, ...]
    where: Any = None
    right: str | None = None
    on: Any = None


def _columns(exprs: list[Any], schema: pa.Schema, name: str) -> tuple[str, ...]:
    """The table's columns ``exprs`` read (all of them where an expression is opaque);
    refuses a subquery."""
    found: set[str] = set()
    stack = list(exprs)
    while stack:
        expr = stack.pop()
        kind = expr.variant_name()
        if kind in _SUBQUERIES:
            raise UnsupportedFeatureError(
                f"a subquery in a DELETE, UPDATE or MERGE of namespace {name!r} is not supported"
            )
        if kind == "Column":
            found.add(str(expr.to_variant().name()))
        elif kind != "Literal":
            try:
                stack.extend(expr.rex_call_operands())
            except Exception:  # an expression kind without operands to walk
                return tuple(schema.names)
    return tuple(n for n in schema.names if n in found)


def _filter_node(source: Any) -> Any:
    """The ``Filter`` of a DELETE's or UPDATE's input plan (None: no WHERE)."""
    node = source
    while type(node.to_variant()).__name__ != "Filter":
        if type(node.to_variant()).__name__ != "Projection" or not node.inputs():
            return None
        node = node.inputs()[0]
    return node


def row_condition(ctx: Any, source: Any, table: Any, name: str) -> RowCondition | None:
    """The condition of a DELETE's or UPDATE's input plan ``source`` (None: every row)."""
    found = _filter_node(source)
    if found is None:
        return None
    predicate = datafusion.Expr(found.to_variant().predicate())
    columns = _columns([predicate], table.schema, name)
    text = str(predicate.canonical_name())
    rows = RowsPlan(name.split(".")[-1], (datafusion.col(ROW),), predicate)
    plan = EnginePlan(rows, columns, (ROW,), text)
    return RowCondition(_pruning(ctx, predicate, table, name, Unsupported(text, columns)), plan)


@dataclass(frozen=True)
class _Rows:
    """A stand-in table of ``schema`` whose filters prune with the predicate IR."""

    schema: pa.Schema
    prunes_with_planner: bool = True


_STAND_IN = "__lance_sql_rows"


def text_condition(ctx: Any, schema: pa.Schema, where: str) -> RowCondition:
    """SQL filter text over ``schema`` as the :class:`RowCondition` a DELETE with that WHERE
    gets: DataFusion plans ``SELECT * FROM <empty table of schema> WHERE <where>``."""
    with registered(ctx, {_STAND_IN: schema.empty_table()}):
        sql = dispatch_sql(ctx, f"SELECT * FROM {_STAND_IN} WHERE {where}")
        found = row_condition(ctx, ctx.sql(sql).logical_plan(), _Rows(schema), _STAND_IN)
    assert found is not None  # the statement has a WHERE
    return found


def text_values(ctx: Any, schema: pa.Schema, set: Mapping[str, str]) -> EnginePlan | None:
    """SQL expressions of columns of ``schema`` as the new values an UPDATE with that SET
    computes (:func:`update_values`; None: every column set to itself)."""
    with registered(ctx, {_STAND_IN: schema.empty_table()}):
        items = ", ".join(f"{quote(column)} = {value}" for column, value in set.items())
        sql = dispatch_sql(ctx, f"UPDATE {_STAND_IN} SET {items}")
        return update_values(ctx, ctx.sql(sql).logical_plan().inputs()[0], schema, _STAND_IN)[0]


def _pruning(ctx: Any, predicate: Any, table: Any, name: str, unknown: Predicate) -> Predicate:
    """The whole condition as pruning IR, from the optimized plan (``unknown`` for other shapes)."""
    try:
        with producing():  # the table's schema as the producer takes it (vector columns)
            base = datafusion.SessionContext.table(ctx, name)
            plan = plan_pb2.Plan()
            optimized = base.filter(predicate).optimized_logical_plan()
            plan.ParseFromString(
                datafusion.substrait.Producer.to_substrait_plan(optimized, ctx).encode()
            )
    except Exception:  # nothing to prune with: every partition is read and filtered
        return unknown
    functions = sp.function_names(plan)
    rels = list(sp.walk(sp.root_rel(plan)))
    reads = [r for r in rels if sp.kind(r) == "read"]
    if len(reads) != 1 or any(sp.kind(r) not in ("read", "filter", "project") for r in rels):
        return unknown
    parts: list[Predicate] = []
    read = reads[0].read
    if read.HasField("filter"):  # what the table takes exactly (``full_filters``)
        fields = [(n,) for n in sp.top_level_names(read.base_schema)]
        pred = condition_predicate(read.filter, functions, table.schema, fields, strict=True)
        parts.append(unknown if pred is None else pred)
    namespaces = {sp.table_name(reads[0]) or "": table}
    for rel in rels:
        if sp.kind(rel) == "filter":
            found = filter_predicate(rel, namespaces, functions, strict=True)
            parts.append(unknown if found is None else found[2])
    return and_(*parts) if parts else unknown


def update_values(
    ctx: Any, source: Any, schema: pa.Schema, name: str
) -> tuple[EnginePlan | None, list[str]]:
    """An UPDATE's new values as a plan over the matched rows (None: no change), and
    the changed columns; a struct value with fields the column lacks is refused."""
    values = {
        f.name: datafusion.Expr(expr)
        for expr, f in zip(source.to_variant().projections(), schema, strict=True)
        if not _is_column(expr, f.name)
    }
    if not values:
        return None, []
    base = datafusion.SessionContext.table(ctx, name)
    for column, expr in values.items():
        inner = expr.to_variant().expr() if expr.variant_name() == "Alias" else None
        if inner is None or inner.variant_name() != "Cast":
            continue
        bare = base.select(datafusion.Expr(inner.to_variant().expr()).alias(column))
        given = bare.schema().field(column).type
        refuse_dropped_fields(given, schema.field(column), f"UPDATE of {name!r}")
    changed = list(values)
    rows = RowsPlan(name.split(".")[-1], (*values.values(), datafusion.col(ROW)))
    columns = _columns(list(values.values()), schema, name)
    return EnginePlan(rows, columns, (*changed, ROW), ", ".join(changed)), changed


def _is_column(expr: Any, column: str) -> bool:
    """``expr`` is the column itself (``t.c AS c``): the UPDATE leaves it as it is."""
    if expr.variant_name() == "Alias":
        expr = expr.to_variant().expr()
    return expr.variant_name() == "Column" and str(expr.to_variant().name()) == column


_TARGET, _SOURCE = "__lance_sql_merge_target", "__lance_sql_merge_source"


def plan_merge(ctx: Any, target: pa.Schema, source: pa.Schema, merge: Any) -> Any:
    """A MERGE's SQL texts as a ``MergePlan``: each part planned once by DataFusion over
    empty target and source tables, under the statement's aliases."""
    from lance_sql.tables.namespace.merge_rows import MergePlan

    t, s = quote(merge.target), quote(merge.source)
    row_t, row_s = f"{t}.{quote(ROW)}", f"{s}.{quote(ROW)}"
    numbered = pa.schema([*target, pa.field(ROW, pa.int64())])
    with registered(ctx, {_TARGET: numbered.empty_table(), _SOURCE: source.empty_table()}):
        lone_t, lone_s = f"{_TARGET} AS {t}", f"{_SOURCE} AS {s}"
        joined = f"{lone_t} JOIN {lone_s} ON "
        matched = _case(merge.of("matched"))
        pairs = _planned(ctx, f"{row_t}, {row_s}, {matched}", f"{joined}({merge.on})", merge)
        by_source, inserts = merge.of("by_source"), merge.of("not_matched")
        lone_target = lone_source = None
        if by_source:
            lone_target = _planned(ctx, f"{_case(by_source)}, {row_t}", lone_t, merge)
        if inserts:
            lone_source = _planned(ctx, f"{_case(inserts)}, {row_s}", lone_s, merge)
        values = []
        for clause in merge.clauses:
            if clause.values is None:
                values.append(None)
                continue
            rows = lone_s if clause.action == "insert" else lone_t
            if clause.when == "matched":
                rows = joined + f"{row_t} = {row_s}"
            row = row_s if clause.action == "insert" else row_t
            values.append(_values_plan(ctx, clause.values, rows, row, target, merge))
    keys = _join_keys(pairs.plan.on, merge.target, merge.source)
    return MergePlan(merge, keys, pairs, lone_target, lone_source, tuple(values))


def _join_keys(on: Any, target: str, source: str) -> tuple[tuple[str, str], ...]:
    """The (target column, source column) equalities among the conjuncts of ``on``."""
    node = on.to_variant()
    if type(node).__name__ != "BinaryExpr" or node.op() not in ("AND", "="):
        return ()
    sides = [datafusion.Expr(e) for e in (node.left(), node.right())]
    if node.op() == "AND":
        return tuple(k for side in sides for k in _join_keys(side, target, source))
    sides = [side.to_variant() for side in sides]
    if any(type(v).__name__ != "Column" for v in sides):
        return ()
    named = {str(v.relation()): str(v.name()) for v in sides}
    return ((named[target], named[source]),) if set(named) == {target, source} else ()


def _case(clauses: list[Any]) -> str:
    """The index of the first of ``clauses`` whose condition holds (-1: none)."""
    whens = " ".join(f"WHEN ({c.condition or 'TRUE'}) THEN {i}" for i, c in enumerate(clauses))
    return f"CASE {whens} ELSE -1 END" if whens else "-1"


def _planned(
    ctx: Any, select: str, rows: str, merge: Any, types: Mapping[str, pa.DataType] | None = None
) -> EnginePlan:
    """``SELECT select FROM rows`` as DataFusion plans it (an :class:`EnginePlan`)."""
    df = ctx.sql(dispatch_sql(ctx, f"SELECT {select} FROM {rows}"))
    plan = df.logical_plan()
    exprs = [datafusion.Expr(e) for e in plan.to_variant().projections()]
    node = plan.inputs()[0].to_variant()
    on = None
    if type(node).__name__ == "Join":
        found = [datafusion.Expr(a) == datafusion.Expr(b) for a, b in node.on()]
        if node.filter() is not None:
            found.append(datafusion.Expr(node.filter()))
        on = found[0]
        for term in found[1:]:
            on = on & term
    if (on is None) == (" JOIN " in rows):
        raise UnsupportedFeatureError(f"{merge.what}: DataFusion planned {rows} another way")
    _columns([*exprs, *([] if on is None else [on])], pa.schema([]), merge.what)  # no subquery
    outputs = tuple(f"__lance_sql_{i}" for i in range(len(exprs)))
    if types is not None:
        bare = df.schema()
        for i, (column, want) in enumerate(types.items()):
            refuse_dropped_fields(bare.field(i).type, pa.field(column, want), merge.what)
            inner = exprs[i]
            if inner.variant_name() == "Alias":
                inner = datafusion.Expr(inner.to_variant().expr())
            exprs[i] = inner.cast(without_field_metadata(want)).alias(column)
        outputs = (*types, ROW)
    table = merge.source if rows.startswith(_SOURCE) else merge.target
    plan_rows = RowsPlan(table, tuple(exprs), right=None if on is None else merge.source, on=on)
    return EnginePlan(plan_rows, (), outputs, select)


def _values_plan(
    ctx: Any, values: Any, rows: str, row: str, target: pa.Schema, merge: Any
) -> EnginePlan:
    """New values ((column, SQL) pairs) cast to their columns' types, then ROW."""
    unknown = [c for c, _ in values if c not in target.names]
    if unknown:
        raise SchemaMismatchError(f"{merge.what}: no column(s) {unknown} in the target")
    select = ", ".join(f"({sql}) AS {quote(c)}" for c, sql in values)
    types = {c: target.field(c).type for c, _ in values}
    return _planned(ctx, f"{select}, {row}", rows, merge, types)
