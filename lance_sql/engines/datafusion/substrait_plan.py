"""DataFusion logical plans as Substrait messages, and back: the plan-level edge of lance-sql.

datafusion-python 55 cannot build or edit plan nodes from Python, but converts
plans to and from Substrait; columns are positions there, so a subtree can be
replaced by a read with the same columns (docs/engine-notes.md, "Plan-level
integration"). This module only converts and walks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import datafusion
from datafusion import substrait as ss
from substrait import algebra_pb2, plan_pb2, type_pb2

from lance_sql.engines.datafusion.substrait_stand_ins import (
    column_spans,
    drop_stand_ins,
    producing,
)
from lance_sql.tables.substrait_schema import messages

Rel = algebra_pb2.Rel
_J = algebra_pb2.JoinRel

#: Join types that return only their left input's rows (and those that return only the right's).
LEFT_ONLY_JOINS = (
    _J.JOIN_TYPE_LEFT_SEMI,
    _J.JOIN_TYPE_LEFT_ANTI,
    _J.JOIN_TYPE_LEFT_SINGLE,
    _J.JOIN_TYPE_LEFT_MARK,
)
RIGHT_ONLY_JOINS = (
    _J.JOIN_TYPE_RIGHT_SEMI,
    _J.JOIN_TYPE_RIGHT_ANTI,
    _J.JOIN_TYPE_RIGHT_SINGLE,
    _J.JOIN_TYPE_RIGHT_MARK,
)

#: Rel kinds whose single input keeps every row's identity (a filter or a projection):
#: a join input made of these over a read is "a scan" for storage-partitioned joins.
ROW_WISE = ("filter", "project")


#: ``common.hint.alias`` of the joins :mod:`.not_in` adds (never storage-partitioned)
NOT_IN_HINT = "lance_sql.not_in"


def to_substrait(ctx: Any, logical_plan: Any) -> plan_pb2.Plan:
    """``logical_plan`` as a Substrait plan message (raises where DataFusion cannot convert)."""
    plan = plan_pb2.Plan()
    with producing():  # vector columns: see substrait_stand_ins
        plan.ParseFromString(ss.Producer.to_substrait_plan(logical_plan, ctx).encode())
    drop_stand_ins(plan)
    return plan


def from_substrait(ctx: Any, plan: plan_pb2.Plan) -> Any:
    """The DataFusion logical plan of ``plan``, resolving table names in ``ctx``."""
    try:
        return ss.Consumer.from_substrait_plan(
            ctx, ss.Serde.deserialize_bytes(plan.SerializeToString())
        )
    except BaseException as exc:  # a Rust panic (pyo3 PanicException) is a BaseException
        if type(exc).__name__ != "PanicException":
            raise
        raise ValueError(f"DataFusion's Substrait consumer panicked: {exc}") from exc


def table_read(ctx: Any, name: str) -> Rel:
    """A read of table ``name`` of ``ctx``, as a relation to put in a plan in place of another."""
    table = datafusion.SessionContext.table(ctx, name)
    read = root_rel(to_substrait(ctx, table.logical_plan()))
    if kind(read) != "read":
        raise AssertionError(f"expected a read of {name}, got {kind(read)}")
    return read


def root_rel(plan: plan_pb2.Plan) -> Rel:
    """The input of the plan's (single) root relation."""
    for rel in plan.relations:
        if rel.HasField("root"):
            return rel.root.input
    raise ValueError("Substrait plan without a root relation")


def kind(rel: Rel) -> str:
    """The relation's kind: ``read``, ``filter``, ``project``, ``join``, ..."""
    return rel.WhichOneof("rel_type") or ""


def inputs(rel: Rel) -> list[Rel]:
    """The relation's input relations, left to right."""
    body = getattr(rel, kind(rel))
    out: list[Rel] = []
    for name in ("input", "left", "right"):
        if body.DESCRIPTOR.fields_by_name.get(name) is not None and body.HasField(name):
            out.append(getattr(body, name))
    if body.DESCRIPTOR.fields_by_name.get("inputs") is not None:
        out.extend(body.inputs)
    return out


def walk(rel: Rel) -> Iterator[Rel]:
    """Every relation under ``rel`` (itself first), depth first; not those inside expressions."""
    yield rel
    for child in inputs(rel):
        yield from walk(child)


def has_subquery(message: Any) -> bool:
    """Whether any expression in ``message`` holds a subquery (its relations are not walked)."""
    return any(
        field.name == "subquery" for msg in messages(message) for field, _ in msg.ListFields()
    )


def field_references(expr: Any) -> list[algebra_pb2.Expression.FieldReference]:
    """Every plain column reference in ``expr``; ``ValueError`` if positions cannot do."""
    if has_subquery(expr):
        raise ValueError("a subquery in the expression")
    out = []
    for msg in messages(expr):
        if not isinstance(msg, algebra_pb2.Expression.FieldReference):
            continue
        if msg.HasField("outer_reference"):
            raise ValueError("an outer reference")
        if msg.HasField("root_reference") and msg.HasField("direct_reference"):
            if msg.direct_reference.WhichOneof("reference_type") != "struct_field":
                raise ValueError("a reference that is not a plain struct field")
            out.append(msg)
    return out


