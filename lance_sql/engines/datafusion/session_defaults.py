"""The DataFusion configuration a ``lance_sql.SessionContext()`` gets when given none.

DataFusion's defaults, except join dynamic filters (off: see :func:`default_config`) and
``datafusion.execution.batch_size`` =
:data:`DEFAULT_BATCH_SIZE` (131,072 rows instead of 8,192). Why: DataFusion
calls a Python UDF once per batch, and with several partitions every call is a
GIL hand-off between DataFusion's threads, which costs 30-100 us whatever the
batch holds (measured in datafusion-python 55 with a UDF returning a
precomputed array: +55 us per call at 8,192 rows, 2 partitions). With 16x
fewer calls lance-sql's SQL functions (``murmur3``, ``murmur3_multi``) run at
the speed of their compiled kernels; DataFusion's own operators are no slower
with large batches (docs/benchmarks/scan.md). Lance scans read at most 16,384
rows per batch (:func:`lance_sql.tables.scan.storage_batch_size`), so a
``LIMIT`` still reads little. Pass a ``config`` to ``SessionContext`` to choose
otherwise: it is used as given.
"""

from __future__ import annotations

from datafusion import SessionConfig

#: ``datafusion.execution.batch_size`` of a context created without a ``config``.
DEFAULT_BATCH_SIZE = 131072


def default_config() -> SessionConfig:
    """A fresh ``SessionConfig``: DataFusion's defaults with ``batch_size`` 131,072 and
    join dynamic filters off. DataFusion 55 moves a join's dynamic filter through
    projections, filters and aggregates by column name, so one holding two columns of
    one name (``t0.sku``, ``t2.sku`` after a self-join) can get the filter on the wrong
    column and lose rows (apache/datafusion#25263 and siblings, fixed after 55).
    lance-sql's join passes no longer build such projections
    (:mod:`.join_emit_names`; the corpus query ``SELECT * FROM items t0, orders t1,
    items t2 WHERE ... AND t0.sku IN (SELECT sku FROM products) ORDER BY 1, ..., 23``
    gives 7,920 rows either way, 7,599 with the pushdown on before), but DataFusion
    builds some itself (plain DataFusion over Parquet loses rows on them), and the
    pushdown gained nothing measurable on TPC-H SF1 (docs/benchmarks.md): it stays off."""
    return (
        SessionConfig()
        .with_batch_size(DEFAULT_BATCH_SIZE)
        .set("datafusion.optimizer.enable_join_dynamic_filter_pushdown", "false")
    )
