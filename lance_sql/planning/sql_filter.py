"""Edge: a WHERE-clause expression in DataFusion SQL -> the predicate IR.

Parsed with sqlglot's Postgres dialect (the closest to DataFusion's). Leaves it does
not model become :class:`~.predicates.Unsupported` (kept, never pruned on); text that
is not a boolean expression raises :class:`~lance_sql.errors.PlanningError`.
"""

from __future__ import annotations

import re
from fractions import Fraction

import pyarrow as pa
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError

from lance_sql.errors import PlanningError
from lance_sql.planning.passes import prepare
from lance_sql.planning.terms import CAST_DATE, CAST_INT, CAST_TIMESTAMP, call_term
from lance_sql.planning.terms import NotATerm as _NotATerm
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
    quote_str,
)

_CMP = {exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}


def parse_filter(sql: str, schema: pa.Schema) -> Predicate:
    """Parse, bind and normalise a DataFusion SQL filter against the namespace schema."""
    return prepare(parse_filter_unbound(sql), schema)


def _parse_problem(exc: ParseError) -> str:
    """sqlglot's parse error in a user's words (no sqlglot class names)."""
    first = exc.errors[0] if getattr(exc, "errors", None) else {}
    text = str(first.get("description") or exc).splitlines()[0]
    col = first.get("col")
    if text.startswith("Required keyword"):
        text = "the expression is incomplete (an operator lacks an operand)"
    text = re.sub(r"<class '(?:[\w.]+\.)?(\w+)'>", r"\1", text)
    where = f" at column {col}" if col else ""
    return f"{text}{where}; write a SQL condition such as \"day = DATE '2025-12-10'\""


def parse_filter_unbound(sql: str) -> Predicate:
    """Parse a SQL filter into the IR without binding names (columns carry names only)."""
    if not sql or not sql.strip():
        raise PlanningError("empty filter")
    try:
        tree = sqlglot.parse_one(sql, read="postgres")
    except ParseError as exc:
        raise PlanningError(f"cannot parse filter {sql!r}: {_parse_problem(exc)}") from exc
    if isinstance(tree, (exp.Select, exp.Query)) or not isinstance(tree, exp.Expression):
        raise PlanningError(f"filter {sql!r} is a query, not a boolean expression")
    if isinstance(tree, (exp.Literal, exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)):
        raise PlanningError(f"filter {sql!r} is not a boolean expression")
    return _pred(tree)


def _pred(node: exp.Expression) -> Predicate:
    if isinstance(node, exp.Paren):
        return _pred(node.this)
    if isinstance(node, exp.And):
        return and_(_pred(node.this), _pred(node.expression))
    if isinstance(node, exp.Or):
        return or_(_pred(node.this), _pred(node.expression))
    if isinstance(node, exp.Not):
        return Not(_pred(node.this))
    if isinstance(node, exp.Boolean):
        return TRUE if node.this else FALSE
    if isinstance(node, exp.Null):
        return NULL_BOOL
    try:
        return _leaf(node)
    except _NotATerm:
        return Unsupported(node.sql(dialect="postgres"), _column_names(node))


def _leaf(node: exp.Expression) -> Predicate:
    for cls, op in _CMP.items():
        if isinstance(node, cls):
            left, right = node.this, node.expression
            if _is_literal(right):
                return Compare(_term(left), op, _literal(right))
            if _is_literal(left):
                return Compare(_term(right), FLIPPED_OP[op], _literal(left))
            raise _NotATerm
    if isinstance(node, exp.Between):
        term = _term(node.this)
        low, high = node.args["low"], node.args["high"]
        if not (_is_literal(low) and _is_literal(high)):
            raise _NotATerm
        return and_(Compare(term, ">=", _literal(low)), Compare(term, "<=", _literal(high)))
    if isinstance(node, exp.In):
        if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
            raise _NotATerm
        values = node.expressions
        if not all(_is_literal(v) for v in values):
            raise _NotATerm
        return InList(_term(node.this), _common_type(tuple(_literal(v) for v in values)))
    if isinstance(node, exp.Is):
        if isinstance(node.expression, exp.Null):
            pred: Predicate = IsNull(_term(node.this))
            return Not(pred) if node.args.get("negate") else pred
        raise _NotATerm
    if isinstance(node, exp.Like):
        if node.args.get("escape") is not None:
            raise _NotATerm
        pattern = node.expression
        if not (isinstance(pattern, exp.Literal) and pattern.is_string):
            raise _NotATerm
        pred = like_predicate(_term(node.this), pattern.this)
        if pred is None:
            raise _NotATerm
        return Not(pred) if node.args.get("negate") else pred
    if isinstance(node, exp.StartsWith):  # sqlglot (>= 26) parses starts_with(s, 'p') to this
        prefix = node.expression
        if isinstance(prefix, exp.Literal) and prefix.is_string:
            return StartsWith(_term(node.this), prefix.this)
        raise _NotATerm
    if isinstance(node, exp.Column):
        return Compare(_column(node), "=", Literal(True, pa.bool_()))
    raise _NotATerm


