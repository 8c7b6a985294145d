"""lance-sql's SQL functions for DataFusion: ``murmur3(x)`` and ``murmur3_multi(x, y, ...)``.

SQL calls of any types are dispatched to typed UDFs (:mod:`.sql_dispatch`); the
plain names are registered too, as ``Int64`` (DataFusion widens smaller integers
to it, and the hash is type-promotion resistant).
"""

from __future__ import annotations

from collections.abc import Callable

import datafusion
import pyarrow as pa

import udfs
from lance_sql.errors import PlanningError
from udfs.hashing import murmur3, murmur3_multi

# The SQL hash functions: name -> (kernel over the argument columns, takes exactly one)
HASH_KERNELS: dict[str, tuple[Callable[..., pa.Array], bool]] = {
    "murmur3": (murmur3, True),
    "murmur3_multi": (lambda *columns: murmur3_multi(list(columns)), False),
}


class UnsupportedFunctionArgumentError(PlanningError, udfs.UnsupportedTypeError):
    """A call of murmur3/murmur3_multi with an argument type that has no canonical bytes.

    Both a lance-sql ``PlanningError`` and a ``udfs.UnsupportedTypeError`` (``TypeError``);
    ``function`` and ``arrow_type`` name what is at fault.
    """

    def __init__(self, function: str, arrow_type: object) -> None:
        udfs.UnsupportedTypeError.__init__(self, function, arrow_type)


class FunctionArityError(PlanningError, TypeError):
    """A SQL call of murmur3/murmur3_multi with the wrong number of arguments."""

    def __init__(self, function: str, count: int) -> None:
        need = "exactly 1 argument" if HASH_KERNELS[function][1] else "at least 1 argument"
        super().__init__(f"{function} takes {need}, got {count}")
        self.function = function


def register_functions(ctx: datafusion.SessionContext) -> None:
    """Register the plain names of lance-sql's SQL functions on ``ctx``."""
    for name, (impl, _) in HASH_KERNELS.items():
        ctx.register_udf(datafusion.udf(impl, [pa.int64()], pa.int32(), "immutable", name))