def table_name(rel: Rel) -> str | None:
    """The table a ``read`` of a named table reads, else None.

    A qualified name comes back joined with dots: ``s2.orders`` is not the lance-sql
    table ``orders`` (taking it by its last part gave wrong rows).
    """
    if kind(rel) != "read" or not rel.read.HasField("named_table"):
        return None
    names = rel.read.named_table.names
    return ".".join(names) if names else None


@dataclass(frozen=True)
class ScanChain:
    """A join input: a read of a named table under filters and projections only
    (``columns[i]``: the table column of output field ``i``, None where computed)."""

    read: Rel
    table: str
    columns: tuple[str | None, ...]


def scan_chain(rel: Rel) -> ScanChain | None:
    """``rel`` as a :class:`ScanChain`, else None (an aggregate, a join, a limit, ...)."""
    k = kind(rel)
    if k == "read":
        name = table_name(rel)
        if name is None:
            return None
        base = top_level_names(rel.read.base_schema)
        return ScanChain(rel, name, tuple(emitted(rel, [base[i] for i in read_fields(rel.read)])))
    if k not in ROW_WISE:
        return None
    below = scan_chain(getattr(rel, k).input)
    return None if below is None else above(rel, below)


def read_fields(read: algebra_pb2.ReadRel) -> list[int]:
    """The base schema's top-level columns a read outputs (before its emit), in order."""
    if read.HasField("projection"):
        return [item.field for item in read.projection.select.struct_items]
    return list(range(len(read.base_schema.struct.types)))


def above(rel: Rel, below: ScanChain) -> ScanChain:
    """``below`` seen through the filter or projection ``rel``."""
    return ScanChain(below.read, below.table, tuple(through(rel, list(below.columns))))


def through(rel: Rel, fields: list[Any]) -> list[Any]:
    """What a filter or projection ``rel`` outputs, given its input's fields."""
    out = list(fields)
    if kind(rel) == "project":
        for expr in rel.project.expressions:
            ref = field_ref(expr)
            out.append(fields[ref] if ref is not None and ref < len(fields) else None)
    return emitted(rel, out)


def join_below(
    rel: Rel, fields: Callable[[Rel], list[Any] | None], *, plain: bool = False
) -> tuple[Rel, list[Any]] | None:
    """The join under ``rel`` through projections only, and where ``rel``'s columns come from:
    ``fields(join)`` (None: not this join) carried through the projections (a computed
    column: None; with ``plain``, a computed column anywhere means no join)."""
    projects = []
    while kind(rel) == "project":
        projects.append(rel)
        rel = rel.project.input
    if kind(rel) != "join" or (out := fields(rel)) is None:
        return None
    out = emitted(rel, out)
    for project in reversed(projects):
        if plain and any(field_ref(e) is None for e in project.project.expressions):
            return None
        out = through(project, out)
    return rel, out


def emitted(rel: Rel, fields: list[Any]) -> list[Any]:
    """The fields a relation outputs after its ``common.emit`` mapping (if any)."""
    common = getattr(rel, kind(rel)).common
    if common.HasField("emit"):
        return [fields[i] for i in common.emit.output_mapping]
    return fields


def field_ref(expr: algebra_pb2.Expression) -> int | None:
    """The input field index of a plain column reference, else None."""
    if expr.WhichOneof("rex_type") != "selection":
        return None
    sel = expr.selection
    if not sel.HasField("root_reference") or not sel.HasField("direct_reference"):
        return None
    seg = sel.direct_reference
    if seg.WhichOneof("reference_type") != "struct_field" or seg.struct_field.HasField("child"):
        return None
    return seg.struct_field.field


def fetch_count(fetch: algebra_pb2.FetchRel) -> int | None:
    """The row count of a ``LIMIT`` (None: none, or not a non-negative integer literal)."""
    if fetch.HasField("count_expr"):
        lit = fetch.count_expr.literal
        kind = lit.WhichOneof("literal_type") if fetch.count_expr.HasField("literal") else None
        value = getattr(lit, kind) if kind in ("i64", "i32") else -1
    else:
        value = fetch.count if fetch.WhichOneof("count_mode") == "count" else -1
    return value if value >= 0 else None


def wrap_in_fetch(rel: Rel, count: int) -> None:
    """Put ``rel`` under a ``LIMIT count`` (in place)."""
    inner = Rel()
    inner.CopyFrom(rel)
    rel.Clear()
    rel.fetch.input.CopyFrom(inner)
    rel.fetch.offset_expr.literal.i64 = 0
    rel.fetch.count_expr.literal.i64 = count


def grouping_keys(agg: algebra_pb2.AggregateRel) -> int | None:
    """How many grouping keys lead ``agg``'s output (None: not one plain grouping set,
    where a key may be NULL in a set without it)."""
    if len(agg.groupings) != 1:
        return None
    refs = list(agg.groupings[0].expression_references)
    n = len(agg.grouping_expressions)
    return n if n and refs == list(range(n)) else None


