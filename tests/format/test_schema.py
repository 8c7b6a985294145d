"""Logical type strings to Arrow types, including spellings pylance does not write today."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lance_sql.format.schema import (
    FIELD_ID_KEY,
    LanceField,
    LogicalTypeError,
    leaf_type,
    to_arrow_schema,
)


@pytest.mark.parametrize(
    ("logical", "expected"),
    [
        ("null", pa.null()),
        ("bool", pa.bool_()),
        ("uint16", pa.uint16()),
        ("halffloat", pa.float16()),
        ("large_binary", pa.large_binary()),
        ("decimal:128:38:10", pa.decimal128(38, 10)),
        ("decimal:256:76:0", pa.decimal256(76, 0)),
        ("date32:day", pa.date32()),
        ("date64:ms", pa.date64()),
        ("time:s", pa.time32("s")),
        ("time:ms", pa.time32("ms")),
        ("time:us", pa.time64("us")),
        ("time:ns", pa.time64("ns")),
        ("time32:ms", pa.time32("ms")),
        ("time64:ns", pa.time64("ns")),
        ("timestamp:us:-", pa.timestamp("us")),
        ("timestamp:ns", pa.timestamp("ns")),
        ("timestamp:s:Europe/Paris", pa.timestamp("s", "Europe/Paris")),
        ("timestamp:ms:+01:00", pa.timestamp("ms", "+01:00")),
        ("duration:us", pa.duration("us")),
        ("fixed_size_binary:16", pa.binary(16)),
        ("fixed_size_list:float:128", pa.list_(pa.float32(), 128)),
        ("fixed_size_list:decimal:128:10:2:3", pa.list_(pa.decimal128(10, 2), 3)),
        ("dict:string:int16:false", pa.dictionary(pa.int16(), pa.string())),
        ("dict:timestamp:us:UTC:int32:false", pa.dictionary(pa.int32(), pa.timestamp("us", "UTC"))),
    ],
)
def test_leaf_types(logical: str, expected: pa.DataType) -> None:
    assert leaf_type(logical) == expected


@pytest.mark.parametrize(
    "logical",
    [
        "",
        "int128",
        "decimal:64:10:2",
        "decimal:128:x:2",
        "time32:us",
        "time64:s",
        "time:h",
        "timestamp:h:-",
        "fixed_size_binary:0",
        "fixed_size_binary:-3",
        "fixed_size_binary:\u00b2",
        "fixed_size_list:float:0",
        "fixed_size_list:nope:4",
        "dict:string:float:false",
        "dict:string:int16",
        "struct",
        "list",
    ],
)
def test_invalid_leaf_types(logical: str) -> None:
    with pytest.raises(LogicalTypeError):
        leaf_type(logical)


def lf(
    id: int, parent: int, name: str, logical: str, nullable: bool = True, **meta: bytes
) -> LanceField:
    return LanceField(id, parent, name, logical, nullable, meta)


def test_nested_fields_by_parent_id() -> None:
    fields = [
        lf(0, -1, "id", "int64", False),
        lf(1, -1, "user", "struct"),
        lf(2, 1, "name", "string"),
        lf(3, 1, "emails", "list"),
        lf(4, 3, "item", "string"),
        lf(5, -1, "later", "int32", note=b"x"),
    ]
    schema = to_arrow_schema(fields, {"k": b"v"})
    assert schema.names == ["id", "user", "later"]
    assert schema.field("id").nullable is False
    user = schema.field("user").type
    assert user.field(0).name == "name"
    assert user.field(1).type.value_type == pa.string()
    assert user.field(1).type.value_field.metadata[FIELD_ID_KEY] == b"4"
    assert schema.field("later").metadata == {b"note": b"x", FIELD_ID_KEY: b"5"}
    assert schema.metadata == {b"k": b"v"}


def test_deprecated_extension_name_becomes_metadata() -> None:
    field = LanceField(0, -1, "j", "large_binary", True, {}, extension_name="my.ext")
    schema = to_arrow_schema([field])
    assert schema.field("j").metadata[b"ARROW:extension:name"] == b"my.ext"
    assert schema.field("j").type == pa.large_binary()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ([lf(0, -1, "a", "int64"), lf(0, -1, "b", "int64")], "duplicate field id 0"),
        ([lf(0, -1, "a", "int64"), lf(1, 7, "orphan", "int64")], "'orphan'.*unknown parent id 7"),
        ([lf(0, 1, "x", "struct"), lf(1, 0, "y", "struct")], "not reachable"),
        ([lf(0, -1, "weird", "int128")], "field 'weird'.*unknown logical type"),
        ([lf(0, -1, "l", "list")], "field 'l'.*exactly one child"),
        ([lf(0, -1, "i", "int32"), lf(1, 0, "c", "int32")], "field 'i'.*cannot have child"),
        ([lf(0, -1, "m", "map"), lf(1, 0, "k", "int32")], "field 'm'.*map"),
        ([lf(0, -1, "ls", "list.struct"), lf(1, 0, "item", "int32")], "not a struct"),
        ([lf(0, -1, "n", "null", False)], "field 'n'.*null"),
        ([lf(-1, -1, "self", "struct"), lf(0, -1, "b", "int8")], "'self' has invalid id -1"),
        (
            [lf(0, -1, "f", "fixed_size_list:struct:x"), lf(1, 0, "item", "struct")],
            "field 'f'.*not a number",
        ),
        (
            [
                lf(0, -1, "f", "fixed_size_list:struct:2"),
                lf(1, 0, "a", "int8"),
                lf(2, 0, "b", "int8"),
            ],
            "exactly one child",
        ),
    ],
)
def test_invalid_schemas_name_the_field(fields: list[LanceField], message: str) -> None:
    with pytest.raises(LogicalTypeError, match=message):
        to_arrow_schema(fields)


def test_absurd_nesting_is_refused() -> None:
    fields = [lf(0, -1, "s0", "struct")]
    fields += [lf(i, i - 1, f"s{i}", "struct") for i in range(1, 300)]
    with pytest.raises(LogicalTypeError, match="nested more than"):
        to_arrow_schema(fields)
