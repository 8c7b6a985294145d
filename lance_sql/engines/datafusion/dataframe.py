"""``LanceDataFrame``: a DataFusion DataFrame whose plan lance-sql rewrites each time it runs.

Building one is DataFusion's work; running one first applies the plan passes
(:mod:`.plan_rewrite`) against the namespaces as they are *now*, and raises
lance-sql errors typed (:mod:`.errors`).
"""

from __future__ import annotations

import functools
from typing import Any

from datafusion import DataFrame

from lance_sql.engines.datafusion.errors import TypedStream, typed_errors
from lance_sql.engines.datafusion.plan_rewrite import Rewrite, rewrite
from lance_sql.engines.datafusion.typed_calls import holds_typed_call, resolve

#: DataFrame methods that run the plan (everything else only builds one)
EXECUTING = (
    "__arrow_c_stream__",
    "__iter__",
    "__aiter__",
    "__repr__",
    "_repr_html_",
    "cache",
    "collect",
    "collect_column",
    "collect_partitioned",
    "count",
    "execute_stream",
    "execute_stream_partitioned",
    "execution_plan",
    "show",
    "to_arrow_table",
    "to_pandas",
    "to_polars",
    "to_pydict",
    "to_pylist",
    "write_csv",
    "write_json",
    "write_parquet",
    "write_parquet_with_options",
    "write_table",
)


#: methods whose Arrow results get their original column names back when the rewritten
#: plan had to rename same-named output columns (see plan_rewrite._unique_output_names)
_RENAMED = (
    "collect",
    "collect_partitioned",
    "to_arrow_table",
    "to_pylist",
    "to_pydict",
    "to_pandas",
    "to_polars",
)
#: methods whose results do not show column names (the rewritten plan runs as it is)
_NAMES_UNUSED = ("count", "execution_plan")


def _renamed(name: str, planned: DataFrame, names: list[str]) -> Any:
    """``name``'s result over ``planned`` with the output columns named ``names``."""
    if name == "collect":
        return [b.rename_columns(names) for b in DataFrame.collect(planned)]
    if name == "collect_partitioned":
        return [
            [b.rename_columns(names) for b in part]
            for part in DataFrame.collect_partitioned(planned)
        ]
    table = DataFrame.to_arrow_table(planned).rename_columns(names)
    if name == "to_polars":
        import polars

        return polars.from_arrow(table)
    return table if name == "to_arrow_table" else getattr(table, name)()


#: methods whose result runs the plan while it is consumed
_STREAMS = ("__iter__", "__aiter__", "execute_stream", "execute_stream_partitioned")


class LanceDataFrame(DataFrame):
    """A ``datafusion.DataFrame`` that knows the lance-sql context it came from."""

    def __init__(self, df: Any, ctx: Any) -> None:
        super().__init__(df.df if isinstance(df, DataFrame) else df)
        self._lance_ctx = ctx

    def explain(self, verbose: bool = False, analyze: bool = False) -> None:
        """Print the plan lance-sql runs, with its description lines (as SQL ``EXPLAIN``).

        ``verbose`` / ``analyze`` print DataFusion's own explanation of that plan.
        """
        if verbose or analyze:
            with typed_errors():
                rewrite(self._lance_ctx, DataFrame(self.df)).dataframe.explain(verbose, analyze)
            return
        with typed_errors():
            table = self._lance_ctx.explain_table(DataFrame(self.df))
        for row in table.to_pylist():
            print(f"{row['plan_type']}:\n{row['plan']}")

    def lance_rewrite(self) -> Rewrite:
        """The plan lance-sql would run now, with what it did (for tests and EXPLAIN)."""
        with typed_errors():
            return rewrite(self._lance_ctx, DataFrame(self.df))


def _executing(name: str) -> Any:
    base = getattr(DataFrame, name)

    @functools.wraps(base)
    def run(self: LanceDataFrame, *args: Any, **kwargs: Any) -> Any:
        with typed_errors():
            done = rewrite(self._lance_ctx, DataFrame(self.df))
            planned = done.dataframe
            if done.names is not None:
                if name in _RENAMED:
                    return _renamed(name, planned, done.names)
                if name not in _NAMES_UNUSED:  # output names matter: run the plan as built
                    planned = DataFrame(self.df)
            result = base(planned, *args, **kwargs)
        if isinstance(result, DataFrame):
            return LanceDataFrame(result, self._lance_ctx)
        if name in _STREAMS:  # the plan runs while the stream is read: keep errors typed
            return (
                [TypedStream(r) for r in result]
                if isinstance(result, list)
                else TypedStream(result)
            )
        return result

    return run


def _building(name: str) -> Any:
    base = getattr(DataFrame, name)

    @functools.wraps(base)
    def build(self: LanceDataFrame, *args: Any, **kwargs: Any) -> Any:
        with typed_errors():
            if holds_typed_call(args) or holds_typed_call(kwargs.values()):
                # murmur3 & co. of any type: typed against this DataFrame (typed_calls)
                args = resolve(args, DataFrame(self.df))
                kwargs = {k: resolve(v, DataFrame(self.df)) for k, v in kwargs.items()}
            result = base(self, *args, **kwargs)
        return LanceDataFrame(result, self._lance_ctx) if isinstance(result, DataFrame) else result

    return build


for _name, _member in list(vars(DataFrame).items()):
    if not callable(_member) or isinstance(_member, (staticmethod, classmethod)):
        continue
    if _name in vars(LanceDataFrame):  # defined here (explain)
        continue
    if _name in EXECUTING:
        setattr(LanceDataFrame, _name, _executing(_name))
    elif not _name.startswith("_") or _name == "__getitem__":
        setattr(LanceDataFrame, _name, _building(_name))
