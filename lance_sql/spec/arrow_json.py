"""Arrow types and schemas as lance-namespace's JsonArrowDataType / JsonArrowSchema JSON.

Type names and ``length`` encodings are the ones pylance's Rust converter writes, so
pylance reads these documents and vice versa; the extra ``unit`` / ``timezone`` /
``keys_sorted`` keys are explained in ``docs/format.md``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from lance_sql.errors import SpecError
from lance_sql.format.schema import SIMPLE_TYPES, map_child_fields

FIELD_ID_KEY = "lance:field_id"
_DESCRIPTOR_KEY = b"lance_sql:blob_descriptor"  # see lance_sql.tables.blob_columns

# Names shared by both directions; the rest need parameters.
_SIMPLE = {name: t for _, name, t in SIMPLE_TYPES}
_SIMPLE_NAMES = {v: k for k, v in _SIMPLE.items()}
# Spellings other writers use for the same types (read-only aliases).
_ALIASES = {"boolean": "bool", "string": "utf8", "large_string": "large_utf8"}
_DEFAULT_UNIT = {"timestamp": "us", "time32": "ms", "time64": "us", "duration": "us"}
_DECIMALS = {
    "decimal32": pa.decimal32,
    "decimal64": pa.decimal64,
    "decimal128": pa.decimal128,
    "decimal256": pa.decimal256,
}
_NESTED = (
    ("fixed_size_list", pa.types.is_fixed_size_list),
    ("large_list", pa.types.is_large_list),
    ("map", pa.types.is_map),
    ("list", pa.types.is_list),
    ("struct", pa.types.is_struct),
)


def data_type_to_json(data_type: pa.DataType) -> dict[str, Any]:
    """The JsonArrowDataType object for ``data_type`` (inverse of :func:`data_type_from_json`)."""
    name = _SIMPLE_NAMES.get(data_type)
    if name is not None:
        return {"type": name}
    if pa.types.is_timestamp(data_type):
        out: dict[str, Any] = {"type": "timestamp", "unit": data_type.unit}
        if data_type.tz is not None:
            out["timezone"] = data_type.tz
        return out
    for name in ("time32", "time64", "duration"):
        if getattr(pa.types, f"is_{name}")(data_type):
            return {"type": name, "unit": data_type.unit}
    if pa.types.is_interval(data_type):
        return {"type": "interval", "unit": "month_day_nano"}
    if pa.types.is_decimal(data_type):
        return {
            "type": f"decimal{data_type.bit_width}",
            "length": data_type.precision * 1000 + data_type.scale,
        }
    if pa.types.is_fixed_size_binary(data_type):
        return {"type": "fixed_size_binary", "length": data_type.byte_width}
    for name, is_kind in _NESTED:
        if is_kind(data_type):
            out = {"type": name, "fields": [field_to_json(c) for c in _child_fields(data_type)]}
            if name == "fixed_size_list":
                out["length"] = data_type.list_size
            if name == "map" and data_type.keys_sorted:
                out["keys_sorted"] = True
            return out
    if pa.types.is_dictionary(data_type):
        # Lance stores dictionaries by their value type; so does the JSON format.
        return data_type_to_json(data_type.value_type)
    raise SpecError(f"Arrow type {data_type} has no JsonArrowDataType form", key="type")


def data_type_from_json(obj: Any, *, key: str = "type") -> pa.DataType:
    """Parse a JsonArrowDataType object; errors name ``key`` (the JSON path of ``obj``)."""
    if not isinstance(obj, Mapping):
        raise SpecError(f"expected a JsonArrowDataType object, got {obj!r}", key=key)
    name = obj.get("type")
    if not isinstance(name, str):
        raise SpecError("missing or non-string 'type'", key=f"{key}.type")
    name = _ALIASES.get(name.lower(), name.lower())
    simple = _SIMPLE.get(name)
    if simple is not None:
        return simple
    if name in _DEFAULT_UNIT:
        return _unit_type(name, obj, key)
    if name == "interval":
        return pa.month_day_nano_interval()
    if name in _DECIMALS:
        length = _int(obj, "length", key)
        precision, scale = divmod(length, 1000)
        try:
            return _DECIMALS[name](precision, scale)
        except (ValueError, TypeError) as exc:
            raise SpecError(f"invalid {name} length {length}: {exc}", key=f"{key}.length") from exc
    if name == "fixed_size_binary":
        return pa.binary(_int(obj, "length", key))
    if name in ("list", "large_list", "fixed_size_list", "map", "struct"):
        children = _children(obj, key)
        if name == "struct":
            return pa.struct(children)
        if len(children) != 1:
            raise SpecError(f"{name} needs exactly one child field", key=f"{key}.fields")
        child = children[0]
        if name == "list":
            return pa.list_(child)
        if name == "large_list":
            return pa.large_list(child)
        if name == "fixed_size_list":
            return pa.list_(child, _int(obj, "length", key))
        entries = child.type
        if not pa.types.is_struct(entries) or entries.num_fields != 2:
            raise SpecError("map entries must be a struct of key and value", key=f"{key}.fields")
        return pa.map_(
            entries.field(0), entries.field(1), keys_sorted=bool(obj.get("keys_sorted", False))
        )
    raise SpecError(f"unknown Arrow type name {obj.get('type')!r}", key=f"{key}.type")


def _unit_type(name: str, obj: Mapping[str, Any], key: str) -> pa.DataType:
    unit = obj.get("unit", _DEFAULT_UNIT[name])
    try:
        if name == "timestamp":
            return pa.timestamp(unit, tz=obj.get("timezone"))
        return getattr(pa, name)(unit)  # time32, time64, duration
    except (ValueError, TypeError) as exc:
        raise SpecError(f"invalid {name} unit {unit!r}: {exc}", key=f"{key}.unit") from exc


def _int(obj: Mapping[str, Any], name: str, key: str) -> int:
    value = obj.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SpecError(f"expected a non-negative integer, got {value!r}", key=f"{key}.{name}")
    return value


def _children(obj: Mapping[str, Any], key: str) -> list[pa.Field]:
    fields = obj.get("fields")
    if not isinstance(fields, list):
        raise SpecError("nested type needs a 'fields' array", key=f"{key}.fields")
    return [field_from_json(f, key=f"{key}.fields[{i}]") for i, f in enumerate(fields)]


def field_to_json(field: pa.Field) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": field.name,
        "nullable": field.nullable,
        "type": data_type_to_json(field.type),
    }
    if field.metadata:
        out["metadata"] = _text_metadata(field.metadata)
    return out


def _text_metadata(metadata: Mapping[bytes, bytes]) -> dict[str, str]:
    return {k.decode(): v.decode("utf-8", "replace") for k, v in metadata.items()}


def field_from_json(obj: Any, *, key: str) -> pa.Field:
    if not isinstance(obj, Mapping):
        raise SpecError(f"expected a JsonArrowField object, got {obj!r}", key=key)
    name = obj.get("name")
    if not isinstance(name, str):
        raise SpecError("missing or non-string 'name'", key=f"{key}.name")
    nullable = obj.get("nullable", True)
    if not isinstance(nullable, bool):
        raise SpecError(f"'nullable' must be a boolean, got {nullable!r}", key=f"{key}.nullable")
    metadata = obj.get("metadata") or None
    if metadata is not None and not (
        isinstance(metadata, Mapping)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    ):
        raise SpecError("'metadata' must map strings to strings", key=f"{key}.metadata")
    return pa.field(
        name, data_type_from_json(obj.get("type"), key=f"{key}.type"), nullable, metadata
    )


def schema_to_json(schema: pa.Schema) -> dict[str, Any]:
    """The JsonArrowSchema object of ``schema`` (field metadata, incl. field ids, kept)."""
    out: dict[str, Any] = {"fields": [field_to_json(f) for f in schema]}
    if schema.metadata:
        out["metadata"] = _text_metadata(schema.metadata)
    return out


def schema_from_json(obj: Any, *, key: str = "schema") -> pa.Schema:
    """Parse a JsonArrowSchema (a dict or a JSON string); errors name the key path."""
    if isinstance(obj, (str, bytes)):
        obj = loads_limited(obj, key=key)
    if not isinstance(obj, Mapping) or not isinstance(obj.get("fields"), list):
        raise SpecError("expected a JsonArrowSchema object with a 'fields' array", key=key)
    fields = [field_from_json(f, key=f"{key}.fields[{i}]") for i, f in enumerate(obj["fields"])]
    metadata = obj.get("metadata") or None
    if metadata is not None and not isinstance(metadata, Mapping):
        raise SpecError("'metadata' must be an object", key=f"{key}.metadata")
    names = [f.name for f in fields]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise SpecError(f"duplicate column name {name!r}", key=f"{key}.fields[{i}].name")
    return pa.schema(fields, metadata)


MAX_JSON_BYTES = 1 << 20


def loads_limited(text: str | bytes, *, key: str, limit: int = MAX_JSON_BYTES) -> Any:
    """``json.loads`` that refuses documents over ``limit`` bytes before parsing them
    (a hostile or corrupted ``__manifest`` must not exhaust memory)."""
    size = len(text.encode() if isinstance(text, str) else text)
    if size > limit:
        raise SpecError(f"JSON document of {size} bytes exceeds the {limit}-byte limit", key=key)
    try:
        return json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SpecError(f"invalid JSON: {exc}", key=key) from exc
    except RecursionError as exc:  # e.g. 100,000 nested brackets, well under the size limit
        raise SpecError("JSON document is nested too deeply", key=key) from exc


# ---------------------------------------------------------------------------
# Field ids (``lance:field_id``)


def iter_fields(
    fields: Iterator[pa.Field] | list[pa.Field] | pa.Schema, path: str = ""
) -> Iterator[tuple[str, pa.Field]]:
    """Every field depth-first (pre-order, Lance's id order) with its dotted path."""
    for field in fields:
        full = f"{path}.{field.name}" if path else field.name
        yield full, field
        if _DESCRIPTOR_KEY not in (field.metadata or {}):  # a blob descriptor: one leaf
            yield from iter_fields(_child_fields(field.type), full)


_LIST_TYPES = (pa.ListType, pa.LargeListType, pa.FixedSizeListType)


def _child_fields(data_type: pa.DataType) -> list[pa.Field]:
    if pa.types.is_struct(data_type):
        return [data_type.field(i) for i in range(data_type.num_fields)]
    if pa.types.is_map(data_type):
        return [pa.field("entries", pa.struct([data_type.key_field, data_type.item_field]), False)]
    if isinstance(data_type, _LIST_TYPES):
        return [data_type.value_field]
    return []


def field_id_of(field: pa.Field, key: str = FIELD_ID_KEY) -> int | None:
    """The integer stored under metadata ``key`` on ``field`` (a field id), if any."""
    raw = (field.metadata or {}).get(key.encode())
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def assign_field_ids(schema: pa.Schema) -> pa.Schema:
    """Give every field a ``lance:field_id``, depth-first from 0, as Lance does at creation.

    A schema with ids on every field is returned unchanged; ids on some fields only are refused.
    """
    ids = [field_id_of(f) for _, f in iter_fields(schema)]
    if all(i is not None for i in ids):
        return schema
    if any(i is not None for i in ids):
        raise SpecError("some fields carry lance:field_id and some do not", key="schema")
    counter = iter(range(len(ids)))
    return pa.schema([_renumbered(f, lambda _: next(counter)) for f in schema], schema.metadata)


def _renumbered(field: pa.Field, new_id: Callable[[int | None], int | None]) -> pa.Field:
    """``field`` with each field id (nested ones too, depth-first, a map's entries
    included) replaced by ``new_id(old id or None)``; None keeps the metadata as it is."""
    metadata = dict(field.metadata or {})
    fid = new_id(field_id_of(field))
    if fid is not None:
        metadata[FIELD_ID_KEY.encode()] = str(fid).encode()
    if pa.types.is_map(field.type):
        new_id(None)  # the entries struct: Arrow keeps no metadata for it
    t = field.type
    if _child_fields(t):  # the nested types iter_fields walks (list views: not)
        t = map_child_fields(t, lambda c: _renumbered(c, new_id))
    return pa.field(field.name, t, field.nullable, metadata)


def field_ids(schema: pa.Schema, *, key: str = "schema") -> dict[int, str]:
    """Map every field id to its dotted path; refuse missing, malformed or duplicate ids."""
    out: dict[int, str] = {}
    map_paths = {p for p, f in iter_fields(schema) if pa.types.is_map(f.type)}
    for path, field in iter_fields(schema):
        raw = (field.metadata or {}).get(FIELD_ID_KEY.encode())
        if raw is None and path.rsplit(".", 1)[0] in map_paths and field.name == "entries":
            continue  # Arrow cannot attach metadata to a map's entries; Lance's id is implied
        if raw is None:
            raise SpecError(f"field {path!r} has no {FIELD_ID_KEY}", key=key)
        try:
            fid = int(raw)
        except ValueError:
            raise SpecError(
                f"field {path!r} has a non-integer {FIELD_ID_KEY} {raw.decode()!r}", key=key
            ) from None
        if fid < 0:
            raise SpecError(f"field {path!r} has a negative {FIELD_ID_KEY}", key=key)
        if fid in out:
            raise SpecError(f"fields {out[fid]!r} and {path!r} share {FIELD_ID_KEY} {fid}", key=key)
        out[fid] = path
    return out


def dumps(obj: Any) -> str:
    """Compact, deterministic JSON (the form stored in ``__manifest`` metadata)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def shift_ids(schema: pa.Schema, offset: int) -> pa.Schema:
    """``schema`` with every field id (nested ones too) raised by ``offset``."""
    return pa.schema(
        [_renumbered(f, lambda fid: None if fid is None else fid + offset) for f in schema]
    )


def source_fields(schema: pa.Schema) -> dict[int, tuple[str, pa.Field, bool]]:
    """Field id -> (dotted path, field, inside a list or map) for every field."""
    out: dict[int, tuple[str, pa.Field, bool]] = {}
    repeated_paths: set[str] = set()
    for path, field in iter_fields(schema):
        parent = path.rsplit(".", 1)[0] if "." in path else None
        in_repeated = parent in repeated_paths if parent else False
        t = field.type
        if in_repeated or pa.types.is_map(t) or isinstance(t, _LIST_TYPES):
            repeated_paths.add(path)
        fid = field_id_of(field)
        if fid is not None:
            out[fid] = (path, field, in_repeated)
    return out
