"""The one predicate IR of the planner: immutable terms, literals and boolean nodes.

Every filter (SQL text, a pyarrow/substrait expression, a ``__manifest`` predicate) is
converted into these frozen nodes at the edge; the passes in between see only this tree.
Semantics are SQL's three-valued logic: a filter keeps a row only when it is TRUE.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa

from lance_sql.spec.arrow_types import PER_SECOND, datafusion_type_name

if TYPE_CHECKING:
    from lance_sql.spec.transforms.base import TermForm

R = TypeVar("R")

# --------------------------------------------------------------------------- terms


@dataclass(frozen=True)
class Column:
    """A column reference; ``field_id``/``type`` are filled in by :func:`.passes.bind`.

    A field inside a struct column has ``path`` (the names from the top-level
    column down, e.g. ``("s", "a")``) and the dotted path as ``name``.
    """

    name: str
    field_id: int | None = None
    type: pa.DataType | None = field(default=None, compare=False)
    path: tuple[str, ...] = ()

    def sql(self) -> str:
        if self.path:
            head, *rest = self.path
            return quote_ident(head) + "".join(f"[{quote_str(p)}]" for p in rest)
        return quote_ident(self.name)

    @property
    def top(self) -> str:
        """The top-level column this reference reads."""
        return self.path[0] if self.path else self.name


@dataclass(frozen=True)
class TransformTerm:
    """A known transform applied to column(s), e.g. ``date_part('year', ts)``.

    ``transform`` is its :class:`~lance_sql.spec.transforms.base.TermForm`; ``param`` is
    N (bucket, hash_mod) or W (truncate); ``unit`` the date_trunc unit; ``as_date`` marks
    ``CAST(ts AS DATE)``; ``from_date`` marks ``date_trunc(unit, CAST(c AS TIMESTAMP))``,
    DataFusion's form of ``date_trunc(unit, date_col)`` (bound only over a date column).
    """

    transform: TermForm
    columns: tuple[Column, ...]
    param: int | None = None
    unit: str | None = None
    as_date: bool = False
    from_date: bool = False

    @property
    def column(self) -> Column:
        return self.columns[0]

    def value_type(self) -> pa.DataType | None:
        """The Arrow type of the term's value (None while unbound)."""
        return self.transform.value_type(self)

    def sql(self) -> str:
        return self.transform.sql(self)


Term = Column | TransformTerm


@dataclass(frozen=True)
class Literal:
    """A typed literal; ``value`` is in Arrow's storage form (dates in days, timestamps in
    units since the epoch, ``decimal.Decimal`` for decimals). ``text`` keeps a temporal
    literal's text until :func:`.passes.bind` resolves it with the column's type.
    """

    value: object
    type: pa.DataType
    text: str | None = None

    @property
    def is_null(self) -> bool:
        return self.value is None and self.text is None

    def scalar(self) -> pa.Scalar:
        return pa.scalar(self.value, type=self.type)

    def sql(self) -> str:
        return literal_sql(self)


# ------------------------------------------------------------------------- predicates

COMPARISON_OPS = ("=", "!=", "<", "<=", ">", ">=")
NEGATED_OP = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<"}
FLIPPED_OP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True)
class Compare:
    """``term op literal`` (the literal is always on the right)."""

    term: Term
    op: str
    literal: Literal

    def __post_init__(self) -> None:
        if self.op not in COMPARISON_OPS:
            raise ValueError(f"unknown comparison operator {self.op!r}")


@dataclass(frozen=True)
class InList:
    """``term IN (v1, ...)``, or ``NOT IN`` when ``negated``."""

    term: Term
    values: tuple[Literal, ...]
    negated: bool = False


@dataclass(frozen=True)
class IsNull:
    """``term IS NULL``, or ``IS NOT NULL`` when ``negated``."""

    term: Term
    negated: bool = False


@dataclass(frozen=True)
class StartsWith:
    """``starts_with(term, prefix)`` (``LIKE 'prefix%'``), or its negation."""

    term: Term
    prefix: str
    negated: bool = False


@dataclass(frozen=True)
class And:
    children: tuple[Predicate, ...]


@dataclass(frozen=True)
class Or:
    children: tuple[Predicate, ...]


