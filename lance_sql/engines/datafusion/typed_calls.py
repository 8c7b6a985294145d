"""``murmur3`` / ``murmur3_multi`` of any type as DataFrame expressions.

A DataFrame expression has no types until it meets a DataFrame, so
``ctx.udf("murmur3")(col("s"))`` returns a :class:`TypedCall` that records the
call and what is done to it; a :class:`~.dataframe.LanceDataFrame` method builds
the typed UDF call. Put the call on the left of an operator: DataFusion's
``Expr`` does not defer to it.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from datafusion import DataFrame, Expr

from lance_sql.engines.datafusion.functions import HASH_KERNELS
from lance_sql.engines.datafusion.sql_dispatch import register_typed

#: the lance-sql functions whose DataFrame calls are typed against their input
TYPED_FUNCTIONS = tuple(HASH_KERNELS)


@dataclass(frozen=True, eq=False)
class TypedCall:
    """A call of a lance-sql function whose argument types come from the DataFrame it meets."""

    ctx: Any
    function: str
    args: tuple[Any, ...]
    steps: tuple[tuple[Callable[..., Any], tuple[Any, ...]], ...] = field(default=())

    def _then(self, fn: Callable[..., Any], *args: Any) -> TypedCall:
        return TypedCall(self.ctx, self.function, self.args, (*self.steps, (fn, args)))

    def resolve(self, df: DataFrame) -> Expr:
        """The expression over ``df``: the typed UDF called on the resolved arguments."""
        args = [resolve(a, df) for a in self.args]
        types = [DataFrame.select(df, a).schema().field(0).type for a in args]
        name = register_typed(self.ctx, self.function, types)
        expr = self.ctx.udf(name)(*args)
        for fn, extra in self.steps:
            expr = fn(expr, *(resolve(a, df) for a in extra))
        return expr


#: what may be done to a call: recorded (``_then``) and applied once the call is built
for _name, _fn in (
    ("alias", Expr.alias),
    ("is_null", Expr.is_null),
    ("cast", Expr.cast),
    ("__add__", operator.add),
    ("__sub__", operator.sub),
    ("__mul__", operator.mul),
    ("__truediv__", operator.truediv),
    ("__mod__", operator.mod),
    ("__eq__", operator.eq),
    ("__ne__", operator.ne),
    ("__lt__", operator.lt),
    ("__le__", operator.le),
    ("__gt__", operator.gt),
    ("__ge__", operator.ge),
):
    setattr(TypedCall, _name, functools.partialmethod(TypedCall._then, _fn))


def resolve(value: Any, df: DataFrame) -> Any:
    """``value`` with every :class:`TypedCall` in it (also in lists) built over ``df``."""
    if isinstance(value, TypedCall):
        return value.resolve(df)
    if isinstance(value, list | tuple):
        return type(value)(resolve(v, df) for v in value)
    return value


def holds_typed_call(values: Any) -> bool:
    """Whether any of ``values`` (lists included) is a :class:`TypedCall`."""
    return any(
        isinstance(v, TypedCall) or (isinstance(v, list | tuple) and holds_typed_call(v))
        for v in values
    )


class TypedFunction:
    """``ctx.udf("murmur3")``: calling it gives a :class:`TypedCall`."""

    def __init__(self, ctx: Any, function: str) -> None:
        self._ctx = ctx
        self.name = function

    def __call__(self, *args: Any) -> TypedCall:
        return TypedCall(self._ctx, self.name, tuple(args))

    def __repr__(self) -> str:
        return f"TypedFunction({self.name})"
