"""lance-sql's SQL functions (murmur3, murmur3_multi, ...) for DataFusion. Placeholder."""

from __future__ import annotations

import datafusion


def register_functions(ctx: datafusion.SessionContext) -> None:
    """Register every lance-sql SQL function on ``ctx``."""
