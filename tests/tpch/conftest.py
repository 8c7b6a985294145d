"""TPC-H at scale factor 0.1, generated and loaded once per test session (about 3 s)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tpch_support import SCALE_FACTOR, Oracle, tpch_data


@pytest.fixture(scope="session")
def tpch_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(Parquet directory, Lance directory) of this session's TPC-H data."""
    return tpch_data.prepare(tmp_path_factory.mktemp("tpch"), SCALE_FACTOR)


@pytest.fixture(scope="session")
def oracle(tpch_dirs: tuple[Path, Path]) -> Oracle:
    return Oracle(tpch_dirs[0])


@pytest.fixture(scope="session")
def lance_contexts(tpch_dirs: tuple[Path, Path]) -> dict[bool, Any]:
    """One ``lance_sql.SessionContext`` per SPJ setting, set through SQL, over the Lance data."""
    import lance_sql

    contexts = {}
    for spj in (True, False):
        ctx = lance_sql.SessionContext()
        if not spj:
            ctx.sql("SET lance.spj = false")
        tpch_data.register_lance_sql(ctx, tpch_dirs[1])
        contexts[spj] = ctx
    return contexts
