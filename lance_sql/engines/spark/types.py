"""Arrow types as Spark's Arrow reader requires them (exact match, no implicit casts).

Spark's Python data source checks every returned ``RecordBatch`` against the
Arrow form of its own schema, so namespace types Spark lacks are mapped to the
nearest Spark type and batches are cast before they leave the reader:

======================  ===============================  ==========================
Arrow (namespace)       Arrow sent to Spark              Spark SQL type
======================  ===============================  ==========================
large_string, view      string                           STRING
large_binary, view      binary                           BINARY
uint8 / uint16 / uint32 int16 / int32 / int64            SMALLINT / INT / BIGINT
uint64                  decimal128(20, 0)                DECIMAL(20,0)
float16                 float32                          FLOAT
timestamp[any, tz]      timestamp[us, UTC]               TIMESTAMP
timestamp[any]          timestamp[us]                    TIMESTAMP_NTZ
date64                  date32                           DATE
time32/time64           int64 (microseconds)             BIGINT
large_list, fixed list  list                             ARRAY
dictionary<k, v>        v (decoded)                      type of v
======================  ===============================  ==========================

Every mapping widens or keeps the value, so casts never lose data (nanosecond
timestamps are truncated to microseconds, Spark's resolution).
"""

from __future__ import annotations

import pyarrow as pa


def spark_arrow_type(t: pa.DataType) -> pa.DataType:
    """The Arrow type Spark accepts for values of type ``t``."""
    if pa.types.is_dictionary(t):
        return spark_arrow_type(t.value_type)
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return pa.binary()
    if pa.types.is_fixed_size_binary(t):
        return pa.binary()
    mapped = {
        pa.uint8(): pa.int16(),
        pa.uint16(): pa.int32(),
        pa.uint32(): pa.int64(),
        pa.uint64(): pa.decimal128(20, 0),
        pa.float16(): pa.float32(),
        pa.date64(): pa.date32(),
    }
    if t in mapped:
        return mapped[t]
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", "UTC") if t.tz else pa.timestamp("us")
    if pa.types.is_time(t):
        return pa.int64()
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        f = t.value_field
        return pa.list_(pa.field(f.name, spark_arrow_type(f.type), f.nullable))
    if pa.types.is_struct(t):
        return pa.struct([spark_field(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(spark_arrow_type(t.key_type), spark_arrow_type(t.item_type))
    return t


def spark_field(f: pa.Field) -> pa.Field:
    return pa.field(f.name, spark_arrow_type(f.type), f.nullable)


def spark_arrow_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every field mapped by :func:`spark_arrow_type` (metadata dropped)."""
    return pa.schema([spark_field(f) for f in schema])


def _cast_array(arr: pa.Array, target: pa.DataType) -> pa.Array:
    if arr.type == target:
        return arr
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_time(arr.type):
        unit = arr.type.unit
        ints = arr.cast(pa.int64() if arr.type.bit_width == 64 else pa.int32()).cast(pa.int64())
        div = {"s": -1_000_000, "ms": -1000, "us": 1, "ns": 1000}[unit]
        return ints.cast(pa.int64()) if div == 1 else _time_to_us(ints, div)
    if pa.types.is_timestamp(arr.type) and arr.type.unit == "ns":
        arr = arr.cast(pa.timestamp("us", arr.type.tz), safe=False)
    return arr.cast(target)


def _time_to_us(ints: pa.Array, div: int) -> pa.Array:
    import pyarrow.compute as pc

    if div < 0:
        return pc.multiply(ints, -div)
    return pc.divide(ints, div)


def to_spark_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` cast column by column to ``schema`` (a :func:`spark_arrow_schema`)."""
    if batch.schema.equals(schema):
        return batch
    cols = [_cast_array(batch.column(f.name), f.type) for f in schema]
    return pa.RecordBatch.from_arrays(cols, schema=schema)


def spark_struct(schema: pa.Schema):  # -> pyspark StructType (pyspark imported lazily)
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(spark_arrow_schema(schema))


__all__ = ["spark_arrow_schema", "spark_arrow_type", "spark_struct", "to_spark_batch"]
