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
    """A fresh ``SessionConfig``: ``batch_size`` 131,072 and join dynamic filters off.

    DataFusion 55 moves a join's dynamic filter by column name, so one over two
    columns of one name (after a self-join) can filter the wrong column and lose
    rows (apache/datafusion#25263, fixed after 55); it gained nothing on TPC-H SF1.
    """
    return (
        SessionConfig()
        .with_batch_size(DEFAULT_BATCH_SIZE)
        .set("datafusion.optimizer.enable_join_dynamic_filter_pushdown", "false")
    )
