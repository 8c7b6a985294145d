"""evaluate_expression / apply_partition_field: strict checks and result types."""

from __future__ import annotations

import datetime
import threading

import pyarrow as pa
import pytest

import lance_sql  # noqa: F401  registers DataFusion as the SQL engine (udfs.sql_engine)
import udfs

INTS = pa.array([1, 2, 3, -5, None], pa.int64())


def test_spec_derived_expressions_evaluate_like_transforms() -> None:
    ts = pa.array(
        [datetime.datetime(2025, 3, 9, 7, 30, tzinfo=datetime.timezone.utc), None],
        pa.timestamp("us", "America/New_York"),
    )
    for part in ("year", "month", "day", "hour"):
        got = udfs.evaluate_expression(f"date_part('{part}', col0)", [ts], pa.int32())
        assert got.equals(udfs.apply_transform({"type": part}, [ts]))
    got = udfs.evaluate_expression("abs(murmur3(col0)) % 16", [INTS], pa.int32())
    assert got.to_pylist() == [4, 12, 13, 14, None]
    multi = udfs.evaluate_expression(
        "abs(murmur3_multi(col0, col1)) % 8", [pa.array(["US"]), pa.array([1], pa.int32())]
    )
    assert multi.to_pylist() == [abs(-1158136343) % 8]
    strings = pa.array(["héllo", None])
    assert udfs.evaluate_expression("left(col0, 2)", [strings], pa.string()).to_pylist() == [
        "hé",
        None,
    ]


def test_murmur3_of_any_type_and_nested_calls_in_expressions() -> None:
    dates = pa.array([datetime.date(2025, 12, 10)])
    assert udfs.evaluate_expression("murmur3(col0)", [dates], pa.int32()).to_pylist() == [591416496]
    nested = udfs.evaluate_expression("murmur3(lower(col0)) + murmur3(col1)", [
        pa.array(["US"]), pa.array([1], pa.uint64())
    ])  # fmt: skip
    assert nested.to_pylist() == [udfs.murmur3(["us"])[0].as_py() + 1392991556]


def test_chunked_columns_give_a_chunked_result() -> None:
    chunked = pa.chunked_array([[1, 2], [3]], pa.int64())
    got = udfs.evaluate_expression("col0 * 2", [chunked], pa.int64())
    assert isinstance(got, pa.ChunkedArray) and got.to_pylist() == [2, 4, 6]
    plain = udfs.evaluate_expression("col0 * 2", [chunked.combine_chunks()], pa.int64())
    assert isinstance(plain, pa.Array)


@pytest.mark.parametrize(
    ("expression", "part"),
    [
        ("random()", "random"),
        ("col0 + random()", "random"),
        ("now()", "now"),
        ("current_date", "current_date"),
        ("current_timestamp", "now"),
        ("uuid()", "uuid"),
        ("CASE WHEN col0 > 1 THEN random() END", "random"),
        ("(SELECT 1)", "ScalarSubquery"),
        ("col0 IN (SELECT 1)", "InSubquery"),
        ("EXISTS (SELECT 1)", "Exists"),
        ("sum(col0)", "AggregateFunction"),
        ("row_number() OVER ()", "WindowFunction"),
        ("$1", "Placeholder"),
    ],
)
def test_non_deterministic_and_non_scalar_parts_are_refused(expression: str, part: str) -> None:
    with pytest.raises(udfs.ExpressionError) as info:
        udfs.evaluate_expression(expression, [INTS])
    assert info.value.expression == expression
    assert info.value.part == part
    assert repr(expression) in str(info.value) and part in str(info.value)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("nosuch(col0)", "nosuch"),
        ("col7 + 1", "col7"),
        ("1; DROP TABLE x", "end of expression"),
        ("col0) FROM t UNION SELECT (1", "end of expression"),
        ("col0 -- comment", ""),
        ("", "non-empty"),
    ],
)
def test_invalid_expressions_name_the_expression(expression: str, message: str) -> None:
    if expression == "col0 -- comment":  # a comment is harmless: still one expression
        assert udfs.evaluate_expression(expression, [INTS]).equals(INTS)
        return
    with pytest.raises(udfs.ExpressionError, match=message) as info:
        udfs.evaluate_expression(expression, [INTS])
    assert info.value.expression == expression


