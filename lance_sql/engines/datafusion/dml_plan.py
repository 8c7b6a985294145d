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
from substrait import algebra_pb2, plan_pb2, type_pb2

from lance_sql.engines.datafusion import substrait_plan as sp
from lance_sql.engines.datafusion.prune_plan import condition_predicate, filter_predicate
from lance_sql.errors import SchemaMismatchError, UnsupportedFeatureError, first_line
from lance_sql.spec.predicates import Predicate, Unsupported, and_
from lance_sql.tables.namespace.schema_rule import extra_fields
from lance_sql.tables.namespace.sql_eval import ROW, ROWS, EnginePlan, RowCondition
from lance_sql.tables.substrait_schema import nested_names, referenced_positions


def _substrait(ctx: Any, node: Any, name: str) -> plan_pb2.Plan:
    try:
        plan = sp.to_substrait(ctx, node)
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


def _parts(plan: plan_pb2.Plan, name: str) -> tuple[sp.Rel | None, sp.Rel | None, sp.Rel]:
    """(the Projection, the Filter, the read) of a DELETE's or UPDATE's input plan."""
    rel = sp.root_rel(plan)
    project = filt = None
    if sp.kind(rel) == "project":
        project, rel = rel, rel.project.input
    if sp.kind(rel) == "filter":
        filt, rel = rel, rel.filter.input
    if sp.kind(rel) != "read" or not rel.read.HasField("named_table"):
        raise UnsupportedFeatureError(  # a join or a second table
            f"the statement on {name!r} reads more than its table; not supported"
        )
    return project, filt, rel


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


def _over_rows(
    plan: plan_pb2.Plan, top: sp.Rel, read: sp.Rel, keep: list[int], numbered: bool
) -> tuple[bytes, tuple[str, ...]]:
    """``top`` (a Filter or a Projection right over ``read``) as a plan reading :data:`ROWS`:
    the base fields ``keep`` (and :data:`ROW` when ``numbered``); (its bytes, the columns)."""
    types, names, outputs = _base_fields(read)
    rows = algebra_pb2.Rel()
    rows.read.named_table.names.append(ROWS)
    schema = rows.read.base_schema
    schema.struct.nullability = type_pb2.Type.NULLABILITY_REQUIRED
    for i in keep:
        schema.names.extend(names[i])
        schema.struct.types.append(types[i])
    if numbered:
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
    for expr in exprs:  # the read's output field j is base field outputs[j]
        for ref in sp.field_references(expr):
            field = ref.direct_reference.struct_field
            field.field = keep.index(outputs[field.field])
    width = len(keep) + numbered
    if sp.kind(body) == "project" and node.common.HasField("emit"):
        mapping = [width + i for i in range(len(node.expressions))]
        del node.common.emit.output_mapping[:]
        node.common.emit.output_mapping.extend(mapping)
    out = sp.subplan(plan, body)
    out_names = (
        list(schema.names) if sp.kind(body) == "filter" else list(plan.relations[0].root.names)
    )
    out.relations[0].root.names.extend(out_names)
    return out.SerializeToString(), tuple(names[i][0] for i in keep)


def _condition_text(source: Any) -> str:
    node = source
    while type(node.to_variant()).__name__ != "Filter":
        node = node.inputs()[0]
    return str(node.to_variant().predicate().canonical_name())


def row_condition(ctx: Any, source: Any, table: Any, name: str) -> RowCondition | None:
    """The condition of a DELETE's or UPDATE's input plan ``source`` (None: every row)."""
    plan = _substrait(ctx, source, name)
    _, filt, read = _parts(plan, name)
    if filt is None:
        return None
    _, _, outputs = _base_fields(read)
    keep = sorted({outputs[i] for i in referenced_positions(filt.filter.condition)})
    try:
        body, columns = _over_rows(plan, filt, read, keep, numbered=True)
    except ValueError as exc:  # a reference positions alone cannot move
        raise UnsupportedFeatureError(
            f"the condition of the statement on {name!r} is not supported: {exc}"
        ) from exc
    text = _condition_text(source)
    unknown = Unsupported(text, columns)
    return RowCondition(_pruning(ctx, source, table, unknown), EnginePlan(body, columns, text))


def _pruning(ctx: Any, source: Any, table: Any, unknown: Predicate) -> Predicate:
    """The whole condition as IR for pruning, from the optimized plan, where DataFusion
    typed its literals: the Filters over the read and the filter pushed into the read
    (``unknown`` when the plan has another shape: nothing prunes, nothing is proven)."""
    try:
        df = datafusion.SessionContext.create_dataframe_from_logical_plan(ctx, source)
        plan = sp.to_substrait(ctx, df.optimized_logical_plan())
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
    """An UPDATE's new rows as a plan over the matched rows (None: no column changes) and the
    columns it changes."""
    variant = source.to_variant()
    changed = [
        f.name
        for expr, f in zip(variant.projections(), schema, strict=True)
        if not _is_column(expr, f.name)
    ]
    if not changed:
        return None, changed
    plan = _substrait(ctx, _without_nested_casts(ctx, source, schema, name), name)
    project, _, read = _parts(plan, name)
    if project is None:
        raise UnsupportedFeatureError(f"UPDATE of {name!r}: an unexpected plan")
    types, _, _ = _base_fields(read)
    body, columns = _over_rows(plan, project, read, list(range(len(types))), numbered=False)
    return EnginePlan(body, columns, ", ".join(changed)), changed


def _is_column(expr: Any, column: str) -> bool:
    """``expr`` is the column itself (``t.c AS c``): the UPDATE leaves it as it is."""
    node = expr.to_variant()
    if type(node).__name__ == "Alias":
        node = node.expr().to_variant()
    return type(node).__name__ == "Column" and str(node.name()) == column


def _nested(t: pa.DataType) -> bool:
    return pa.types.is_nested(t) or isinstance(t, pa.BaseExtensionType)


def _without_nested_casts(ctx: Any, node: Any, schema: pa.Schema, name: str) -> Any:
    """An UPDATE's input plan without the outer casts of its nested-type SET values.

    DataFusion casts every SET value to its column's type; a Substrait cast to a
    struct type loses the field names (DataFusion 55's consumer names them c0,
    c1, ...), so the value is computed bare and cast to the column by name
    afterwards (``merge._cast_to``). A value carrying struct fields the column
    lacks is refused (the cast would drop them).
    """
    variant = node.to_variant()
    items, recast = [], []
    for raw, field in zip(variant.projections(), schema, strict=True):
        alias = raw.to_variant()
        if type(alias).__name__ == "Alias" and _nested(field.type):
            inner = alias.expr().to_variant()
            if type(inner).__name__ == "Cast":
                items.append(datafusion.Expr(inner.expr()).alias(alias.alias()))
                recast.append(field.name)
                continue
        items.append(datafusion.Expr(raw))
    if not recast:
        return node
    base = datafusion.SessionContext.create_dataframe_from_logical_plan(ctx, node.inputs()[0])
    bare = base.select(*items)
    given = bare.schema()
    for column in recast:  # the cast would drop them, as INSERT's would
        extra = extra_fields(given.field(column).type, schema.field(column).type)
        if extra:
            raise SchemaMismatchError(
                f"UPDATE of {name!r}: the new value of column {column!r} carries fields "
                f"{extra} the column lacks; add them first (add_columns) or leave them out"
            )
    return bare.logical_plan()


__all__ = ["row_condition", "update_values"]
