"""lance-sql's SQL functions for DataFusion: ``murmur3(x)`` and ``murmur3_multi(x, y, ...)``.

Both accept any type with canonical bytes (NOTES 2.1) and ``murmur3_multi`` any
number (>= 1) of arguments of mixed types, anywhere in a query. DataFusion 55's
Python UDFs have one exact signature each, so calls are dispatched by the
``murmur3_dispatch`` rewrite pass (see :mod:`.sql_dispatch`): each call is
renamed to a typed UDF registered on demand for its exact argument types, which
DataFusion itself reports in the call's own scope. Unaliased select items holding
a call get an alias with the name DataFusion would give a UDF called ``murmur3``
(``murmur3(t.x) % Int64(16)``), so the typed names never reach result columns.
Queries that do not mention ``murmur3`` are left byte-for-byte untouched.

The plain names are registered too, for the DataFrame API and for calls the
pass leaves alone (queries DataFusion cannot plan anyway): ``murmur3(Int64)`` and
``murmur3_multi(Int64)``, to which DataFusion widens every smaller integer;
the hash is type-promotion resistant, so widening never changes it.
"""

from __future__ import annotations

import datafusion
import pyarrow as pa

import udfs
from lance_sql.engines.datafusion.sql_dispatch import HASH_KERNELS, DispatchArityError, dispatch_sql
from lance_sql.engines.datafusion.sql_rewrite import register_pass
from lance_sql.errors import PlanningError


class UnsupportedFunctionArgumentError(PlanningError, udfs.UnsupportedTypeError):
    """A SQL call of murmur3/murmur3_multi with an argument type that has no canonical bytes.

    Both a lance-sql ``PlanningError`` and a ``udfs.UnsupportedTypeError`` (``TypeError``);
    ``function`` and ``arrow_type`` name what is at fault.
    """

    def __init__(self, function: str, arrow_type: object) -> None:
        udfs.UnsupportedTypeError.__init__(self, function, arrow_type)


class FunctionArityError(PlanningError, TypeError):
    """A SQL call of murmur3/murmur3_multi with the wrong number of arguments."""


def murmur3_dispatch(ctx: datafusion.SessionContext, sql: str) -> str:
    """The rewrite pass: murmur3/murmur3_multi calls -> typed UDFs (no-op without them)."""
    try:
        return dispatch_sql(ctx, sql)
    except udfs.UnsupportedTypeError as exc:
        raise UnsupportedFunctionArgumentError(exc.function, exc.arrow_type) from exc
    except DispatchArityError as exc:
        raise FunctionArityError(str(exc)) from exc


def register_functions(ctx: datafusion.SessionContext) -> None:
    """Register lance-sql's SQL functions on ``ctx`` (the dispatch pass itself is global)."""
    for name, (impl, _) in HASH_KERNELS.items():
        ctx.register_udf(datafusion.udf(impl, [pa.int64()], pa.int32(), "immutable", name))


register_pass("murmur3_dispatch", murmur3_dispatch)