@dataclass(frozen=True)
class Not:
    child: Predicate


@dataclass(frozen=True)
class Const:
    """TRUE or FALSE."""

    value: bool


@dataclass(frozen=True)
class Unsupported:
    """Anything the planner cannot reason about: TRUE inclusively, FALSE strictly.

    ``description`` is shown in EXPLAIN and residuals; ``columns`` are the ones it reads.
    """

    description: str
    columns: tuple[str, ...] = ()


Predicate = Compare | InList | IsNull | StartsWith | And | Or | Not | Const | Unsupported
Leaf = Compare | InList | IsNull | StartsWith | Unsupported

TRUE = Const(True)
FALSE = Const(False)

#: a NULL in a boolean position (``x = 1 OR NULL``): never TRUE, and neither is its
#: negation. Decoders produce it; :func:`.passes.push_not` folds it to FALSE, which is
#: exact once NOT is at the leaves (AND/OR are monotone: with a NULL leaf a row is TRUE
#: only when it is TRUE for FALSE there too). Before that it stays Unsupported.
NULL_BOOL = Unsupported("NULL")


def is_leaf(pred: Predicate) -> bool:
    return isinstance(pred, (Compare, InList, IsNull, StartsWith, Unsupported))


# ----------------------------------------------------------------- smart constructors


def and_(*children: Predicate) -> Predicate:
    """Conjunction with flattening and constant folding (TRUE dropped, FALSE absorbs)."""
    return _junction(And, TRUE, FALSE, children)


def or_(*children: Predicate) -> Predicate:
    """Disjunction with flattening and constant folding (FALSE dropped, TRUE absorbs)."""
    return _junction(Or, FALSE, TRUE, children)


def _junction(
    cls: type[And] | type[Or], unit: Predicate, absorbing: Predicate, children: tuple
) -> Predicate:
    """``cls`` of ``children``: nested ``cls`` flattened, repeats and ``unit`` dropped,
    ``absorbing`` when any child is it."""
    out: list[Predicate] = []
    for child in children:
        for part in child.children if isinstance(child, cls) else (child,):
            if part == absorbing:
                return absorbing
            if part != unit and part not in out:
                out.append(part)
    if not out:
        return unit
    return out[0] if len(out) == 1 else cls(tuple(out))


def fold(
    pred: Predicate,
    leaf: Callable[[Predicate], R],
    both: Callable[..., R],
    either: Callable[..., R],
    negate: Callable[[R], R] | None = None,
) -> R:
    """Bottom-up over ``pred``: the one walk of the tree every converter shares.

    ``both`` / ``either`` combine the results of an AND's / OR's children (passed as
    arguments, so :func:`and_` / :func:`or_` rebuild the tree) and
    ``negate`` a NOT's child's result; ``leaf`` maps every other node (a leaf or a
    :class:`Const`, and a :class:`Not` when ``negate`` is None).
    """
    if isinstance(pred, (And, Or)):
        parts = [fold(c, leaf, both, either, negate) for c in pred.children]
        return both(*parts) if isinstance(pred, And) else either(*parts)
    if isinstance(pred, Not) and negate is not None:
        return negate(fold(pred.child, leaf, both, either, negate))
    return leaf(pred)


def any_leaf(pred: Predicate, test: Callable[[Predicate], bool]) -> bool:
    """Whether ``test`` holds for some leaf of ``pred`` (under NOT too)."""
    return fold(pred, test, _any, _any, bool)


def _any(*parts: bool) -> bool:
    return any(parts)


def conjuncts(pred: Predicate) -> tuple[Predicate, ...]:
    """The top-level conjuncts of ``pred`` (``(pred,)`` when it is not an AND)."""
    if isinstance(pred, And):
        return pred.children
    if pred == TRUE:
        return ()
    return (pred,)


def columns_of(pred: Predicate) -> set[str]:
    """Names of every column the predicate reads."""

    def leaf(p: Predicate) -> set[str]:
        if isinstance(p, Unsupported):
            return set(p.columns)
        if isinstance(p, Const):
            return set()
        cols = (p.term,) if isinstance(p.term, Column) else p.term.columns
        return {c.top for c in cols}

    def union(*parts: set[str]) -> set[str]:
        return set().union(*parts)

    return fold(pred, leaf, union, union, set)