def test_murmur3_of_unsupported_type_in_expression() -> None:
    with pytest.raises(udfs.ExpressionError, match=r"murmur3: unsupported Arrow type list"):
        udfs.evaluate_expression("murmur3(col0)", [pa.array([[1]])])


def test_result_type_equal_or_lossless_cast() -> None:
    # int64 result declared int32: every value fits, so it is cast
    got = udfs.evaluate_expression("col0 % 4", [INTS], pa.int32())
    assert got.type == pa.int32() and got.to_pylist() == [1, 2, 3, -1, None]
    got = udfs.evaluate_expression("col0", [pa.array(["a"])], pa.large_string())
    assert got.type == pa.large_string()
    nulls = udfs.evaluate_expression("NULL", [INTS], pa.date32())
    assert nulls.type == pa.date32() and nulls.null_count == len(INTS)


@pytest.mark.parametrize(
    ("expression", "columns", "declared", "message"),
    [
        ("col0 + 0.5", [INTS], pa.int64(), "returns double, but the declared result_type is int64"),
        ("col0 * 1000000000000", [INTS], pa.int32(), "do not fit"),
        ("CAST(col0 AS VARCHAR)", [INTS], pa.int64(), "declared result_type is int64"),
        ("col0 / 3.0", [INTS], pa.float32(), "would change values"),
        ("col0", [pa.array([1.5])], pa.decimal128(5, 0), "declared result_type is decimal128"),
    ],
)
def test_result_type_mismatch(
    expression: str, columns: list, declared: pa.DataType, message: str
) -> None:
    with pytest.raises(udfs.ExpressionError, match=message) as info:
        udfs.evaluate_expression(expression, columns, declared)
    assert info.value.part == "result_type"
    assert repr(expression) in str(info.value)


def test_apply_partition_field() -> None:
    got = udfs.apply_partition_field(
        columns=[INTS], transform={"type": "bucket", "num_buckets": 16}, result_type=pa.int32()
    )
    assert got.to_pylist() == [4, 12, 13, 14, None]
    same = udfs.apply_partition_field(
        columns=[INTS], expression="abs(murmur3(col0)) % 16", result_type=pa.int32()
    )
    assert same.equals(got)
    widened = udfs.apply_partition_field(
        columns=[pa.array([1, 2], pa.int32())],
        transform={"type": "identity"},
        result_type=pa.int64(),
    )
    assert widened.type == pa.int64()


def test_apply_partition_field_errors() -> None:
    with pytest.raises(ValueError, match="exactly one of transform or expression"):
        udfs.apply_partition_field(columns=[INTS], result_type=pa.int32())
    with pytest.raises(ValueError, match="exactly one of transform or expression"):
        udfs.apply_partition_field(
            columns=[INTS], transform={"type": "identity"}, expression="col0", result_type=None
        )
    with pytest.raises(udfs.ExpressionError, match=r"date_part\('year', col0\)\": returns int32"):
        udfs.apply_partition_field(
            columns=[pa.array([datetime.date(2020, 1, 1)])],
            transform={"type": "year"},
            result_type=pa.string(),
        )


def test_evaluate_expression_from_several_threads() -> None:
    errors: list[BaseException] = []
    results: list[list] = []

    def work(k: int) -> None:
        try:
            for _ in range(5):
                col = pa.array([k, k + 1], pa.int64() if k % 2 else pa.int32())
                results.append(
                    udfs.evaluate_expression("murmur3(col0)", [col], pa.int32()).to_pylist()
                )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 20
