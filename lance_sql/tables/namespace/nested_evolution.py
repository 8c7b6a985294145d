"""Adding, dropping and renaming fields inside struct columns of a namespace.

Only the namespace schema changes (partition tables are not rewritten): below the top
level a table's fields are matched by name, so a field a table lacks reads as NULL and
appends add it first; dropped and renamed-from paths are remembered (:data:`DROPPED_KEY`,
:data:`FORMER_KEY`) and never reused, since older tables still hold their old values.
"""

from __future__ import annotations

import json

import pyarrow as pa

from lance_sql.errors import SpecError
from lance_sql.format.schema import map_child_fields
from lance_sql.spec.arrow_json import assign_field_ids, field_ids, shift_ids
from lance_sql.tables.namespace.field_map import (
    canonical_schema,
    list_kind,
    marked_field,
    same_list_kind,
)

DROPPED_KEY = b"lance_sql:dropped_nested_paths"
FORMER_KEY = b"lance_sql:former_names"


def dropped_paths(schema: pa.Schema) -> set[str]:
    raw = (schema.metadata or {}).get(DROPPED_KEY)
    return set(json.loads(raw)) if raw else set()


def with_dropped(schema: pa.Schema, paths: set[str]) -> pa.Schema:
    md = dict(schema.metadata or {})
    md[DROPPED_KEY] = json.dumps(sorted(paths)).encode()
    return pa.schema(list(schema), md)


def _rebuild_list(t: pa.DataType, value: pa.Field) -> pa.DataType:
    return map_child_fields(t, lambda _: value)  # (the same kind of list, of ``value``)


def new_field(f: pa.Field, next_id: int) -> tuple[pa.Field, int]:
    """``f`` (canonical types) with ids from ``next_id``, depth-first; (field, next id)."""
    plain = canonical_schema(pa.schema([f]))
    shifted = shift_ids(assign_field_ids(plain), next_id)
    return shifted.field(0), max(field_ids(shifted)) + 1


def merge_field(
    existing: pa.Field, added: pa.Field, next_id: int, dropped: set[str], path: str = ""
) -> tuple[pa.Field, int, int]:
    """``existing`` with the nested fields of ``added`` it lacks; (field, next id, count added)."""
    path = path or existing.name
    et, at = existing.type, added.type
    if pa.types.is_struct(et) and pa.types.is_struct(at):
        children = [et.field(i) for i in range(et.num_fields)]
        index = {c.name: i for i, c in enumerate(children)}
        count = 0
        for j in range(at.num_fields):
            c = at.field(j)
            cpath = f"{path}.{c.name}"
            if c.name in index:
                merged, next_id, n = merge_field(
                    children[index[c.name]], c, next_id, dropped, cpath
                )
                children[index[c.name]] = merged
                count += n
                continue
            if cpath in dropped:
                raise SpecError(
                    f"nested field {cpath!r} was dropped and cannot be added again (older "
                    "partition tables still hold its values): choose another name",
                    key="schema",
                )
            new, next_id = new_field(pa.field(c.name, c.type, True), next_id)
            children.append(new)
            index[c.name] = len(children) - 1
            count += 1
        return existing.with_type(pa.struct(children)), next_id, count
    if same_list_kind(et, at):
        value, next_id, n = merge_field(et.value_field, at.value_field, next_id, dropped, path)
        return existing.with_type(_rebuild_list(et, value)), next_id, n
    raise SpecError(
        f"a field named {path!r} already exists (type {et}); only fields inside structs "
        "can be added to it",
        key="schema",
    )


def _struct_child(t: pa.DataType, name: str, path: str) -> tuple[list[pa.Field], list[str], int]:
    """The children of struct type ``t``, their names and the index of ``name`` in them;
    a SpecError naming ``path`` when ``t`` is no struct or has no such field."""
    if not pa.types.is_struct(t):
        raise SpecError(f"no nested field {path!r} (a {t} has no fields)", key="schema")
    children = [t.field(i) for i in range(t.num_fields)]
    names = [c.name for c in children]
    if name not in names:
        raise SpecError(f"no nested field {path!r}", key="schema")
    return children, names, names.index(name)


def drop_path(field: pa.Field, parts: list[str], path: str) -> pa.Field:
    """``field`` without the nested field ``parts`` names (list levels are stepped through)."""
    t = field.type
    if list_kind(t) is not None:
        if parts[0] == t.value_field.name and not pa.types.is_struct(t.value_type):
            parts = parts[1:]
        return field.with_type(_rebuild_list(t, drop_path(t.value_field, parts, path)))
    children, _, i = _struct_child(t, parts[0], path)
    if len(parts) == 1:
        del children[i]
        if not children:
            raise SpecError(
                f"dropping {path!r} would leave an empty struct: drop its parent instead",
                key="schema",
            )
    else:
        children[i] = drop_path(children[i], parts[1:], path)
    return field.with_type(pa.struct(children))


def former_names(f: pa.Field) -> list[str]:
    raw = (f.metadata or {}).get(FORMER_KEY)
    return list(json.loads(raw)) if raw else []