# ------------------------------------------------------------------------- to SQL


def quote_ident(name: str) -> str:
    """A DataFusion identifier: bare when it is a plain lower-case name, else quoted."""
    if (
        name
        and (name[0].isalpha() or name[0] == "_")
        and all(ch.isdigit() or ch == "_" or ("a" <= ch <= "z") for ch in name)
    ):
        return name
    return '"' + name.replace('"', '""') + '"'


def quote_str(text: str) -> str:
    """A SQL string literal of ``text``."""
    return "'" + text.replace("'", "''") + "'"


def literal_sql(lit: Literal) -> str:
    """DataFusion SQL text for a literal that keeps its exact type."""
    if lit.text is not None and lit.value is None:
        return f"TIMESTAMP {quote_str(lit.text)}"
    if lit.value is None:
        return "NULL"
    t = lit.type
    if pa.types.is_boolean(t):
        return "TRUE" if lit.value else "FALSE"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return quote_str(str(lit.value))
    if pa.types.is_date(t):
        try:
            return f"DATE '{lit.scalar().as_py().isoformat()}'"
        except (ValueError, OverflowError):
            return f"arrow_cast({int(lit.value)}, 'Date32')"
    if pa.types.is_timestamp(t):
        return _timestamp_sql(int(lit.value), t)
    if pa.types.is_integer(t):
        return str(lit.value)
    if pa.types.is_decimal(t):
        return f"arrow_cast('{lit.value}', '{datafusion_type_name(t)}')"
    if pa.types.is_floating(t):
        return repr(float(lit.value))
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "X'" + bytes(lit.value).hex() + "'"
    return quote_str(str(lit.value))


def _timestamp_sql(value: int, t: pa.TimestampType) -> str:
    """SQL text of a timestamp that DataFusion reads back as exactly that value.

    Zoned: a ``Z`` string cast to the type (``TIMESTAMP '...Z'`` would be local time).
    """
    if t.unit != "ns" or value % 1000 == 0:
        micros = value * 1_000_000 // PER_SECOND[t.unit]
        try:
            text = (_EPOCH + datetime.timedelta(microseconds=micros)).isoformat()
        except OverflowError:
            text = None
        if text is not None and t.tz is None:
            return f"TIMESTAMP '{text}'"
        if text is not None:  # a string with Z cast to the zoned type is that instant
            return f"arrow_cast('{text}Z', '{datafusion_type_name(t)}')"
    return f"arrow_cast({value}, '{datafusion_type_name(t)}')"


_EPOCH = datetime.datetime(1970, 1, 1)


def to_sql(pred: Predicate) -> str:
    """DataFusion SQL text for a predicate (for display, EXPLAIN and ``__manifest`` SQL)."""
    if isinstance(pred, Const):
        return "TRUE" if pred.value else "FALSE"
    if isinstance(pred, And):
        return " AND ".join(_paren(c, And) for c in pred.children)
    if isinstance(pred, Or):
        return " OR ".join(_paren(c, Or) for c in pred.children)
    if isinstance(pred, Not):
        return f"NOT ({to_sql(pred.child)})"
    if pred == NULL_BOOL:
        return "NULL"
    if isinstance(pred, Unsupported):
        return f"/* unsupported: {pred.description} */ TRUE"
    term = pred.term.sql()
    if isinstance(pred, Compare):
        op = "<>" if pred.op == "!=" else pred.op
        return f"{term} {op} {pred.literal.sql()}"
    if isinstance(pred, InList):
        values = ", ".join(v.sql() for v in pred.values)
        return f"{term} {'NOT IN' if pred.negated else 'IN'} ({values})"
    if isinstance(pred, IsNull):
        return f"{term} IS {'NOT NULL' if pred.negated else 'NULL'}"
    if isinstance(pred, StartsWith):
        call = f"starts_with({term}, {quote_str(pred.prefix)})"
        return f"NOT {call}" if pred.negated else call
    raise TypeError(f"not a predicate: {pred!r}")


def _paren(child: Predicate, parent: type) -> str:
    text = to_sql(child)
    if isinstance(child, (And, Or)) and not isinstance(child, parent):
        return f"({text})"
    return text
