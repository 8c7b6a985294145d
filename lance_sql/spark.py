"""``lance_sql.spark``: the Spark integration (optional extra ``lance-sql[spark]``).

A short alias of :mod:`lance_sql.engines.spark`, so users write
``lance_sql.spark.register(spark)`` and ``lance_sql.spark.partitioned_join(...)``.
"""

from __future__ import annotations

from lance_sql.engines.spark import *  # noqa: F403
from lance_sql.engines.spark import __all__  # noqa: F401
