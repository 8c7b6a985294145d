"""``lance_sql.SessionContext``: DataFusion's SessionContext that also knows Lance tables.

A thin subclass (datafusion-python's vocabulary, unchanged behaviour for every
existing method) that registers lance-sql's SQL functions at construction and
runs the SQL rewrite pipeline (:mod:`.sql_rewrite`) before DataFusion parses a
query.
"""

from __future__ import annotations

from typing import Any

import datafusion
from datafusion import DataFrame, SessionConfig, SQLOptions
from datafusion import RuntimeEnvBuilder

from lance_sql.engines.datafusion import functions
from lance_sql.engines.datafusion.sql_rewrite import rewrite_sql


class SessionContext(datafusion.SessionContext):
    """A ``datafusion.SessionContext`` with Lance tables and lance-sql SQL functions."""

    def __init__(
        self,
        config: SessionConfig | None = None,
        runtime: RuntimeEnvBuilder | None = None,
    ) -> None:
        super().__init__(config, runtime)
        functions.register_functions(self)

    def sql(
        self,
        query: str,
        options: SQLOptions | None = None,
        param_values: dict[str, Any] | None = None,
        **named_params: Any,
    ) -> DataFrame:
        """Run ``query`` after lance-sql's rewrites (see :mod:`.sql_rewrite`)."""
        return super().sql(
            rewrite_sql(self, query), options=options, param_values=param_values, **named_params
        )