def like_predicate(term: Term, pattern: str) -> Predicate | None:
    """``term LIKE pattern`` as an equality, a prefix test or IS NOT NULL (None: another
    pattern, with ``_``, an escape or an inner ``%``)."""
    body = pattern.rstrip("%")
    if "_" in pattern or "\\" in pattern or "%" in body:
        return None
    if body == pattern:
        return Compare(term, "=", Literal(pattern, pa.string()))
    return IsNull(term, negated=True) if body == "" else StartsWith(term, body)


# ----------------------------------------------------------------------- literals


def _is_literal(node: exp.Expression) -> bool:
    if isinstance(node, exp.Paren):
        return _is_literal(node.this)
    if isinstance(node, (exp.Literal, exp.Null, exp.Boolean)):
        return True
    if isinstance(node, exp.Neg):
        return isinstance(node.this, exp.Literal) and not node.this.is_string
    if isinstance(node, exp.Cast):
        is_text = isinstance(node.this, exp.Literal) and node.this.is_string
        return is_text and _cast_kind(node) is not None
    return False


def _cast_kind(node: exp.Cast) -> str | None:
    to = node.to.this
    if to == exp.DataType.Type.DATE:
        return "date"
    if to in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.DATETIME):
        return "timestamp"
    if to == exp.DataType.Type.DECIMAL and _decimal_cast(node) is not None:
        return "decimal"
    return None


_DECIMAL_TEXT = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)\s*")


def _decimal_cast(node: exp.Cast) -> Literal | None:
    """``CAST('12.345' AS DECIMAL(p, s))`` as DataFusion evaluates it: rounded half away
    from zero to ``s`` digits, a decimal256 above 38 digits; None for any other form
    (no precision and scale, exponents, a value wider than ``p``), which stays unpruned."""
    params = [p.this for p in node.to.expressions]
    text = node.this.this
    if len(params) != 2 or not all(_is_int_text(p) for p in params):
        return None
    precision, scale = (int(p.this) for p in params)
    if not (0 <= scale <= precision <= 76) or not _DECIMAL_TEXT.fullmatch(text):
        return None
    scaled = Fraction(text.strip()) * 10**scale
    unscaled = int(abs(scaled) + Fraction(1, 2)) * (-1 if scaled < 0 else 1)
    if abs(unscaled) >= 10**precision:
        return None
    value = decimal_of(unscaled, scale)
    width = pa.decimal128 if precision <= 38 else pa.decimal256
    return Literal(value, width(precision, scale))


