"""Arrow types as Spark's Arrow reader requires them (exact match, no implicit casts).

Types Spark lacks map to the nearest one that keeps the value (docs/spark.md); batches
are cast to :func:`spark_target_schema`, Spark's own rendering of its schema (list items
named ``element``), never to a guess.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import SchemaMismatchError, UnsupportedFeatureError
from lance_sql.tables.substrait_schema import holds

_SIMPLE = {
    pa.uint8(): pa.int16(),
    pa.uint16(): pa.int32(),
    pa.uint32(): pa.int64(),
    pa.uint64(): pa.decimal128(20, 0),
    pa.float16(): pa.float32(),
    pa.date64(): pa.date32(),
}
_PASS = (
    pa.types.is_boolean,
    pa.types.is_signed_integer,
    pa.types.is_float32,
    pa.types.is_float64,
    pa.types.is_decimal128,
    pa.types.is_string,
    pa.types.is_binary,
    pa.types.is_date32,
    pa.types.is_null,
)


def spark_arrow_type(t: pa.DataType, column: str = "?", *, nested: bool = False) -> pa.DataType:
    """The Arrow type Spark accepts for values of type ``t`` (``column`` names errors).

    Times become int64 microseconds; nested, only ``time64[us]`` can (its raw value is).
    """
    if t in _SIMPLE:
        return _SIMPLE[t]
    if any(check(t) for check in _PASS):
        return t
    if pa.types.is_dictionary(t):
        return spark_arrow_type(t.value_type, column, nested=nested)
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_fixed_size_binary(t):
        return pa.binary()
    if pa.types.is_decimal256(t) and t.precision <= 38:
        return pa.decimal128(t.precision, t.scale)
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", "UTC") if t.tz else pa.timestamp("us")
    if pa.types.is_time(t) and (not nested or t.unit == "us"):
        return pa.int64()
    if pa.types.is_duration(t):
        return pa.duration("us")
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        item = _spark_field(t.value_field, f"{column}[]", nested=True)
        return pa.list_(item)
    if pa.types.is_struct(t):
        return pa.struct(
            [
                _spark_field(t.field(i), f"{column}.{t.field(i).name}", nested=True)
                for i in range(t.num_fields)
            ]
        )
    if pa.types.is_map(t):
        return pa.map_(
            spark_arrow_type(t.key_type, f"{column}.key", nested=True),
            pa.field("value", spark_arrow_type(t.item_type, f"{column}.value", nested=True), True),
        )
    raise UnsupportedFeatureError(
        f"column {column!r} has type {t}, which Spark cannot represent (supported: integers, "
        "floats, decimals up to precision 38, bool, strings, binaries, dates, timestamps, "
        "times (nested: time64[us] only), durations, lists, structs, maps); read it with "
        "lance_sql instead"
    )


def _spark_field(f: pa.Field, column: str, *, nested: bool = False) -> pa.Field:
    return pa.field(f.name, spark_arrow_type(f.type, column, nested=nested), f.nullable)


def spark_arrow_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every field mapped by :func:`spark_arrow_type` (metadata dropped)."""
    return pa.schema([_spark_field(f, f.name) for f in schema])


def spark_struct(schema: pa.Schema) -> Any:
    """The Spark ``StructType`` of a namespace schema (pyspark imported lazily)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(spark_arrow_schema(schema))


def spark_target_schema(struct: Any) -> pa.Schema:
    """The exact Arrow schema Spark checks batches against for the Spark schema ``struct``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(struct, timezone="UTC")


def _truncates(t: pa.DataType) -> bool:
    return (pa.types.is_timestamp(t) or pa.types.is_duration(t)) and t.unit == "ns"


def _time_to_us(arr: pa.Array) -> pa.Array:
    """A time32/time64 array as int64 microseconds since midnight."""
    ints = arr.cast(pa.int64() if arr.type.bit_width == 64 else pa.int32()).cast(pa.int64())
    unit = arr.type.unit
    if unit == "us":
        return ints
    if unit == "ns":
        return pc.floor(pc.divide(ints.cast(pa.float64()), 1000)).cast(pa.int64())
    return pc.multiply(ints, 1_000_000 if unit == "s" else 1000)


def cast_array(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """``arr`` as ``target`` (a Spark Arrow type); only sub-microsecond digits are dropped."""
    if arr.type.equals(target, check_metadata=False):
        return arr
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_time(arr.type):
        return _time_to_us(arr).cast(target)
    # nanosecond timestamps/durations: truncation to microseconds is intended (Spark's
    # resolution); every other mapping widens, so a safe cast is used for them.
    return arr.cast(target, safe=not holds(arr.type, _truncates))


def to_spark_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` cast column by column (by name) to ``schema``; a value the target cannot
    hold raises :class:`SchemaMismatchError` naming the column."""
    if batch.schema.equals(schema):
        return batch
    cols = []
    for f in schema:
        col = batch.column(f.name)
        try:
            cols.append(cast_array(col, f.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaMismatchError(
                f"column {f.name!r} of type {col.type} cannot be read as {f.type}: {e}"
            ) from e
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def map_arrow(
    df: Any, run: Callable[[pa.RecordBatch], Iterable[pa.RecordBatch]], schema: pa.Schema
) -> Any:
    """``df.mapInArrow`` to a DataFrame of ``schema``: ``run`` maps each input batch to output
    batches, cast here as Spark requires them."""
    struct = spark_struct(schema)
    target = spark_target_schema(struct)

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for b in batches:
            for rb in run(b):
                yield to_spark_batch(rb, target)

    return df.mapInArrow(task, struct)


def map_tasks(
    spark: Any,
    payloads: Sequence[Any],
    run: Callable[[Any], Iterable[pa.RecordBatch]],
    schema: pa.Schema,
) -> Any:
    """A DataFrame of ``schema``: one Spark task per (picklable) payload, without a shuffle;
    ``run(payload)`` yields the task's batches."""
    n = len(payloads)

    def task(ids: pa.RecordBatch) -> Iterator[pa.RecordBatch]:
        for i in ids.column(0).to_pylist():
            yield from run(payloads[i])

    return map_arrow(spark.range(0, n, 1, n), task, schema)
