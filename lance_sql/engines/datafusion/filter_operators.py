"""Boolean literals in the filters DataFusion pushes into a pyarrow-dataset table.

datafusion-python 55 builds the pushed filter in Python: it turns each
DataFusion literal into a ``pyarrow`` *scalar* (``pa.BooleanScalar``, not an
Expression), each ``AND``/``OR``/``NOT`` into a call of ``operator.and_`` /
``operator.or_`` / ``operator.invert`` (looked up on the ``operator`` module at
every call, ``crates/core/src/pyarrow_filter_expression.rs``), and joins the
pushed conjuncts left to right with ``and_``. Its logical optimizer
(``push_down_filter``) may leave a literal among those conjuncts: for
``WHERE s = 'a' AND s = 'b' AND x > 0`` the table scan gets
``full_filters=[false, x > 0]``. pyarrow has no ``BooleanScalar & Expression``,
so ``and_(false, x > 0)`` raised ``TypeError`` in Rust, before any table code
ran, and the query failed where DataFusion over memory tables returns no rows.

:func:`install` wraps those three ``operator`` functions so that a boolean
literal operand (a ``pa.BooleanScalar`` / ``pa.NullScalar`` or a literal
Expression) next to a pyarrow Expression is folded with Kleene (SQL) logic:
``false AND e`` is ``false``, ``true AND e`` is ``e``, ``true OR e`` is
``true``, ``false OR e`` is ``e``, ``NOT`` of a literal is a literal; a NULL
literal stays in the expression (``NULL AND e`` is not constant). Every other
call goes to the original function unchanged, so the ``&``/``|``/``~``
operators and calls on anything but pyarrow objects behave exactly as before.
The fold is exact for boolean operands, which is all DataFusion pushes.
:func:`lance_sql.tables.scan.normalize_filter` then turns a literal filter
into "every row" or "no row".
"""

from __future__ import annotations

import functools
import operator
import threading
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

_TRUE = pc.scalar(True)
_FALSE = pc.scalar(False)
_NULL = pc.scalar(pa.scalar(None, pa.bool_()))
_UNTYPED_NULL = pc.scalar(None)

#: Not a boolean literal.
_NO = object()

_lock = threading.Lock()
_ORIGINALS: dict[str, Callable[..., Any]] = {}


def literal_value(value: object) -> object:
    """True, False or None for a pyarrow boolean (or NULL) literal; ``_NO`` otherwise."""
    if isinstance(value, pc.Expression):
        for lit, out in ((_TRUE, True), (_FALSE, False), (_NULL, None), (_UNTYPED_NULL, None)):
            if value.equals(lit):
                return out
        return _NO
    if isinstance(value, pa.BooleanScalar):
        return value.as_py()
    if isinstance(value, pa.NullScalar):
        return None
    return _NO


def _expression(value: object) -> pc.Expression:
    if isinstance(value, pc.Expression):
        return value
    return pc.scalar(value)  # a pyarrow scalar


def _literal(value: bool | None) -> pc.Expression:
    return _NULL if value is None else (_TRUE if value else _FALSE)


def _pyarrow(value: object) -> bool:
    return isinstance(value, pc.Expression | pa.Scalar)


def _connective(name: str, absorbing: bool, a: Any, b: Any) -> Any:
    """AND (``absorbing`` False) or OR (True) with its constant operands folded."""
    la, lb = literal_value(a), literal_value(b)
    if (la is _NO and lb is _NO) or not (_pyarrow(a) and _pyarrow(b)):
        return _ORIGINALS[name](a, b)
    if la is absorbing or lb is absorbing:
        return _literal(absorbing)
    if la is (not absorbing):
        return _literal(lb) if lb is not _NO else _expression(b)  # type: ignore[arg-type]
    if lb is (not absorbing):
        return _literal(la) if la is not _NO else _expression(a)  # type: ignore[arg-type]
    # a NULL literal: not constant
    return _expression(a) | _expression(b) if absorbing else _expression(a) & _expression(b)


def _invert(a: Any) -> Any:
    la = literal_value(a)
    if la is _NO:
        return _ORIGINALS["invert"](a)
    return _literal(None if la is None else not la)


_WRAPPERS: dict[str, Callable[..., Any]] = {
    "and_": functools.partial(_connective, "and_", False),
    "or_": functools.partial(_connective, "or_", True),
    "invert": _invert,
}


def install() -> None:
    """Wrap ``operator.and_`` / ``or_`` / ``invert`` (idempotent, process-wide)."""
    with _lock:
        for name, wrapper in _WRAPPERS.items():
            current = getattr(operator, name)
            if current is wrapper:
                continue
            _ORIGINALS[name] = current
            # numba captures operator.and_ & co. when it is imported and refuses a
            # non-builtin one when it compiles ``&``: udfs imports numba with the
            # function ``__wrapped__`` names (udfs/_kernels_proxy.py)
            wrapper.__wrapped__ = current  # type: ignore[attr-defined]
            setattr(operator, name, wrapper)


def installed() -> bool:
    """True when :func:`install` is in effect."""
    return all(getattr(operator, n) is w for n, w in _WRAPPERS.items())