def function_names(plan: plan_pb2.Plan) -> dict[int, str]:
    """Function anchor -> name (without its signature suffix) of the plan's extensions."""
    out: dict[int, str] = {}
    for ext in plan.extensions:
        if ext.HasField("extension_function"):
            fn = ext.extension_function
            out[fn.function_anchor] = fn.name.split(":", 1)[0]
    return out


def conjuncts(expr: algebra_pb2.Expression, names: dict[int, str]) -> list[algebra_pb2.Expression]:
    """``expr`` split at its top-level ANDs."""
    if expr.WhichOneof("rex_type") == "scalar_function":
        fn = expr.scalar_function
        if names.get(fn.function_reference) == "and":
            return [c for a in fn.arguments for c in conjuncts(a.value, names)]
    return [expr]


def equality_fields(expr: algebra_pb2.Expression, names: dict[int, str]) -> tuple[int, int] | None:
    """``(i, j)`` when ``expr`` is ``field_i = field_j`` (plain columns), else None."""
    if expr.WhichOneof("rex_type") != "scalar_function":
        return None
    fn = expr.scalar_function
    if names.get(fn.function_reference) != "equal" or len(fn.arguments) != 2:
        return None
    a, b = (field_ref(arg.value) for arg in fn.arguments)
    if a is None or b is None:
        return None
    return a, b


def declare_function(plan: plan_pb2.Plan, name: str) -> int:
    """The anchor of function ``name`` in ``plan``, declared like its other functions if new."""
    names = function_names(plan)
    for anchor, known in names.items():
        if known == name:
            return anchor
    template = next((e for e in plan.extensions if e.HasField("extension_function")), None)
    if template is None:
        raise ValueError(f"cannot declare {name}: the plan declares no function to follow")
    anchor = max(names) + 1
    ext = plan.extensions.add()
    ext.CopyFrom(template)
    ext.extension_function.function_anchor = anchor
    ext.extension_function.name = name
    return anchor


def boolean_call(
    plan: plan_pb2.Plan, name: str, args: list[algebra_pb2.Expression]
) -> algebra_pb2.Expression:
    """``name(*args)`` returning a nullable boolean (``name`` declared in ``plan`` if new)."""
    expr = algebra_pb2.Expression()
    fn = expr.scalar_function
    fn.function_reference = declare_function(plan, name)
    fn.output_type.bool.nullability = type_pb2.Type.NULLABILITY_NULLABLE
    for arg in args:
        fn.arguments.add().value.CopyFrom(arg)
    return expr


def conjunction(plan: plan_pb2.Plan, exprs: list[algebra_pb2.Expression]) -> algebra_pb2.Expression:
    """``exprs`` AND-ed together (one expression: itself)."""
    return exprs[0] if len(exprs) == 1 else boolean_call(plan, "and", exprs)


def field_reference(index: int) -> algebra_pb2.Expression:
    """A plain reference to input field ``index``."""
    expr = algebra_pb2.Expression()
    expr.selection.direct_reference.struct_field.field = index
    expr.selection.root_reference.SetInParent()
    return expr


def prefix_read_columns(rel: Rel, table: str, prefix: str) -> None:
    """Prefix the top-level column names of every read of ``table`` under ``rel`` (in place)."""
    for node in walk(rel):
        if table_name(node) != table:
            continue
        schema = node.read.base_schema
        names = list(schema.names)
        for i, _ in column_spans(schema):
            names[i] = prefix + names[i]
        del schema.names[:]
        schema.names.extend(names)


def top_level_names(schema: Any) -> list[str]:
    """The top-level column names of a Substrait ``NamedStruct``."""
    return [schema.names[i] for i, _ in column_spans(schema)]


def subplan(plan: plan_pb2.Plan, rel: Rel) -> plan_pb2.Plan:
    """A plan whose root is a copy of ``rel``, with ``plan``'s extensions (output names kept)."""
    out = plan_pb2.Plan()
    out.CopyFrom(plan)
    del out.relations[:]
    root = out.relations.add().root
    root.input.CopyFrom(rel)
    return out


def rename_tables(rel: Rel, old: str, new: str) -> None:
    """Point every read of table ``old`` under ``rel`` at table ``new`` (in place)."""
    for node in walk(rel):
        if table_name(node) == old:
            names = node.read.named_table.names
            del names[:]
            names.append(new)


__all__ = [
    "ROW_WISE",
    "ScanChain",
    "above",
    "boolean_call",
    "conjunction",
    "conjuncts",
    "declare_function",
    "equality_fields",
    "fetch_count",
    "field_ref",
    "field_reference",
    "field_references",
    "from_substrait",
    "function_names",
    "grouping_keys",
    "has_subquery",
    "inputs",
    "kind",
    "messages",
    "prefix_read_columns",
    "read_fields",
    "rename_tables",
    "root_rel",
    "scan_chain",
    "subplan",
    "table_name",
    "table_read",
    "through",
    "to_substrait",
    "walk",
    "wrap_in_fetch",
]
