"""The convenient form of partition specs: field dicts naming sources by column.

Used by ``PartitionedNamespace.create`` / ``add_spec`` (and the text forms that
expand to field dicts); the result is validated like a spec read from JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from lance_sql.errors import SpecError
from lance_sql.spec.arrow_json import data_type_to_json, source_fields
from lance_sql.spec.partition_field import PartitionField, Transform
from lance_sql.spec.transforms import default_field_id, transform_class
from lance_sql.spec.transforms.spec_text import spec_fields
from lance_sql.tables.namespace.spec import (
    SPEC_KEY_PREFIX,
    PartitionSpec,
    validate_evolution,
    validate_spec,
)


def spec_of(spec: Any, schema: pa.Schema, *, spec_id: int = 1) -> PartitionSpec:
    """Spec ``spec_id`` over ``schema`` from a PartitionSpec, its JSON, field dicts or spec
    text (docs/namespaces.md, "Partition specs")."""
    if isinstance(spec, (str, list, tuple)):
        spec = spec_fields(spec)
    if isinstance(spec, PartitionSpec):
        if spec.id != spec_id:
            raise SpecError(f"the spec must have id {spec_id}", key=f"{spec.key}.id")
        validate_spec(spec, schema)
        return spec
    if isinstance(spec, (str, bytes, Mapping)):
        key = f"{SPEC_KEY_PREFIX}{spec_id}"
        return PartitionSpec.from_json(spec, schema=schema, key=key, expected_id=spec_id)
    return build_spec(spec, spec_id=spec_id, schema=schema)


def build_spec(
    fields: Iterable[Mapping[str, Any] | PartitionField],
    *,
    spec_id: int,
    schema: pa.Schema,
    previous: Mapping[int, PartitionSpec] | None = None,
) -> PartitionSpec:
    """Build spec ``spec_id`` from convenient field dicts (docs/namespaces.md), reusing the
    field ids of earlier versions' identical fields, else readable ones (``key_bucket_16``)."""
    previous = dict(previous or {})
    key = f"{SPEC_KEY_PREFIX}{spec_id}"
    sources = source_fields(schema)
    by_path = {path: fid for fid, (path, _, _) in sources.items()}
    built: list[PartitionField] = []
    for i, raw in enumerate(fields):
        fkey = f"{key}.fields[{i}]"
        if isinstance(raw, PartitionField):
            built.append(raw)
            continue
        if not isinstance(raw, Mapping):
            raise SpecError(f"expected a partition field dict, got {raw!r}", key=fkey)
        obj = dict(raw)
        if "source_ids" not in obj:
            srcs = obj.pop("sources", None)
            if srcs is None and "source" in obj:
                srcs = [obj.pop("source")]
            if not isinstance(srcs, list) or not srcs:
                raise SpecError("name the sources ('source', 'sources' or 'source_ids')", key=fkey)
            ids = []
            for j, name in enumerate(srcs):
                fid = by_path.get(name) if isinstance(name, str) else None
                if fid is None:
                    raise SpecError(f"no column named {name!r}", key=f"{fkey}.sources[{j}]")
                ids.append(fid)
            obj["source_ids"] = ids
        transform = obj.get("transform")
        if isinstance(transform, str):
            obj["transform"] = {"type": transform}
            for param in ("num_buckets", "width"):
                if param in obj:
                    obj["transform"][param] = obj.pop(param)
        if "result_type" not in obj and isinstance(obj.get("transform"), Mapping):
            t = Transform.from_json(obj["transform"], key=f"{fkey}.transform")
            src_types = [sources[s][1].type if s in sources else None for s in obj["source_ids"]]
            if all(x is not None for x in src_types):
                result_type = transform_class(t).result_type_of(t, src_types)
                obj["result_type"] = data_type_to_json(result_type)
        elif isinstance(obj.get("result_type"), pa.DataType):
            obj["result_type"] = data_type_to_json(obj["result_type"])
        if "field_id" not in obj:
            obj["field_id"] = _default_field_id(obj, previous, sources, fkey)
        built.append(PartitionField.from_json(obj, key=fkey))
    spec = PartitionSpec(spec_id, tuple(built))
    validate_spec(spec, schema, key=key)
    validate_evolution({**previous, spec_id: spec})
    return spec


def _default_field_id(
    obj: dict[str, Any],
    previous: Mapping[int, PartitionSpec],
    sources: Mapping[int, tuple[str, pa.Field, bool]],
    key: str,
) -> str:
    probe = PartitionField.from_json({**obj, "field_id": "_probe"}, key=key)
    for spec in previous.values():
        for old in spec.fields:
            if old.same_definition(probe):
                return old.field_id
    if probe.transform is None:
        raise SpecError("an expression field needs an explicit 'field_id'", key=key)
    cols = "_".join(
        sources[s][0].replace(".", "_") if s in sources else str(s) for s in probe.source_ids
    )
    taken = {old.field_id for spec in previous.values() for old in spec.fields}
    return default_field_id(probe.transform, cols, taken)
