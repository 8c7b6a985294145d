"""Partition expressions: evaluate a DataFusion SQL expression over ``col0, col1, ...``.

The spec requires them deterministic and stateless: the check runs on DataFusion's own
parse of one expression (no statement can be smuggled in), allowing a small set of node
kinds and the functions of :data:`ALLOWED_FUNCTIONS`; the declared ``result_type`` is then
enforced. The SQL engine service evaluates them; this module never imports DataFusion.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.types as pat

from udfs.errors import ExpressionError
from udfs.hashing import as_arrow
from udfs.sql_engine import sql_engine
from udfs.transforms import apply_transform, derived_expression

#: Deterministic, stateless DataFusion 55 scalar functions (canonical names and aliases).
ALLOWED_FUNCTIONS = frozenset(
    {
        # lance-sql
        "murmur3",
        "murmur3_multi",
        # math
        "abs", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil",
        "cos", "cosh", "cot", "degrees", "exp", "factorial", "floor", "gcd", "isnan", "iszero",
        "lcm", "ln", "log", "log10", "log2", "nanvl", "pi", "pow", "power", "radians", "round",
        "signum", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
        # strings and binaries
        "ascii", "bit_length", "btrim", "char_length", "character_length", "chr", "concat",
        "concat_ws", "contains", "decode", "encode", "ends_with", "find_in_set", "initcap",
        "instr", "left", "length", "levenshtein", "lower", "lpad", "ltrim", "octet_length",
        "overlay", "position", "regexp_count", "regexp_instr", "regexp_like", "regexp_match",
        "regexp_replace", "repeat", "replace", "reverse", "right", "rpad", "rtrim", "split_part",
        "starts_with", "strpos", "substr", "substr_index", "substring", "substring_index",
        "to_hex", "translate", "trim", "upper", "md5", "sha224", "sha256", "sha384", "sha512",
        "digest",
        # dates and times (never the current time)
        "date_bin", "date_part", "date_trunc", "datepart", "datetrunc", "extract",
        "from_unixtime", "make_date", "to_char", "date_format", "to_date", "to_local_time",
        "to_timestamp", "to_timestamp_micros", "to_timestamp_millis", "to_timestamp_nanos",
        "to_timestamp_seconds", "to_unixtime",
        # conditionals, casts, structs
        "coalesce", "greatest", "least", "ifnull", "nullif", "nvl", "nvl2", "arrow_cast",
        "arrow_typeof", "get_field", "named_struct", "struct", "make_array",
    }
)  # fmt: skip


def _input_table(columns: Sequence[Any]) -> tuple[pa.Table, bool]:
    cols = [as_arrow(c) for c in columns]
    chunked = any(isinstance(c, pa.ChunkedArray) for c in cols)
    if not cols:  # a constant expression still needs one row per ... nothing: no rows
        return pa.table({"__lance_no_columns": pa.array([], pa.null())}), chunked
    # columns of different lengths: pyarrow's ArrowInvalid (a ValueError) names the column
    return pa.table({f"col{i}": c for i, c in enumerate(cols)}), chunked


def _to_array(table: pa.Table, chunked: bool, arrow_type: pa.DataType) -> Any:
    column = table.column(0) if table.num_columns else pa.chunked_array([], arrow_type)
    if chunked:
        return column
    if column.num_chunks == 1:
        return column.chunk(0)
    return pa.concat_arrays(column.chunks) if column.num_chunks else pa.array([], arrow_type)


def evaluate_expression(
    expression: str, columns: Sequence[Any], result_type: pa.DataType | None = None
) -> pa.Array | pa.ChunkedArray:
    """Evaluate a spec partition expression over ``columns`` (named ``col0, col1, ...``).

    Refuses non-deterministic or unknown functions, subqueries, aggregates and window
    functions (:class:`ExpressionError` naming the part at fault). When ``result_type`` is
    given, the result must have it or cast to it losslessly (:func:`enforce_result_type`).
    """
    if not isinstance(expression, str) or not expression.strip():
        raise ExpressionError(str(expression), "an expression must be a non-empty string")
    table, chunked = _input_table(columns)
    out = sql_engine().partition_expression(expression, table, "__lance_result")
    arrow_type = out.schema.field(0).type if out.num_columns else pa.null()
    values = _to_array(out, chunked, arrow_type)
    if result_type is None:
        return values
    return enforce_result_type(values, result_type, expression)


# --- result types ----------------------------------------------------------------


def _family(t: pa.DataType) -> tuple[Any, ...]:
    if pat.is_dictionary(t):
        return _family(t.value_type)
    if pat.is_integer(t):
        return ("integer",)
    if pat.is_floating(t):
        return ("float",)
    if pat.is_decimal(t):
        return ("decimal",)
    if pat.is_string(t) or pat.is_large_string(t) or pat.is_string_view(t):
        return ("string",)
    if pat.is_binary(t) or pat.is_large_binary(t) or pat.is_binary_view(t):
        return ("binary",)
    if pat.is_date(t):
        return ("date",)
    if pat.is_timestamp(t):
        return ("timestamp", t.tz)
    if pat.is_time(t):
        return ("time",)
    if pat.is_duration(t):
        return ("duration",)
    return ("exact", t)


def _same_values(a: Any, b: Any) -> bool:
    if pat.is_dictionary(a.type):
        a = a.cast(a.type.value_type)
    if pat.is_dictionary(b.type):
        b = b.cast(b.type.value_type)
    if a.null_count != b.null_count:
        return False
    if pat.is_floating(a.type):
        x = a.to_numpy(zero_copy_only=False)
        y = b.to_numpy(zero_copy_only=False)
        return bool(np.array_equal(x, y, equal_nan=True))
    return bool(a.equals(b))


def enforce_result_type(values: Any, result_type: pa.DataType, expression: str) -> Any:
    """Return ``values`` as ``result_type``, or raise :class:`ExpressionError`.

    Other types must be of the same kind (timestamps: the same zone) and the cast lossless
    on these values (checked, and cast back equal); a null-type result casts to anything.
    """
    if not isinstance(result_type, pa.DataType):
        raise TypeError(f"result_type must be a pyarrow DataType, got {result_type!r}")
    actual = values.type
    if actual == result_type:
        return values
    mismatch = f"returns {actual}, but the declared result_type is {result_type}"
    if pat.is_null(actual):
        return values.cast(result_type)
    if _family(actual) != _family(result_type):
        raise ExpressionError(expression, mismatch, part="result_type")
    try:
        cast = values.cast(result_type, safe=True)
        lossless = _same_values(cast.cast(actual, safe=False), values)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ExpressionError(
            expression, f"{mismatch}, and its values do not fit it ({exc})", part="result_type"
        ) from exc
    if not lossless:
        raise ExpressionError(
            expression, f"{mismatch}, and the cast would change values", part="result_type"
        )
    return cast


def apply_partition_field(
    *,
    columns: Sequence[Any],
    transform: Mapping[str, Any] | Any | None = None,
    expression: str | None = None,
    result_type: pa.DataType | None,
) -> pa.Array | pa.ChunkedArray:
    """One spec partition field's values: exactly one of ``transform`` / ``expression``.

    The result has exactly ``result_type`` (lossless casts only; None skips the check).
    """
    if (transform is None) == (expression is None):
        raise ValueError("a partition field needs exactly one of transform or expression")
    if expression is not None:
        return evaluate_expression(expression, columns, result_type)
    values = apply_transform(transform, columns)
    if result_type is None:
        return values
    return enforce_result_type(values, result_type, derived_expression(transform, len(columns)))
