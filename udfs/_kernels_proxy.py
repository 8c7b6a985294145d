"""The numba kernels of :mod:`udfs._kernels`, imported when a kernel first runs.

Importing numba (and llvmlite) adds about 100 MB of resident memory and most of
a second to a process. A service that registers the lance-sql functions but
never hashes a value should not pay for it, so the modules that call kernels
reach them through :data:`kernels`, which imports :mod:`udfs._kernels` on the
first attribute access. Python's import lock makes that first access safe from
any number of DataFusion threads at once.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any


class _Kernels:
    """Attribute access forwards to :mod:`udfs._kernels`, importing it the first time."""

    _module: ModuleType | None = None

    def __getattr__(self, name: str) -> Any:
        module = type(self)._module
        if module is None:
            from udfs import _kernels

            module = type(self)._module = _kernels
        return getattr(module, name)


kernels: Any = _Kernels()
