"""The numba kernels of :mod:`udfs._kernels`, imported when a kernel first runs.

Importing numba (and llvmlite) adds about 100 MB of resident memory and most of
a second to a process. A service that registers the lance-sql functions but
never hashes a value should not pay for it, so the modules that call kernels
reach them through :data:`kernels`, which imports :mod:`udfs._kernels` on the
first attribute access. Python's import lock makes that first access safe from
any number of DataFusion threads at once.
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
    """The ``operator`` module's own functions while numba is imported.

    numba captures ``operator.and_`` & co. when it is first imported and asserts
    they are builtins when it compiles ``&``; a library that wraps them (keeping
    the original as ``__wrapped__``, as lance-sql does for datafusion-python's
    pushed filters) would make every later compile fail. The wrappers are put
    back right after the import.
    """
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

    Every lance-sql module that uses numba calls this before its first
    ``import numba``: whichever imports numba first fixes what numba captured
    (the kernels here, or the writer's regrouping kernels). One thread
    initialises: numba's registries are generators, and two threads refreshing
    at once failed with "ValueError: generator already executing".
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
