"""MAP(K, V) column types in CREATE TABLE ... PARTITIONED BY.

Oracle: plain DataFusion's own map values (``map([...], [...])``): the
column's type is the type DataFusion gives them, and rows inserted read back
equal to the same expressions selected from no table.
"""

from __future__ import annotations

import datafusion
import pyarrow as pa
import pytest

from lance_sql import PartitionedNamespace, SessionContext, SpecError

VALUES = (
    "1 AS id, 'eu' AS region, map(['a', 'b'], ['x', NULL]) AS attrs, "
    "named_struct('m', map(['k'], [arrow_cast(7, 'Int32')])) AS s, "
    "map(['k'], [map([arrow_cast(1, 'Int32')], [2.5])]) AS deep"
)


def test_create_table_with_map_columns(tmp_path):
    ctx = SessionContext()
    ctx.sql(
        "CREATE TABLE e (id BIGINT, region VARCHAR, attrs MAP(VARCHAR, VARCHAR), "
        "s STRUCT<m MAP(VARCHAR, INT)>, deep map (VARCHAR, MAP(INT, DOUBLE))) "
        f"PARTITIONED BY (region) LOCATION '{tmp_path / 'e'}'"
    ).collect()
    expected = datafusion.SessionContext().sql(f"SELECT {VALUES}").to_arrow_table()
    schema = PartitionedNamespace.open(tmp_path / "e").schema
    for name in ("attrs", "s", "deep"):
        assert schema.field(name).type == expected.schema.field(name).type
    ctx.sql(f"INSERT INTO e SELECT {VALUES}").collect()
    got = ctx.sql("SELECT * FROM e").to_arrow_table()
    assert got.to_pylist() == expected.to_pylist()
    assert pa.types.is_map(got.schema.field("attrs").type)


def test_a_malformed_map_type_is_a_typed_error(tmp_path):
    with pytest.raises(SpecError, match="MAP type needs a key and a value type"):
        SessionContext().sql(
            "CREATE TABLE e (region VARCHAR, attrs MAP(VARCHAR)) "
            f"PARTITIONED BY (region) LOCATION '{tmp_path / 'e'}'"
        ).collect()
