"""The transform terms of a filter (``left``, ``substr``, ``x - x % w``, the hash and its
modulo, ``date_part``, ``date_trunc``, a date cast), recognised once for both filter
trees: each tree reads its nodes as a call name and arguments through a :class:`TermReader`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from lance_sql.spec.predicates import Column, Term, TransformTerm
from lance_sql.spec.time_ranges import TIME_CHAIN
from lance_sql.spec.transforms.bucket import hash_term, is_hash_call, is_hash_term, modulo_term
from lance_sql.spec.transforms.time_fields import DATE_PARTS, DATE_TRUNC
from lance_sql.spec.transforms.truncate import TRUNCATE

#: the call names of casts: to date, to timestamp, and the widening of the int32 hash
CAST_DATE, CAST_TIMESTAMP, CAST_INT = "::date", "::timestamp", "::int"


class NotATerm(Exception):
    """A sub-expression that is not a term or a literal the planner understands."""


class TermReader(Protocol):
    def call(self, node: Any) -> tuple[str, Sequence[Any]] | None:
        """``node`` as a lower-case call name and its arguments; None for another node."""

    def term(self, node: Any) -> Term: ...

    def column(self, node: Any) -> Column: ...

    def integer(self, node: Any) -> int:
        """A non-negative integer literal."""

    def text(self, node: Any) -> str:
        """A lower-case string literal ("" or NotATerm for another node)."""


def call_term(node: Any, reader: TermReader) -> Term:
    """The term ``node`` is: a column (when it is no call) or a transform term."""
    shape = reader.call(node)
    if shape is None:
        return reader.column(node)
    name, args = shape
    if args and is_hash_call(name):
        return hash_term(name, tuple(reader.column(a) for a in args))
    if name in ("date_part", "datepart") and len(args) == 2 and reader.text(args[0]) in TIME_CHAIN:
        return TransformTerm(DATE_PARTS[reader.text(args[0])], (reader.column(args[1]),))
    if name == DATE_TRUNC.name and len(args) == 2 and reader.text(args[0]) in TIME_CHAIN:
        unit, inner = reader.text(args[0]), reader.call(args[1])
        if inner is not None and inner[0].startswith("::"):  # date_trunc over a date column
            if inner[0] != CAST_TIMESTAMP:
                raise NotATerm
            col = reader.column(inner[1][0])
            return TransformTerm(DATE_TRUNC, (col,), unit=unit, from_date=True)
        return TransformTerm(DATE_TRUNC, (reader.column(args[1]),), unit=unit)
    if name == CAST_DATE:
        return TransformTerm(DATE_TRUNC, (reader.column(args[0]),), unit="day", as_date=True)
    if name == CAST_INT:
        term = reader.term(args[0])
        if is_hash_term(term):  # DataFusion widens the int32 hash: the same value
            return term
    if name == "left" and len(args) == 2:
        return TransformTerm(TRUNCATE, (reader.column(args[0]),), param=reader.integer(args[1]))
    if name in ("substr", "substring") and len(args) == 3 and reader.integer(args[1]) == 1:
        return TransformTerm(TRUNCATE, (reader.column(args[0]),), param=reader.integer(args[2]))
    if name == "modulus" and len(args) == 2:
        inner, absolute = _unwidened(args[0], reader), False
        abs_call = reader.call(inner)
        if abs_call is not None and abs_call[0] == "abs" and len(abs_call[1]) == 1:
            inner, absolute = _unwidened(abs_call[1][0], reader), True
        term = modulo_term(reader.term(inner), reader.integer(args[1]), absolute=absolute)
        if term is not None:
            return term
    if name == "subtract" and len(args) == 2:  # x - x % w
        col = reader.column(args[0])
        right = reader.call(args[1])
        if right is not None and right[0] == "modulus" and len(right[1]) == 2:
            width = reader.integer(right[1][1])
            if reader.column(right[1][0]) == col and width > 0:
                return TransformTerm(TRUNCATE, (col,), param=width)
    raise NotATerm


def _unwidened(node: Any, reader: TermReader) -> Any:
    while (shape := reader.call(node)) is not None and shape[0] == CAST_INT:
        node = shape[1][0]
    return node
