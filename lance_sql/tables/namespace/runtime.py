"""Runtime views of a partitioned namespace: appendix E properties, foreign tables, repair."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from lance_sql.errors import NotFoundError, SpecError
from lance_sql.tables.namespace.layout import NAMESPACE, spec_namespace_version, spec_version_of


def foreign_tables(ns: Any) -> list[dict[str, Any]]:
    """``table`` rows of ``__manifest`` outside every ``v<N>`` (another writer's), as
    ``{object_id, location}``; reads ignore them, ``lance-sql inspect`` lists them."""
    rows = ns.snapshot.rows
    cols = {n: rows.column(n).to_pylist() for n in ("object_id", "object_type", "location")}
    return [
        {"object_id": o, "location": loc}
        for o, t, loc in zip(cols["object_id"], cols["object_type"], cols["location"], strict=True)
        if t == "table" and spec_version_of(o) is None
    ]


def describe(ns: Any, path: Sequence[str]) -> dict[str, Any]:
    """A namespace's runtime properties (the spec's appendix E), by path of names.

    ``["v1"]`` gives ``{"properties": {"partition_spec": <spec JSON>}}``;
    ``["v1", "<name>", ...]`` gives the ``partition.<field_id>`` entry for the
    partition value that namespace level adds (as a string).
    """
    rows, specs = ns.snapshot.rows, ns.specs
    parts = list(path)
    if not parts:
        raise SpecError("describe needs a namespace path such as ['v1']", key="path")
    n = spec_namespace_version(parts[0])
    if n is None or n not in specs:
        raise NotFoundError(f"no spec version namespace {parts[0]!r} in {ns.root}")
    spec = specs[n]
    if len(parts) == 1:
        return {"properties": {"partition_spec": spec.to_json_string()}}
    oid = "$".join(parts)
    oids = rows.column("object_id").to_pylist()
    kinds = rows.column("object_type").to_pylist()
    hit = [i for i, (o, t) in enumerate(zip(oids, kinds, strict=True)) if o == oid]
    if not hit or kinds[hit[0]] != NAMESPACE or len(parts) - 1 > len(spec.fields):
        raise NotFoundError(f"no partition namespace {parts!r} in {ns.root}")
    pf = spec.fields[len(parts) - 2]
    column = rows.column(pf.column_name) if pf.column_name in rows.column_names else None
    value = None if column is None else column[hit[0]].as_py()
    return {"properties": {f"partition.{pf.field_id}": property_text(value)}}


def property_text(value: Any) -> str:
    """A partition value as a runtime property string (appendix E: ``2025-12-10``, ``2025``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, bytes):
        return value.hex()
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


class RootOrSelf:
    """A method callable on the class with a root (``PartitionedNamespace.repair(root)``)
    and on an instance without one (``ns.repair()``, which also moves ``ns`` to the result)."""

    def __init__(self, on_root: Callable[..., Any]) -> None:
        self._on_root = on_root

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        if obj is None:
            return self._on_root

        def on_self() -> Any:
            repaired = self._on_root(obj.root, storage_options=obj.storage_options)
            obj._set_snapshot(repaired.snapshot)
            return obj

        on_self.__doc__ = self._on_root.__doc__
        return on_self
