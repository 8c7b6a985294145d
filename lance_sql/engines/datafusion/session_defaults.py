"""The DataFusion configuration a ``lance_sql.SessionContext()`` gets when given none.

DataFusion's defaults, except ``datafusion.execution.batch_size`` =
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
    """A fresh ``SessionConfig``: DataFusion's defaults with ``batch_size`` 131,072."""
    return SessionConfig().with_batch_size(DEFAULT_BATCH_SIZE)


__all__ = ["DEFAULT_BATCH_SIZE", "default_config"]
