"""A DELETE's condition and an UPDATE's new values, read from DataFusion's own plan.

DataFusion plans ``DELETE`` as ``Filter(condition, TableScan)`` and ``UPDATE``
as ``Projection(values, Filter(condition, TableScan))``. The row operations
(:mod:`lance_sql.tables.namespace.delete`, ``.merge``) receive them converted
once, through Substrait (:mod:`.substrait_plan`), never as SQL text:

* the condition as a :class:`~lance_sql.tables.namespace.sql_eval.RowCondition`:
  its predicate IR, decoded from the *optimized* plan (where DataFusion has
  typed and folded the literals) as the transform-term pruning of queries
  decodes it (:func:`.prune_plan.filter_predicate`), prunes partitions and
  pre-filters Lance scans; and the condition itself, as a Substrait ``Filter``
  over a read of the rows of one partition table (the columns it reads and a
  row number), is what the SQL engine service runs on those rows. So a
  statement touches exactly the rows DataFusion's condition keeps, with its
  NaN, cast, time-zone, struct-field and NULL rules;
* UPDATE's values as an :class:`~lance_sql.tables.namespace.sql_eval.EnginePlan`:
  the ``Projection`` over the matched rows (its ``Filter`` taken out: a
  volatile condition is not drawn twice).

The plan converted for the rows is the *unoptimized* one: its literals are as
written (nested values are ``named_struct`` / ``make_array`` calls there, not
the struct literals whose field names DataFusion 55's Substrait consumer loses),
and the engine analyses it again where it runs.
"""

from __future__ import annotations

from typing import Any

import datafusion
import pyarrow as pa
from datafusion import functions
from datafusion import substrait as ss
from substrait import algebra_pb2, plan_pb2, type_pb2

from lance_sql.engines.datafusion import substrait_plan as sp
from lance_sql.engines.datafusion.dml_target import type_names
from lance_sql.engines.datafusion.prune_plan import condition_predicate, filter_predicate
from lance_sql.engines.datafusion.substrait_stand_ins import MARKER, producing
from lance_sql.errors import SchemaMismatchError, UnsupportedFeatureError, first_line
from lance_sql.spec.predicates import Predicate, Unsupported, and_
from lance_sql.tables.namespace.schema_rule import extra_fields
from lance_sql.tables.namespace.sql_eval import ROW, ROWS, EnginePlan, RowCondition
from lance_sql.tables.substrait_schema import nested_names, referenced_positions


def _substrait(ctx: Any, node: Any, name: str) -> plan_pb2.Plan:
    """``node`` as Substrait; a table's fixed-size list columns are stand-ins there
    (:mod:`.substrait_stand_ins`): the plans made here read only the columns they use,
    checked in :func:`_over_rows`."""
    plan = plan_pb2.Plan()
    try:
        with producing():
            plan.ParseFromString(ss.Producer.to_substrait_plan(node, ctx).encode())
    except Exception as exc:
        raise UnsupportedFeatureError(
            f"the statement on {name!r} cannot be run by the row operations: DataFusion's "
            f"Substrait producer refused it ({first_line(exc)})"
        ) from exc
    if sp.has_subquery(plan):
        raise UnsupportedFeatureError(
            f"a subquery in a DELETE or UPDATE of namespace {name!r} is not supported"
        )
    return plan


def _over_read(plan: plan_pb2.Plan, kind: str, name: str) -> tuple[sp.Rel, sp.Rel]:
    """The plan's root (a ``kind`` relation: filter or project) and the read right under it."""
    top = sp.root_rel(plan)
    read = getattr(top, kind).input if sp.kind(top) == kind else None
    if read is None or sp.kind(read) != "read" or not read.read.HasField("named_table"):
        raise UnsupportedFeatureError(  # a join or a second table
            f"the statement on {name!r} reads more than its table; not supported"
        )
    return top, read


