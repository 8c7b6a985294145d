"""Boolean literals in the filters DataFusion pushes into a pyarrow-dataset table.

datafusion-python 55 builds a pushed filter in Python with ``operator.and_`` /
``or_`` / ``invert`` and may leave a literal among the conjuncts
(``full_filters=[false, x > 0]``); pyarrow has no ``BooleanScalar & Expression``,
so the query failed. :func:`install` wraps those functions to fold a boolean
literal next to an Expression with Kleene logic (a NULL literal stays); every
other call goes to the original function.
"""

from __future__ import annotations

import functools
import operator
import threading
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.tables.scan import NOT_LITERAL, boolean_literal

_lock = threading.Lock()
_ORIGINALS: dict[str, Callable[..., Any]] = {}


def _expression(value: object) -> pc.Expression:
    if isinstance(value, pc.Expression):
        return value
    return pc.scalar(value)  # a pyarrow scalar


def _literal(value: bool | None) -> pc.Expression:
    return pc.scalar(pa.scalar(value, pa.bool_()))


def _pyarrow(value: object) -> bool:
    return isinstance(value, pc.Expression | pa.Scalar)


def _connective(name: str, absorbing: bool, a: Any, b: Any) -> Any:
    """AND (``absorbing`` False) or OR (True) with its constant operands folded."""
    la, lb = boolean_literal(a), boolean_literal(b)
    if (la is NOT_LITERAL and lb is NOT_LITERAL) or not (_pyarrow(a) and _pyarrow(b)):
        return _ORIGINALS[name](a, b)
    if la is absorbing or lb is absorbing:
        return _literal(absorbing)
    if la is (not absorbing):
        return _literal(lb) if lb is not NOT_LITERAL else _expression(b)  # type: ignore[arg-type]
    if lb is (not absorbing):
        return _literal(la) if la is not NOT_LITERAL else _expression(a)  # type: ignore[arg-type]
    # a NULL literal: not constant
    return _expression(a) | _expression(b) if absorbing else _expression(a) & _expression(b)


def _invert(a: Any) -> Any:
    la = boolean_literal(a)
    if la is NOT_LITERAL:
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
