"""Lance schema (flat ``lance.file.Field`` list, by ``parent_id``) to ``pyarrow.Schema``.

Every Arrow field carries its Lance id in metadata ``lance:field_id``, so later layers
map columns to data files without names. Apart from that key the result equals
``lance.dataset(uri).schema`` (extension types rebuilt as pyarrow's IPC reader does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from lance_sql.errors import FormatError

FIELD_ID_KEY = b"lance:field_id"
EXTENSION_NAME_KEY = b"ARROW:extension:name"
EXTENSION_META_KEY = b"ARROW:extension:metadata"
BFLOAT16 = "lance.bfloat16"
# Lance stores JSON as binary (JSONB) tagged "lance.json"; pylance reads it as arrow.json
JSON = "json"
LANCE_JSON = b"lance.json"
MAX_DEPTH = 128

_INTEGERS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")
#: (Lance logical type, lance-namespace JsonArrowDataType name, Arrow type) of the
#: types named without parameters; one table for both vocabularies (the JSON side
#: is :mod:`lance_sql.spec.arrow_json`). None: the vocabulary has no such name.
SIMPLE_TYPES: tuple[tuple[str | None, str, pa.DataType], ...] = (
    ("null", "null", pa.null()),
    ("bool", "bool", pa.bool_()),
    *((name, name, getattr(pa, name)()) for name in _INTEGERS),
    ("halffloat", "float16", pa.float16()),
    ("float", "float32", pa.float32()),
    ("double", "float64", pa.float64()),
    ("string", "utf8", pa.string()),
    ("large_string", "large_utf8", pa.large_string()),
    (None, "utf8_view", pa.string_view()),
    ("binary", "binary", pa.binary()),
    ("large_binary", "large_binary", pa.large_binary()),
    (None, "binary_view", pa.binary_view()),
    ("date32:day", "date32", pa.date32()),
    ("date64:ms", "date64", pa.date64()),
)
_PRIMITIVES = {lance: t for lance, _, t in SIMPLE_TYPES if lance is not None}
_UNITS = ("s", "ms", "us", "ns")
_DICT_KEYS = _INTEGERS


class LogicalTypeError(ValueError):
    """A logical type string this module cannot map (turned into FormatError by callers)."""


@dataclass(frozen=True)
class LanceField:
    """The parts of a ``lance.file.Field`` the conversion needs (decoupled from protobuf)."""

    id: int
    parent_id: int
    name: str
    logical_type: str
    nullable: bool
    metadata: Mapping[str, bytes]
    extension_name: str = ""


def leaf_type(logical_type: str) -> pa.DataType:
    """The Arrow type of a logical type that needs no child fields.

    Raises LogicalTypeError for nested (``struct``, ``list``...) or unknown types.
    """
    found = _PRIMITIVES.get(logical_type)
    if found is not None:
        return found
    head, _, rest = logical_type.partition(":")
    try:
        if head == "decimal":
            width, precision, scale = rest.split(":")
            if width == "128":
                return pa.decimal128(int(precision), int(scale))
            if width == "256":
                return pa.decimal256(int(precision), int(scale))
        elif head in ("time", "time32", "time64") and rest in _UNITS:
            if rest in ("s", "ms") and head != "time64":
                return pa.time32(rest)
            if rest in ("us", "ns") and head != "time32":
                return pa.time64(rest)
        elif head == "timestamp":
            unit, _, tz = rest.partition(":")
            if unit in _UNITS:
                return pa.timestamp(unit, tz=None if tz in ("", "-") else tz)
        elif head == "duration" and rest in _UNITS:
            return pa.duration(rest)
        elif head == "fixed_size_binary":
            return pa.binary(_positive(rest))
        elif head == "fixed_size_list":
            inner, _, size = rest.rpartition(":")
            if inner == BFLOAT16:
                item = pa.field(
                    "item",
                    pa.binary(2),
                    metadata={EXTENSION_NAME_KEY: BFLOAT16.encode(), EXTENSION_META_KEY: b""},
                )
            else:
                item = pa.field("item", leaf_type(inner))
            return pa.list_(item, _positive(size))
        elif head == "dict":
            value, key, ordered = _split_dict(rest)
            return pa.dictionary(leaf_type(key), leaf_type(value), ordered=ordered)
    except (ValueError, TypeError, pa.ArrowException) as exc:
        if isinstance(exc, LogicalTypeError):
            raise
        raise LogicalTypeError(f"invalid logical type {logical_type!r}: {exc}") from exc
    raise LogicalTypeError(f"unknown logical type {logical_type!r}")


def _positive(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise LogicalTypeError(f"size {text!r} is not a number")
    value = int(text)
    if value <= 0 or value >= 1 << 31:
        raise LogicalTypeError(f"size {text} out of range")
    return value


def _split_dict(rest: str) -> tuple[str, str, bool]:
    """``{value}:{key}:{ordered}`` where the value type may itself contain colons."""
    value_and_key, _, ordered = rest.rpartition(":")
    value, _, key = value_and_key.rpartition(":")
    if key not in _DICT_KEYS or ordered not in ("true", "false") or not value:
        raise LogicalTypeError(f"invalid dictionary type 'dict:{rest}'")
    return value, key, ordered == "true"


def _arrow_metadata(field: LanceField) -> dict[bytes, bytes]:
    meta = {k.encode(): bytes(v) for k, v in field.metadata.items()}
    if field.extension_name and EXTENSION_NAME_KEY not in meta:
        meta[EXTENSION_NAME_KEY] = field.extension_name.encode()
    if field.logical_type == JSON and meta.get(EXTENSION_NAME_KEY) == LANCE_JSON:
        # the storage tag, not an Arrow type: the Arrow type is arrow.json
        del meta[EXTENSION_NAME_KEY]
        meta.pop(EXTENSION_META_KEY, None)
    meta[FIELD_ID_KEY] = str(field.id).encode()
    return meta


def to_arrow_schema(
    fields: Sequence[LanceField], schema_metadata: Mapping[str, bytes] | None = None
) -> pa.Schema:
    """Build the Arrow schema of a flat Lance field list.

    Raises LogicalTypeError naming the field for unknown types, orphans, cycles, duplicate
    ids or impossible nesting (callers turn it into FormatError naming the file).
    """
    children: dict[int, list[LanceField]] = {}
    ids: set[int] = set()
    for field in fields:
        if field.id < 0:
            raise LogicalTypeError(f"field {field.name!r} has invalid id {field.id}")
        if field.id in ids:
            raise LogicalTypeError(f"duplicate field id {field.id} ({field.name!r})")
        ids.add(field.id)
        children.setdefault(field.parent_id, []).append(field)
    for parent_id, kids in children.items():
        if parent_id != -1 and parent_id not in ids:
            raise LogicalTypeError(
                f"field {kids[0].name!r} (id {kids[0].id}) has unknown parent id {parent_id}"
            )
    built = 0

    def build(field: LanceField, depth: int) -> pa.Field:
        nonlocal built
        built += 1
        if depth > MAX_DEPTH:
            raise LogicalTypeError(f"field {field.name!r} is nested more than {MAX_DEPTH} deep")
        kids = children.get(field.id, [])
        try:
            arrow_type = _field_type(field, [build(k, depth + 1) for k in kids])
        except LogicalTypeError as exc:
            if str(exc).startswith("field "):
                raise
            raise LogicalTypeError(f"field {field.name!r} (id {field.id}): {exc}") from None
        try:
            return pa.field(field.name, arrow_type, field.nullable, metadata=_arrow_metadata(field))
        except (ValueError, TypeError, pa.ArrowException) as exc:  # e.g. a non-nullable null
            raise LogicalTypeError(f"field {field.name!r} (id {field.id}): {exc}") from None

    top = [build(f, 0) for f in children.get(-1, [])]
    if built != len(fields):
        raise LogicalTypeError("some fields are not reachable from a top-level field (cycle)")
    meta = {k.encode(): bytes(v) for k, v in (schema_metadata or {}).items()}
    schema = pa.schema(top, metadata=meta or None)
    if _any_field(top, lambda meta: EXTENSION_NAME_KEY in meta):
        schema = _rebuild_extensions(schema)
    return schema


def _field_type(field: LanceField, kids: list[pa.Field]) -> pa.DataType:
    logical = field.logical_type
    if logical == "struct":
        return pa.struct(kids)
    if logical in ("list", "list.struct", "large_list", "large_list.struct"):
        if len(kids) != 1:
            raise LogicalTypeError(f"{logical} needs exactly one child, found {len(kids)}")
        if logical.endswith(".struct") and not pa.types.is_struct(kids[0].type):
            raise LogicalTypeError(f"{logical} child is not a struct")
        make = pa.large_list if logical.startswith("large_") else pa.list_
        return make(kids[0])
    if logical == "map":
        if len(kids) != 1 or not pa.types.is_struct(kids[0].type) or kids[0].type.num_fields != 2:
            raise LogicalTypeError("map needs one struct child with two fields")
        entries = kids[0].type
        key, item = entries.field(0), entries.field(1)
        if key.nullable:
            raise LogicalTypeError("map key must not be nullable")
        return pa.map_(key, item, keys_sorted=False)
    if logical.startswith("fixed_size_list:") and kids:
        # a list of structs (or other nested items): the item is the only child field
        if len(kids) != 1:
            raise LogicalTypeError(f"{logical} needs exactly one child, found {len(kids)}")
        return pa.list_(kids[0], _positive(logical.rpartition(":")[2]))
    if kids:
        raise LogicalTypeError(f"type {logical!r} cannot have child fields")
    if logical == JSON:
        return pa.json_(pa.string())
    return leaf_type(logical)


def _any_field(fields: Iterable[pa.Field], test: Callable[[Mapping[bytes, bytes]], bool]) -> bool:
    """Whether ``test`` holds for the metadata of a field of ``fields`` or nested in one."""
    return any(test(f.metadata or {}) or _any_field(_child_fields(f.type), test) for f in fields)


def _child_fields(arrow_type: pa.DataType) -> list[pa.Field]:
    if isinstance(arrow_type, pa.BaseExtensionType):
        arrow_type = arrow_type.storage_type
    if pa.types.is_struct(arrow_type):
        return [arrow_type.field(i) for i in range(arrow_type.num_fields)]
    if pa.types.is_map(arrow_type):
        return [arrow_type.key_field, arrow_type.item_field]
    if isinstance(arrow_type, (pa.ListType, pa.LargeListType, pa.FixedSizeListType)):
        return [arrow_type.value_field]
    return []


def map_child_fields(t: pa.DataType, fn: Callable[[pa.Field], pa.Field]) -> pa.DataType:
    """``t`` with each direct child field replaced by ``fn(child)``, in order (a map's key,
    then its item, the key kept non-nullable as Arrow requires); ``t`` itself when it has
    no child fields."""
    if pa.types.is_struct(t):
        return pa.struct([fn(t.field(i)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        key = fn(t.key_field).with_nullable(False)
        return pa.map_(key, fn(t.item_field), keys_sorted=t.keys_sorted)
    if pa.types.is_fixed_size_list(t):
        return pa.list_(fn(t.value_field), t.list_size)
    for is_kind, make in _LISTS:
        if is_kind(t):
            return make(fn(t.value_field))
    return t


_LISTS = (
    (pa.types.is_list, pa.list_),
    (pa.types.is_large_list, pa.large_list),
    (pa.types.is_list_view, pa.list_view),
    (pa.types.is_large_list_view, pa.large_list_view),
)


def _rebuild_extensions(schema: pa.Schema) -> pa.Schema:
    """Let pyarrow's IPC reader turn extension metadata into registered extension types
    (an unknown name keeps the storage type and the metadata, as a Lance reader does)."""
    if _any_field(schema, lambda meta: meta.get(EXTENSION_NAME_KEY, b"").startswith(b"lance.")):
        from lance_sql.format.extension_types import register_lance_extension_types

        register_lance_extension_types()
    try:
        return pa.ipc.read_schema(pa.py_buffer(schema.serialize()))
    except Exception as exc:  # extension deserializers are arbitrary Python code
        raise LogicalTypeError(f"cannot rebuild extension types: {exc}") from exc


def as_format_error(exc: LogicalTypeError, path: str) -> FormatError:
    """The FormatError reported to users for a schema that cannot be converted."""
    return FormatError(f"invalid schema: {exc}", path=path)
