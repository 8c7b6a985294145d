"""Adversarial review (session 7): wrong rows, lost rows and raw errors.

Each test is a minimal story found by a differential run (lance-sql against
plain DataFusion over a memory table of the same rows, and DuckDB); it fails
without the fix named in its docstring.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import datafusion
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace


def _keys(ctx: Any, sql: str) -> list[Any]:
    return sorted(ctx.sql(sql).to_arrow_table().column(0).to_pylist(), key=repr)


def _plain(table: pa.Table, sql: str) -> list[Any]:
    ctx = datafusion.SessionContext()
    ctx.from_arrow(table, "t")
    return _keys(ctx, sql)


def _registered(root: str) -> Any:
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    return ctx


# ---------------------------------------------------- float IN lists and partition values

FLOAT_IDENTITY = [{"field_id": "f", "source": "f", "transform": {"type": "identity"}}]


@pytest.mark.parametrize(
    "where",
    ["f IN (0.0, 2.5)", "f IN (-0.0, 2.5)", "f = 0.0 OR f = 2.5", "f NOT IN (0.0, 2.5)"],
)
def test_float_in_list_selects_the_negative_zero_partition(tmp_path: Path, where: str) -> None:
    """An identity partition on a float column holding -0.0 is selected by ``IN (0.0, ...)``.

    Fixed in planning/arrow_expr.py and planning/evaluate.py: the ``__manifest``
    selection evaluated IN with pyarrow's ``is_in``, which hashes floats bitwise
    (-0.0 is not in [0.0]); SQL's IN is ``=``, where -0.0 = 0.0. The rows of the
    -0.0 partition were missing from SELECT and survived a DELETE.
    """
    schema = pa.schema([("k", pa.int64()), ("f", pa.float64())])
    rows = pa.table({"k": [0, 1, 2, 3], "f": [-0.0, 0.0, 2.5, 1.0]}, schema=schema)
    root = str(tmp_path / "ns")
    PartitionedNamespace.create(root, schema, FLOAT_IDENTITY).append(rows)
    want = _plain(rows, f"SELECT k FROM t WHERE {where}")
    assert _keys(_registered(root), f"SELECT k FROM t WHERE {where}") == want
    _registered(root).sql(f"DELETE FROM t WHERE {where}").collect()
    kept = _plain(rows, f"SELECT k FROM t WHERE NOT ({where}) OR ({where}) IS NULL")
    assert _keys(_registered(root), "SELECT k FROM t") == kept


# ------------------------------------------------------------ column names Lance refuses

SCHEMA_K = [{"field_id": "k", "source": "k", "transform": {"type": "identity"}}]


@pytest.mark.parametrize("name", ["a.b", "", "_rowid", "_rowaddr", "_row_created_at_version"])
def test_column_names_lance_cannot_store_are_refused_up_front(tmp_path: Path, name: str) -> None:
    """Fixed in tables/namespace/properties.py (check_column_name, used by create,
    add_columns and rename_column): a namespace was created with a column Lance
    refuses (a '.', an empty or a reserved name), then every append failed with a
    raw OSError (LanceError(Schema)) or a FormatError."""
    from lance_sql.errors import SpecError

    schema = pa.schema([("k", pa.int64()), (name, pa.int64())])
    with pytest.raises(SpecError, match="cannot be stored"):
        PartitionedNamespace.create(str(tmp_path / "a"), schema, SCHEMA_K)
    ns = PartitionedNamespace.create(str(tmp_path / "b"), pa.schema([("k", pa.int64())]), SCHEMA_K)
    with pytest.raises(SpecError):
        ns.add_columns([pa.field(name, pa.int64())])
    ns.add_columns([pa.field("x", pa.int64())])
    if name:
        with pytest.raises(SpecError, match="cannot be stored"):
            ns.rename_column("x", name)
    ns.append(pa.table({"k": [1], "x": [2]}))
    assert ns.to_table().to_pylist() == [{"k": 1, "x": 2}]