def _base_fields(read: sp.Rel) -> tuple[list[Any], list[list[str]], list[int]]:
    """The read's base fields: their types, their names (depth first), and which base
    field each output field of the read is."""
    base = read.read.base_schema
    types, names, at = list(base.struct.types), [], 0
    for t in types:
        width = 1 + nested_names(t)
        names.append(list(base.names[at : at + width]))
        at += width
    if read.read.HasField("projection"):
        outputs = [i.field for i in read.read.projection.select.struct_items]
    else:
        outputs = list(range(len(types)))
    return types, names, outputs


def _over_rows(plan: plan_pb2.Plan, kind: str, name: str) -> tuple[bytes, tuple[str, ...]]:
    """The plan (a ``kind`` relation, filter or project, over a read) reading :data:`ROWS`
    instead: only the columns its expressions use, and :data:`ROW`, which a projection
    outputs last; (its bytes, the columns it reads)."""
    top, read = _over_read(plan, kind, name)
    types, names, outputs = _base_fields(read)
    used = [top.filter.condition] if kind == "filter" else list(top.project.expressions)
    keep = sorted({outputs[i] for e in used for i in referenced_positions(e) if i < len(outputs)})
    stand_ins = [names[i][0] for i in keep if MARKER in names[i]]
    if stand_ins:
        raise UnsupportedFeatureError(
            f"the statement on {name!r} reads fixed-size list column(s) {stand_ins}, which "
            "DataFusion 55's Substrait round trip cannot carry; not supported"
        )
    rows = algebra_pb2.Rel()
    rows.read.named_table.names.append(ROWS)
    schema = rows.read.base_schema
    schema.struct.nullability = type_pb2.Type.NULLABILITY_REQUIRED
    for i in keep:
        schema.names.extend(names[i])
        schema.struct.types.append(types[i])
    schema.names.append(ROW)
    schema.struct.types.add().i64.SetInParent()
    for msg in sp.messages(schema.struct):  # the rows decide: DataFusion refuses a NULL
        if msg is not schema.struct and "nullability" in msg.DESCRIPTOR.fields_by_name:
            msg.nullability = type_pb2.Type.NULLABILITY_NULLABLE  # where it was told "never"
    body = algebra_pb2.Rel()
    body.CopyFrom(top)
    node = getattr(body, sp.kind(body))
    node.input.CopyFrom(rows)
    exprs = [node.condition] if sp.kind(body) == "filter" else list(node.expressions)
    try:
        for expr in exprs:  # the read's output field j is base field outputs[j]
            for ref in sp.field_references(expr):
                field = ref.direct_reference.struct_field
                field.field = keep.index(outputs[field.field])
    except ValueError as exc:  # a reference positions alone cannot move
        raise UnsupportedFeatureError(
            f"the statement on {name!r} is not supported by the row operations: {exc}"
        ) from exc
    if sp.kind(body) == "project":
        del node.common.emit.output_mapping[:]
        width = len(keep) + 1
        node.common.emit.output_mapping.extend([width + i for i in range(len(exprs))])
        node.common.emit.output_mapping.append(len(keep))
    out = sp.subplan(plan, body)  # no output names: the result is read by position
    return out.SerializeToString(), tuple(names[i][0] for i in keep)


def _filter_node(source: Any) -> Any:
    """The ``Filter`` of a DELETE's or UPDATE's input plan (None: no WHERE)."""
    node = source
    while node.to_variant().__class__.__name__ != "Filter":
        if node.to_variant().__class__.__name__ != "Projection" or not node.inputs():
            return None
        node = node.inputs()[0]
    return node


def row_condition(ctx: Any, source: Any, table: Any, name: str) -> RowCondition | None:
    """The condition of a DELETE's or UPDATE's input plan ``source`` (None: every row)."""
    found = _filter_node(source)
    if found is None:
        return None
    predicate = found.to_variant().predicate()
    with producing():  # the table's schema as the producer takes it (vector columns)
        base = datafusion.SessionContext.table(ctx, name)
    node = base.filter(datafusion.Expr(predicate)).logical_plan()
    body, columns = _over_rows(_substrait(ctx, node, name), "filter", name)
    text = str(predicate.canonical_name())
    unknown = Unsupported(text, columns)
    rows = EnginePlan(body, columns, (*columns, ROW), text)
    return RowCondition(_pruning(ctx, node, table, unknown), rows)


