"""Edge: a pyarrow filter expression (via its Substrait form) or a Substrait plan's condition -> IR.

pyarrow exposes no expression tree, but serialises one to Substrait; anything not
modelled becomes :class:`~.predicates.Unsupported` (never prunes). pyarrow 26 writes
timestamp literals in deprecated fields, read back from the unknown fields; pyarrow's
``is_in`` matches NULL to a NULL in its set (SQL does not), so such a leaf is Unsupported.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.planning.passes import prepare
from lance_sql.planning.sql_filter import like_predicate
from lance_sql.planning.terms import CAST_DATE, CAST_INT, CAST_TIMESTAMP, NotATerm, call_term
from lance_sql.spec.literals import decimal_of
from lance_sql.spec.predicates import (
    FALSE,
    FLIPPED_OP,
    NULL_BOOL,
    TRUE,
    Column,
    Compare,
    InList,
    IsNull,
    Literal,
    Not,
    Predicate,
    StartsWith,
    Term,
    Unsupported,
    and_,
    or_,
)
from lance_sql.tables.substrait_schema import referenced_positions, substrait_schema

_CMP = {"equal": "=", "not_equal": "!=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}
_CASTS = {
    "date": CAST_DATE,
    "precision_timestamp": CAST_TIMESTAMP,
    "i32": CAST_INT,
    "i64": CAST_INT,
}


class Computed(NamedTuple):
    """An input field computed under the filter (``__common_expr_1``) and its own inputs."""

    expr: Any
    columns: list[Any]


def from_pyarrow(expr: pc.Expression, schema: pa.Schema) -> Predicate:
    """Decode, bind and normalise a pyarrow filter expression against ``schema``."""
    return prepare(decode(expr, schema), schema)


def decode(expr: pc.Expression, schema: pa.Schema) -> Predicate:
    """Decode a pyarrow expression into the (unbound) IR."""
    from substrait import extended_expression_pb2

    stubbed, stand_ins = substrait_schema(schema)
    try:
        buf = expr.to_substrait(stubbed)
    except (pa.ArrowException, ValueError, TypeError) as exc:
        return Unsupported(f"{expr} (not serialisable to Substrait: {exc})", tuple(schema.names))
    message = extended_expression_pb2.ExtendedExpression()
    message.ParseFromString(bytes(buf))
    functions = {
        ext.extension_function.function_anchor: ext.extension_function.name.split(":")[0]
        for ext in message.extensions
        if ext.HasField("extension_function")
    }
    decoder = _Decoder(functions, schema, stand_ins)
    return decoder.pred(message.referred_expr[0].expression)


def decode_condition(
    expr: object,
    functions: dict[int, str],
    schema: pa.Schema,
    columns: list[Any],
) -> Predicate:
    """A filter condition of a Substrait plan (DataFusion's) -> the (unbound) IR, transform
    terms included. ``columns[i]``: the column path of input field ``i``, a
    :class:`Computed` expression, or None; ``functions``: function anchor -> name."""
    return _Decoder(functions, schema, columns=columns).pred(expr)


class _Decoder:
    def __init__(
        self,
        functions: dict[int, str],
        schema: pa.Schema,
        stand_ins: frozenset[int] = frozenset(),
        columns: list[Any] | None = None,
    ) -> None:
        self.functions = functions
        self.schema = schema
        #: input field -> its column path, None where computed (default: the schema's fields)
        self.columns = columns
        #: positions serialised with a stand-in type (:mod:`~lance_sql.tables.substrait_schema`):
        #: a leaf reading one is Unsupported, naming the column and its type
        self.stand_ins = stand_ins

    def pred(self, node) -> Predicate:
        kind = node.WhichOneof("rex_type")
        try:
            if kind == "scalar_function":
                return self._function(node.scalar_function)
            if kind == "singular_or_list":
                return self._in(node.singular_or_list)
            if kind == "selection":
                return Compare(self.column(node), "=", Literal(True, pa.bool_()))
            if kind == "literal":
                lit = self._literal(node.literal)
                if lit.is_null:
                    return NULL_BOOL
                if lit.type == pa.bool_():
                    return TRUE if lit.value else FALSE
        except NotATerm:
            pass
        columns = self._columns(node)
        awkward = [
            self.schema.field(c)
            for c in columns
            if self.schema.get_field_index(c) in self.stand_ins
        ]
        if awkward:
            kinds = ", ".join(f"{f.name}: {f.type}" for f in awkward)
            return Unsupported(f"a condition on {kinds} (no Substrait form)", columns)
        return Unsupported(f"substrait {kind}", columns)

    def _function(self, fn) -> Predicate:
        name = self.functions.get(fn.function_reference, "?")
        args = [a.value for a in fn.arguments]
        if name in ("and", "or"):
            parts = [self.pred(a) for a in args]
            return and_(*parts) if name == "and" else or_(*parts)
        if name == "not" and len(args) == 1:
            return Not(self.pred(args[0]))
        if name in ("is_null", "is_not_null") and len(args) == 1:
            return IsNull(self.term(args[0]), negated=name == "is_not_null")
        if name in _CMP and len(args) == 2:
            left, right = args
            if right.WhichOneof("rex_type") == "literal":
                return Compare(self.term(left), _CMP[name], self._literal(right.literal))
            if left.WhichOneof("rex_type") == "literal":
                return Compare(
                    self.term(right), FLIPPED_OP[_CMP[name]], self._literal(left.literal)
                )
            raise NotATerm
        if name == "starts_with" and len(args) == 2:
            for opt in fn.options:
                if opt.name == "case_sensitivity" and "INSENSITIVE" in ",".join(opt.preference):
                    raise NotATerm
            prefix = self._literal(args[1].literal)
            if not isinstance(prefix.value, str):
                raise NotATerm
            return StartsWith(self.column(args[0]), prefix.value)
        if name == "like" and len(args) in (2, 3) and self.columns is not None:
            return self._like(args)
        raise NotATerm

    def _like(self, args: list) -> Predicate:
        """``t LIKE 'text'`` / ``'prefix%'`` / ``'%'`` (no other wildcard, no escape)."""
        if args[1].WhichOneof("rex_type") != "literal":
            raise NotATerm
        text = self._literal(args[1].literal).value
        if len(args) == 3:
            escape = args[2].literal if args[2].WhichOneof("rex_type") == "literal" else None
            if escape is None or self._literal(escape).value not in (None, ""):
                raise NotATerm
        pred = like_predicate(self.term(args[0]), text) if isinstance(text, str) else None
        if pred is None:
            raise NotATerm
        return pred

    def term(self, node) -> Term:
        """A column or a transform term (see :func:`decode_condition`)."""
        kind = node.WhichOneof("rex_type")
        if kind == "selection" and self.columns is not None:
            ref = node.selection.direct_reference.struct_field.field
            entry = self.columns[ref] if 0 <= ref < len(self.columns) else None
            if isinstance(entry, Computed) and not node.selection.HasField("outer_reference"):
                return _Decoder(self.functions, self.schema, columns=entry.columns).term(entry.expr)
        if kind == "selection" or self.columns is None:  # a pyarrow filter: columns only
            return self.column(node)
        return call_term(node, self)

    def call(self, node) -> tuple[str, list] | None:
        """A scalar function or a cast as a call name and arguments (for :func:`call_term`)."""
        kind = node.WhichOneof("rex_type")
        if kind == "cast":
            target = node.cast.type.WhichOneof("kind")
            return _CASTS.get(target, f"::{target}"), [node.cast.input]
        if kind == "scalar_function":
            fn = node.scalar_function
            name = self.functions.get(fn.function_reference, "?").lower()
            return name, [a.value for a in fn.arguments]
        return None

    def text(self, node, *, lower: bool = True) -> str:
        if node.WhichOneof("rex_type") != "literal":
            raise NotATerm
        value = self._literal(node.literal).value
        if not isinstance(value, str):
            raise NotATerm
        return value.lower() if lower else value

    def integer(self, node) -> int:
        if node.WhichOneof("rex_type") != "literal":
            raise NotATerm
        value = self._literal(node.literal).value
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise NotATerm
        return value

    def _in(self, node) -> Predicate:
        values = []
        for option in node.options:
            if option.WhichOneof("rex_type") != "literal":
                raise NotATerm
            lit = self._literal(option.literal)
            if lit.is_null and self.columns is None:
                raise NotATerm  # pyarrow's is_in matches NULL to NULL; SQL (a plan's) does not
            values.append(lit)
        if not values:
            return FALSE
        return InList(self.term(node.value), tuple(values))

    def column(self, node) -> Column:
        if node.WhichOneof("rex_type") == "scalar_function" and self.columns is not None:
            return self._struct_field(node)
        if node.WhichOneof("rex_type") != "selection" or node.selection.HasField("outer_reference"):
            raise NotATerm
        ref = node.selection.direct_reference.struct_field
        if ref.field in self.stand_ins:
            raise NotATerm  # a column serialised with a stand-in type
        if self.columns is None:
            field = self.schema.field(ref.field)
            names = [field.name]
        else:  # a plan's input field: the column (path) it is, if any
            path = self.columns[ref.field] if 0 <= ref.field < len(self.columns) else None
            if not isinstance(path, tuple):
                raise NotATerm
            field = self.schema.field(path[0])
            for key in path[1:]:  # get_field of a map or a list is not a column
                if not pa.types.is_struct(field.type) or field.type.get_field_index(key) < 0:
                    raise NotATerm
                field = field.type.field(key)
            names = list(path)
        while ref.HasField("child"):  # a field inside a struct column: its dotted path
            ref = ref.child.struct_field
            if not pa.types.is_struct(field.type) or not 0 <= ref.field < field.type.num_fields:
                raise NotATerm
            field = field.type.field(ref.field)
            names.append(field.name)
        return Column(".".join(names), type=None if self.columns is None else field.type)

    def _struct_field(self, node) -> Column:
        """``get_field(s, 'a')`` (a plan's ``s['a']``): a field inside a struct column."""
        fn = node.scalar_function
        args = [a.value for a in fn.arguments]
        if self.functions.get(fn.function_reference) != "get_field" or len(args) < 2:
            raise NotATerm
        column = self.column(args[0])
        for arg in args[1:]:  # get_field(s, 'a', 'b') is s['a']['b']
            key, t = self.text(arg, lower=False), column.type
            if t is None or not pa.types.is_struct(t) or t.get_field_index(key) < 0:
                raise NotATerm
            column = Column(f"{column.name}.{key}", type=t.field(key).type)
        return column

    def _columns(self, node) -> tuple[str, ...]:
        """The columns ``node`` reads (the top-level column of a struct field's path)."""
        cols = [(n,) for n in self.schema.names] if self.columns is None else self.columns
        found = {p[0] for i in referenced_positions(node) if i < len(cols) and _path(p := cols[i])}
        return tuple(sorted(found))

    def _literal(self, lit) -> Literal:
        kind = lit.WhichOneof("literal_type")
        if kind is None:
            from google.protobuf import unknown_fields

            for field in unknown_fields.UnknownFieldSet(lit):
                if field.field_number == 14:  # deprecated timestamp (µs, naive)
                    return Literal(_signed64(field.data), pa.timestamp("us"))
                if field.field_number == 27:  # deprecated timestamp_tz (µs since epoch)
                    return Literal(_signed64(field.data), pa.timestamp("us", "UTC"))
            raise NotATerm
        if kind == "null":
            return Literal(None, pa.null())
        if kind == "boolean":
            return Literal(lit.boolean, pa.bool_())
        if kind in ("i8", "i16", "i32", "i64"):
            return Literal(int(getattr(lit, kind)), pa.int64())
        if kind in ("fp32", "fp64"):
            return Literal(float(getattr(lit, kind)), pa.float64())
        if kind in ("string", "var_char", "fixed_char"):
            value = getattr(lit, kind)
            return Literal(value if isinstance(value, str) else value.value, pa.string())
        if kind in ("binary", "fixed_binary"):
            return Literal(bytes(getattr(lit, kind)), pa.binary())
        if kind == "date":
            return Literal(int(lit.date), pa.date32())
        if kind in ("precision_timestamp", "precision_timestamp_tz"):
            ts = getattr(lit, kind)
            unit = {0: "s", 3: "ms", 6: "us", 9: "ns"}.get(ts.precision)
            if unit is None:
                raise NotATerm
            tz = "UTC" if kind.endswith("_tz") else None
            return Literal(int(ts.value), pa.timestamp(unit, tz))
        if kind == "decimal":
            raw = int.from_bytes(lit.decimal.value, "little", signed=True)
            value = decimal_of(raw, lit.decimal.scale)
            precision = max(lit.decimal.precision, 1)
            width = pa.decimal128 if precision <= 38 else pa.decimal256
            return Literal(value, width(precision, lit.decimal.scale))
        raise NotATerm


def _path(entry: Any) -> bool:
    return isinstance(entry, tuple) and bool(entry)


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= (1 << 63) else value
