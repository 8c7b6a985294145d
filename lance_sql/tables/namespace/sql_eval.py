"""Evaluate SQL text (filters, SET expressions, MERGE clauses) over Arrow rows with DataFusion
(the SQL engine service, :mod:`udfs.sql_engine`).

Row operations of a namespace (``delete``, ``update``, ``merge``) take SQL
text over the namespace schema; it is evaluated here by DataFusion itself, so
a filter means exactly what it means in a ``SELECT`` over the namespace
(NULL is not TRUE, DataFusion's float and cast rules). ``murmur3`` and
``murmur3_multi`` calls are dispatched as in queries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from lance_sql.errors import LanceSqlError, first_line
from udfs.sql_engine import sql_engine


class SqlExpressionError(LanceSqlError):
    """A filter or expression given to a row operation does not plan or run."""


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def run_sql(tables: Mapping[str, pa.Table], sql: str, *, what: str) -> pa.Table:
    """Run ``sql`` with ``tables`` registered under their names; the result as one table."""
    try:
        return sql_engine().query(tables, sql)
    except LanceSqlError:
        raise
    except Exception as exc:  # DataFusion raises plain exceptions
        first = first_line(exc)
        raise SqlExpressionError(f"{what} cannot be evaluated: {first}") from exc


def matching_mask(rows: pa.Table, filter: str) -> pa.Array:
    """Boolean mask: True where ``filter`` (SQL over ``rows``' columns) is TRUE."""
    if rows.num_rows == 0:
        return pa.array([], pa.bool_())
    idx = "__lance_sql_row"
    t = rows.append_column(idx, pa.array(range(rows.num_rows), pa.int64()))
    out = run_sql({"t": t}, f"SELECT {quote(idx)} FROM t WHERE {filter}", what=f"filter {filter!r}")
    import numpy as np

    mask = np.zeros(rows.num_rows, dtype=bool)
    mask[out.column(0).to_numpy()] = True
    return pa.array(mask)


def project(rows: pa.Table, exprs: Sequence[tuple[str, str]], *, what: str) -> pa.Table:
    """``SELECT expr AS name, ... FROM rows`` keeping row order."""
    idx = "__lance_sql_row"
    t = rows.append_column(idx, pa.array(range(rows.num_rows), pa.int64()))
    select = ", ".join(f"({e}) AS {quote(n)}" for n, e in exprs)
    out = run_sql({"t": t}, f"SELECT {select} FROM t ORDER BY {quote(idx)}", what=what)
    return out


__all__ = ["SqlExpressionError", "matching_mask", "project", "quote", "run_sql"]