def _is_int_text(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit()


def _number(text: str, negative: bool) -> Literal:
    """A numeric literal typed as DataFusion types it: Int64, else Float64 (beyond Int64,
    DataFusion's comparison may round: binding keeps it only where exact)."""
    sign = -1 if negative else 1
    if all(ch.isdigit() for ch in text):
        value = sign * int(text)
        if -(2**63) <= value < 2**63:
            return Literal(value, pa.int64())
        return Literal(float(value), pa.float64())
    return Literal(sign * float(text), pa.float64())


def _literal(node: exp.Expression) -> Literal:
    if isinstance(node, exp.Paren):
        return _literal(node.this)
    if isinstance(node, exp.Null):
        return Literal(None, pa.null())
    if isinstance(node, exp.Boolean):
        return Literal(bool(node.this), pa.bool_())
    if isinstance(node, exp.Neg):
        return _number(node.this.this, negative=True)
    if isinstance(node, exp.Cast):
        text = node.this.this
        if _cast_kind(node) == "decimal":
            return _decimal_cast(node)
        if _cast_kind(node) == "date":
            from lance_sql.spec.literals import datafusion_cast

            return Literal(datafusion_cast(quote_str(text), pa.date32()), pa.date32())
        return Literal(None, pa.timestamp("ns"), text=text)
    if node.is_string:
        return Literal(node.this, pa.string())
    return _number(node.this, negative=False)


def _common_type(values: tuple[Literal, ...]) -> tuple[Literal, ...]:
    """An IN list's literals in the one type DataFusion compares them in: integers next
    to a float become floats (``i64 IN (-9223372036854775807, 26.0)`` also matches -2^63)."""
    types = {v.type for v in values if not pa.types.is_null(v.type)}
    if len(types) <= 1:
        return values
    if types == {pa.int64(), pa.float64()}:
        return tuple(
            Literal(float(v.value), pa.float64()) if v.type == pa.int64() else v for v in values
        )
    raise _NotATerm


# -------------------------------------------------------------------------- terms


def _column(node: exp.Column) -> Column:
    """``c``, ``t.c`` or ``s.a``: binding resolves a dotted name to a field inside a
    struct column, else drops its first part as a table qualifier."""
    parts = [
        ident.this if ident.args.get("quoted") else ident.this.lower()
        for ident in node.parts
        if isinstance(ident, exp.Identifier)
    ]
    return Column(".".join(parts))


def _struct_field(node: exp.Bracket) -> Column:
    """``s['a']`` (also ``s['a']['b']``): a field inside a struct column."""
    keys = node.expressions
    if len(keys) != 1 or not (isinstance(keys[0], exp.Literal) and keys[0].is_string):
        raise _NotATerm
    inner = node.this
    base = _struct_field(inner) if isinstance(inner, exp.Bracket) else _SqlReader.column(inner)
    return Column(f"{base.name}.{keys[0].this}")


def _term(node: exp.Expression) -> Term:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Bracket):
        return _struct_field(node)
    return call_term(node, _SqlReader())


_CASTS = {
    exp.DataType.Type.DATE: CAST_DATE,
    exp.DataType.Type.TIMESTAMP: CAST_TIMESTAMP,
    exp.DataType.Type.INT: CAST_INT,
    exp.DataType.Type.BIGINT: CAST_INT,
}


class _SqlReader:
    """sqlglot nodes as :func:`~lance_sql.planning.terms.call_term` reads them."""

    term = staticmethod(_term)

    @staticmethod
    def call(node: exp.Expression) -> tuple[str, list] | None:
        if isinstance(node, exp.Paren):
            return _SqlReader.call(node.this)
        if isinstance(node, (exp.Year, exp.Month, exp.Day, exp.Hour)):
            return "date_part", [type(node).__name__.lower(), node.this]
        if isinstance(node, exp.Extract):
            return "date_part", [node.this.name.lower(), node.expression]
        if isinstance(node, (exp.TimestampTrunc, exp.DateTrunc)):
            unit = node.args.get("unit")
            return "date_trunc", [unit.name.lower() if unit is not None else "", node.this]
        if isinstance(node, exp.Cast):
            return _CASTS.get(node.to.this, "::other"), [node.this]
        if isinstance(node, exp.Anonymous):
            return node.name.lower(), node.expressions
        if isinstance(node, exp.Left):
            return "left", [node.this, node.expression]
        if isinstance(node, exp.Substring):
            bounds = [node.args.get("start"), node.args.get("length")]
            return "substr", [node.this, *(b for b in bounds if b is not None)]
        if isinstance(node, exp.Abs):
            return "abs", [node.this]
        if isinstance(node, exp.Mod):
            return "modulus", [node.this, node.expression]
        if isinstance(node, exp.Sub):
            return "subtract", [node.this, node.expression]
        return None

    @staticmethod
    def column(node: exp.Expression) -> Column:
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.Column):
            return _column(node)
        raise _NotATerm

    @staticmethod
    def integer(node: exp.Expression) -> int:
        if _is_int_text(node):
            return int(node.this)
        raise _NotATerm

    @staticmethod
    def text(node: exp.Expression | str) -> str:
        if isinstance(node, str):  # a unit sqlglot parsed into the node (year(c), extract)
            return node
        return node.this.lower() if isinstance(node, exp.Literal) else ""


def _column_names(node: exp.Expression) -> tuple[str, ...]:
    return tuple(sorted({c.name for c in node.find_all(exp.Column)}))
