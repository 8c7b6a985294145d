"""The DataFusion configuration a ``lance_sql.SessionContext()`` gets when given none.

DataFusion's defaults, except join dynamic filters (off) and ``batch_size``
:data:`DEFAULT_BATCH_SIZE`: each Python UDF call is a GIL hand-off whatever the
batch holds (docs/engine-notes.md). A given ``config`` is used as given.
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
