"""partitioned_join equals Spark's own join on nullable, float, string and mixed-width keys."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from lance_sql.tables.namespace.namespace import PartitionedNamespace

pytestmark = pytest.mark.spark

HOWS = ["inner", "left", "right", "full", "semi", "anti"]


def _rows(df: Any) -> list[tuple]:
    def canon(v: Any) -> Any:
        if isinstance(v, float) and v != v:
            return "NaN"
        return 0.0 if isinstance(v, float) and v == 0.0 else v

    return sorted((tuple(canon(v) for v in r) for r in df.collect()), key=repr)


def _ns(root: str, key: pa.DataType, keys: list[Any], buckets: int = 4) -> None:
    schema = pa.schema([pa.field("key", key), pa.field("n", pa.int64())])
    ns = PartitionedNamespace.create(
        root, schema, [{"source": "key", "transform": "bucket", "num_buckets": buckets}]
    )
    ns.append(pa.table({"key": keys, "n": list(range(len(keys)))}, schema=schema))


CASES = {
    "float": (
        pa.float64(),
        [0.0, -0.0, float("nan"), 1.5, None, 2.5, 1.5],
        pa.float64(),
        [-0.0, float("nan"), 1.5, None, 7.0, 0.0],
    ),
    "string": (pa.utf8(), ["a", "b", None, "b", "", "é"], pa.utf8(), ["b", "x", None, "", "é"]),
    "int64 x int32": (pa.int64(), [1, 2, 2, None, 5], pa.int32(), [2, None, 5, 9, 2]),
    # compared as decimals, as Spark compares DECIMAL(20,0) with BIGINT
    "uint64 x int64": (pa.uint64(), [1, 2, 2, None, 5], pa.int64(), [2, None, 5, 9, 2]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_partitioned_join_keys_equal_spark_join(spark: Any, tmp_path: Any, case: str) -> None:
    from lance_sql.engines.spark import partitioned_join
    from lance_sql.engines.spark.join import _spark_join
    from lance_sql.engines.spark.join_arrow import arrow_join_supports

    ltype, lkeys, rtype, rkeys = CASES[case]
    lschema, rschema = pa.schema([("key", ltype)]), pa.schema([("key", rtype)])
    assert arrow_join_supports(lschema, rschema, [("key", "key")], "inner")
    lroot, rroot = str(tmp_path / "l"), str(tmp_path / "r")
    _ns(lroot, ltype, lkeys)
    _ns(rroot, rtype, rkeys)
    for how in HOWS:
        df = partitioned_join(spark, lroot, rroot, on="key", how=how)
        assert "Exchange" not in df._jdf.queryExecution().executedPlan().toString(), how
        want = _spark_join(spark, lroot, rroot, [("key", "key")], how, None, None)
        assert _rows(df) == _rows(want), how


def test_partitioned_join_filters_on_both_sides(spark: Any, tmp_path: Any, make_ns: Any) -> None:
    """Side filters (one with a leaf pyarrow cannot run: DataFusion's integer division)."""
    from lance_sql.engines.spark import partitioned_join
    from lance_sql.engines.spark.join import _spark_join

    lroot, rroot = str(tmp_path / "l"), str(tmp_path / "r")
    make_ns(lroot, range(0, 60))
    make_ns(rroot, range(30, 100), tag="r")
    filters = {"left_filter": "k / 4 <> 9 AND s IS NOT NULL", "right_filter": "v < 55.5"}
    for how in HOWS:
        df = partitioned_join(spark, lroot, rroot, on="k", how=how, **filters)
        want = _spark_join(spark, lroot, rroot, [("k", "k")], how, *filters.values())
        assert _rows(df) == _rows(want), how


def test_keys_arrow_does_not_compare_fall_back_to_sparks_join(spark: Any, tmp_path: Any) -> None:
    """Partition-compatible layouts on time keys (not an Arrow join key): Spark's own join of
    the two reads, with a warning, and its rows."""
    from lance_sql.engines.spark import partitioned_join
    from lance_sql.engines.spark.join import _spark_join

    schema = pa.schema([pa.field("key", pa.time64("us")), pa.field("n", pa.int64())])
    for root, keys in (("l", [1, 2, 2, None, 5]), ("r", [2, None, 5, 9])):
        ns = PartitionedNamespace.create(str(tmp_path / root), schema, "identity(key)")
        ns.append(pa.table({"key": keys, "n": list(range(len(keys)))}, schema=schema))
    lroot, rroot = str(tmp_path / "l"), str(tmp_path / "r")
    for how in HOWS:
        with pytest.warns(UserWarning, match="Arrow's hash join"):
            df = partitioned_join(spark, lroot, rroot, on="key", how=how)
        want = _spark_join(spark, lroot, rroot, [("key", "key")], how, None, None)
        assert _rows(df) == _rows(want), how
