"""Session fixtures of the differential corpus: the tables, written once, and the contexts.

``diff`` is a :class:`diff_harness.Contexts`: lance-sql (SPJ on), lance-sql
(SPJ off), plain DataFusion over memory tables and DuckDB, all over the same
deterministic rows (see ``diff_data``). ``run_both(sql)`` gives lance-sql's and
plain DataFusion's answers; ``assert_same`` compares them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from diff_data import build_tables, write_all
from diff_harness import Contexts, build_contexts


@pytest.fixture(scope="session")
def diff(tmp_path_factory: pytest.TempPathFactory) -> Contexts:
    batches = build_tables()
    uris = write_all(tmp_path_factory.mktemp("differential"), batches)
    tables = {name: pa.concat_tables(parts) for name, parts in batches.items()}
    return build_contexts(tables, uris)
