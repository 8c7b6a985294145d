"""The numba kernels of :mod:`udfs._kernels`, imported when a kernel first runs.

Importing numba costs about 100 MB and most of a second; a service that never hashes
should not pay for it, so callers reach kernels through :data:`kernels`, which imports
them on first attribute access.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

_INIT_LOCK = threading.Lock()
_OPERATORS = ("and_", "or_", "xor", "invert", "not_", "lshift", "rshift")


@contextmanager
def _builtin_operators() -> Iterator[None]:
    """The ``operator`` module's own functions while numba is imported: numba captures
    ``operator.and_`` & co. then and asserts they are builtins, so lance-sql's wrappers
    (``__wrapped__`` kept) are undone for the import and put back after it."""
    wrapped = {
        n: f
        for n in _OPERATORS
        if (f := getattr(operator, n, None)) is not None and hasattr(f, "__wrapped__")
    }
    for n, f in wrapped.items():
        setattr(operator, n, f.__wrapped__)
    try:
        yield
    finally:
        for n, f in wrapped.items():
            setattr(operator, n, f)


def _initialise_numba() -> None:
    """Load numba's typing and lowering registries now (it does so at the first compile)."""
    from numba.core.registry import cpu_target

    cpu_target.typing_context.refresh()
    cpu_target.target_context.refresh()


_NUMBA_READY = False


def ensure_numba() -> None:
    """Import numba and load its registries once, with the builtin operator functions in place.

    Every module that uses numba calls this before its first ``import numba``. One thread
    initialises: two refreshing numba's registries at once raise "generator already executing".
    """
    global _NUMBA_READY
    if _NUMBA_READY:
        return
    with _INIT_LOCK:
        if not _NUMBA_READY:
            with _builtin_operators():
                import numba  # noqa: F401

                _initialise_numba()
            _NUMBA_READY = True


class _Kernels:
    """Attribute access forwards to :mod:`udfs._kernels`, importing it the first time."""

    _module: ModuleType | None = None

    def __getattr__(self, name: str) -> Any:
        module = type(self)._module
        if module is None:
            ensure_numba()
            with _INIT_LOCK:
                module = type(self)._module
                if module is None:
                    with _builtin_operators():
                        from udfs import _kernels

                    module = type(self)._module = _kernels
        return getattr(module, name)


kernels: Any = _Kernels()