def rename_path(field: pa.Field, parts: list[str], new: str, path: str) -> pa.Field:
    """``field`` with the nested field ``parts`` names called ``new`` (same id; its old
    name recorded in :data:`FORMER_KEY`); list levels are stepped through."""
    t = field.type
    if list_kind(t) is not None:
        value = t.value_field
        if parts[0] == value.name and not _has_child(value.type, parts[0]):
            parts = parts[1:]
        if not parts:
            raise SpecError(f"{path!r} names a list's items, which have no name to change",
                            key="schema")  # fmt: skip
        return field.with_type(_rebuild_list(t, rename_path(value, parts, new, path)))
    children, names, i = _struct_child(t, parts[0], path)
    if len(parts) > 1:
        children[i] = rename_path(children[i], parts[1:], new, path)
        return field.with_type(pa.struct(children))
    if new in names:
        raise SpecError(f"a field named {new!r} already exists beside {path!r}", key="schema")
    c = children[i]
    md = dict(c.metadata or {})
    md[FORMER_KEY] = json.dumps([*former_names(c), c.name]).encode()
    children[i] = c.with_name(new).with_metadata(md)
    return field.with_type(pa.struct(children))


def _has_child(t: pa.DataType, name: str) -> bool:
    return pa.types.is_struct(t) and t.get_field_index(name) >= 0


def _match(table_child: pa.Field, ns_t: pa.DataType) -> pa.Field | None:
    """The namespace child of struct ``ns_t`` a table's child holds (by name or former name)."""
    for j in range(ns_t.num_fields):
        c = ns_t.field(j)
        if table_child.name == c.name or table_child.name in former_names(c):
            return c
    return None


def _paired(table_t: pa.StructType, ns_t: pa.StructType) -> list[tuple[pa.Field, pa.Field | None]]:
    """Each child of ``table_t`` with the child of ``ns_t`` it holds (:func:`_match`, or None)."""
    return [(tc, _match(tc, ns_t)) for tc in table_t]


def table_names(table_t: pa.DataType, ns_t: pa.DataType) -> pa.DataType:
    """``table_t`` with nested fields renamed in the namespace called by their namespace
    names (same layout: a table column can be ``view``-ed as it, then cast by name)."""
    if pa.types.is_struct(table_t) and pa.types.is_struct(ns_t):
        return pa.struct(
            [
                tc if c is None else tc.with_name(c.name).with_type(table_names(tc.type, c.type))
                for tc, c in _paired(table_t, ns_t)
            ]
        )
    if same_list_kind(table_t, ns_t):
        value = table_t.value_field
        return _rebuild_list(table_t, value.with_type(table_names(value.type, ns_t.value_type)))
    return table_t


def read_as(col: pa.Array | pa.ChunkedArray, ns_t: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """A partition table's column read as namespace type ``ns_t``: renamed nested fields
    take their namespace names (a zero-copy ``view``), then a cast matches fields by name."""
    if col.type.equals(ns_t):
        return col
    named = table_names(col.type, ns_t)
    if not named.equals(col.type):
        if isinstance(col, pa.ChunkedArray):
            col = pa.chunked_array([c.view(named) for c in col.chunks], named)
        else:
            col = col.view(named)
    return col.cast(ns_t)


def table_renames(table_t: pa.DataType, ns_t: pa.DataType, path: str) -> list[dict[str, str]]:
    """pylance ``alter_columns`` renames giving table column ``path`` the namespace's
    nested names (children before parents, paths in the table's names)."""
    out: list[dict[str, str]] = []
    if pa.types.is_struct(table_t) and pa.types.is_struct(ns_t):
        for tc, c in _paired(table_t, ns_t):
            if c is None:
                continue
            out += table_renames(tc.type, c.type, f"{path}.{tc.name}")
            if tc.name != c.name:
                out.append({"path": f"{path}.{tc.name}", "name": c.name})
    if same_list_kind(table_t, ns_t):
        out += table_renames(table_t.value_type, ns_t.value_type,
                             f"{path}.{table_t.value_field.name}")  # fmt: skip
    return out


def missing_in_table(table_t: pa.DataType, ns_t: pa.DataType) -> pa.DataType | None:
    """The part of ``ns_t`` a partition table's ``table_t`` lacks, shaped for pylance's
    ``add_columns`` (a struct holding only the missing fields, through list levels)."""
    if pa.types.is_struct(table_t) and pa.types.is_struct(ns_t):
        have = {table_t.field(i).name: table_t.field(i).type for i in range(table_t.num_fields)}
        out = []
        for j in range(ns_t.num_fields):
            c = ns_t.field(j)
            if c.name not in have:
                out.append(pa.field(c.name, marked_field(c.name, c).type, True))
                continue
            sub = missing_in_table(have[c.name], c.type)
            if sub is not None:
                out.append(pa.field(c.name, sub, True))
        return pa.struct(out) if out else None
    if same_list_kind(table_t, ns_t):
        sub = missing_in_table(table_t.value_type, ns_t.value_type)
        return None if sub is None else _rebuild_list(table_t, pa.field("item", sub, True))
    return None


def widen_structs(
    schema: pa.Schema, table_schema: pa.Schema, names: dict[str, str]
) -> dict[str, pa.DataType]:
    """Table column -> the nested fields it lacks of its namespace column (for an append)."""
    out = {}
    for f in schema:
        if pa.types.is_nested(f.type):
            missing = missing_in_table(table_schema.field(names[f.name]).type, f.type)
            if missing is not None:
                out[names[f.name]] = missing
    return out


def table_field(f: pa.Field, table_schema: pa.Schema, name: str) -> pa.Field:
    """The field data for namespace column ``f`` is written as into table column ``name``:
    marked with ``f``'s id; a struct-bearing column keeps the table's own nested fields
    (data is cast to it by name), other columns take the namespace type."""
    have = table_schema.field(name)
    if pa.types.is_nested(f.type) and not have.type.equals(f.type):
        f = f.with_type(have.type)
    return marked_field(name, f, nullable=have.nullable)