def _pruning(ctx: Any, source: Any, table: Any, unknown: Predicate) -> Predicate:
    """The whole condition as IR for pruning, from the optimized plan, where DataFusion
    typed its literals: the Filters over the read and the filter pushed into the read
    (``unknown`` when the plan has another shape: nothing prunes, nothing is proven)."""
    try:
        df = datafusion.SessionContext.create_dataframe_from_logical_plan(ctx, source)
        plan = _substrait(ctx, df.optimized_logical_plan(), "")
    except Exception:
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
    """An UPDATE's new values of the columns it changes, as a plan over the matched rows
    (None: it changes none), and those columns."""
    projections = source.to_variant().projections()
    changed = [
        f.name for expr, f in zip(projections, schema, strict=True) if not _is_column(expr, f.name)
    ]
    if not changed:
        return None, changed
    node = _changed_values(ctx, source, schema, changed, name)
    body, columns = _over_rows(_substrait(ctx, node, name), "project", name)
    return EnginePlan(body, columns, (*changed, ROW), ", ".join(changed)), changed


def _is_column(expr: Any, column: str) -> bool:
    """``expr`` is the column itself (``t.c AS c``): the UPDATE leaves it as it is."""
    if expr.variant_name() == "Alias":
        expr = expr.to_variant().expr()
    return expr.variant_name() == "Column" and str(expr.to_variant().name()) == column


def _nested(t: pa.DataType) -> bool:
    return pa.types.is_nested(t) or isinstance(t, pa.BaseExtensionType)


def _changed_values(ctx: Any, node: Any, schema: pa.Schema, changed: list[str], name: str) -> Any:
    """An UPDATE's input plan computing only its changed columns, the outer casts of
    nested and zoned values replaced.

    DataFusion casts every SET value to its column's type, but a Substrait cast
    type carries neither struct field names (DataFusion 55's consumer names them
    c0, c1, ...) nor a time zone. So a nested value is computed bare and cast to
    the column by name afterwards (``merge._cast_to``; a value carrying struct
    fields the column lacks is refused: the cast would drop them), and a value
    for a zoned timestamp column is cast by ``arrow_cast`` to the type DataFusion
    names (a naive value is local time in the column's zone, as in DataFusion).
    """
    items, recast = [], []
    for raw, field in zip(node.to_variant().projections(), schema, strict=True):
        if field.name not in changed:
            continue
        zoned = pa.types.is_timestamp(field.type) and field.type.tz is not None
        if raw.variant_name() == "Alias" and (_nested(field.type) or zoned):
            alias = raw.to_variant()
            if alias.expr().variant_name() == "Cast":
                inner = datafusion.Expr(alias.expr().to_variant().expr())
                if zoned:
                    named = type_names(pa.schema([field]))[field.name]
                    inner = functions.arrow_cast(
                        inner, datafusion.lit(pa.scalar(named, pa.string()))
                    )
                else:
                    recast.append(field.name)
                items.append(inner.alias(alias.alias()))
                continue
        items.append(datafusion.Expr(raw))
    with producing():  # the table's schema as the producer takes it (vector columns)
        base = datafusion.SessionContext.table(ctx, name)
    values = base.select(*items)
    given = values.schema()
    for column in recast:  # the cast would drop them, as INSERT's would
        extra = extra_fields(given.field(column).type, schema.field(column).type)
        if extra:
            raise SchemaMismatchError(
                f"UPDATE of {name!r}: the new value of column {column!r} carries fields "
                f"{extra} the column lacks; add them first (add_columns) or leave them out"
            )
    return values.logical_plan()


__all__ = ["row_condition", "update_values"]
