"""Staged writes: tasks write a namespace's files (a JSON-able :class:`StagedWrite`), one
driver commits (:func:`commit_staged`) or aborts (:func:`abort_staged`) them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import LanceSqlError
from lance_sql.format.storage import resolve
from lance_sql.tables.namespace.layout import (
    child_uri,
    data_dir_uri,
    remove_quietly,
    resolve_location,
)
from lance_sql.tables.namespace.manifest_table import read_manifest
from lance_sql.tables.namespace.reader import PartitionTable, open_partition_table, table_entries


@dataclass(frozen=True)
class StagedPartition:
    """Uncommitted Lance data files one staging task wrote for one partition."""

    values: tuple[Any, ...]  # partition values, one per field of the spec staged for
    object_id: str
    location: str  # table directory relative to the root (where the files are)
    new: bool  # True when the table did not exist in the staged-against snapshot
    branch: str | None  # the partition table's pinned branch (files under tree/{branch})
    fragments: tuple[str, ...]  # FragmentMetadata JSON, one per data fragment
    table_version: int | None = None  # latest table version when staged (None: new table)
    bounds: str | None = None  # column bounds of the staged rows (JSON, see .bounds)

    @property
    def rows(self) -> int:
        return sum(int(json.loads(f)["physical_rows"]) for f in self.fragments)


@dataclass(frozen=True)
class StagedWrite:
    """What one task staged: small, picklable, and JSON round-trippable (``to_json``);
    invisible to readers until ``commit_staged``."""

    root: str
    write_id: str
    mode: str
    manifest_version: int
    spec_id: int
    schema: str  # the namespace schema JSON the files were written for
    value_types: tuple[pa.DataType, ...]
    partitions: tuple[StagedPartition, ...]

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.partitions)

    def to_json(self) -> str:
        import base64

        values = (
            pa.table(
                {
                    f"v{i}": pa.array([p.values[i] for p in self.partitions], t)
                    for i, t in enumerate(self.value_types)
                }
            )
            if self.value_types
            else pa.table({"_": pa.nulls(len(self.partitions))})
        )
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, values.schema) as out:
            out.write_table(values)
        return json.dumps(
            {
                "format": STAGED_FORMAT,
                "root": self.root,
                "write_id": self.write_id,
                "mode": self.mode,
                "manifest_version": self.manifest_version,
                "spec_id": self.spec_id,
                "schema": self.schema,
                "values": base64.b64encode(sink.getvalue().to_pybytes()).decode(),
                "partitions": [
                    {  # every field but the values (in the Arrow stream above)
                        **{f.name: getattr(p, f.name) for f in fields(p) if f.name != "values"},
                        "fragments": [json.loads(f) for f in p.fragments],
                    }
                    for p in self.partitions
                ],
            }
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> StagedWrite:
        import base64

        obj = json.loads(text)
        if not isinstance(obj, dict) or obj.get("format") != STAGED_FORMAT:
            raise ValueError(f"not a staged write (expected format {STAGED_FORMAT!r})")
        values = pa.ipc.open_stream(base64.b64decode(obj["values"])).read_all()
        types = () if values.column_names == ["_"] else tuple(f.type for f in values.schema)
        rows = [tuple(r.values()) for r in values.to_pylist()] if types else None
        parts = tuple(
            StagedPartition(
                values=rows[i] if rows is not None else (),
                object_id=p["object_id"],
                location=p["location"],
                new=bool(p["new"]),
                branch=p.get("branch"),
                fragments=tuple(json.dumps(f) for f in p["fragments"]),
                table_version=p.get("table_version"),
                bounds=p.get("bounds"),
            )
            for i, p in enumerate(obj["partitions"])
        )
        return cls(
            root=obj["root"],
            write_id=obj["write_id"],
            mode=obj["mode"],
            manifest_version=int(obj["manifest_version"]),
            spec_id=int(obj["spec_id"]),
            schema=obj["schema"],
            value_types=types,
            partitions=parts,
        )


STAGED_FORMAT = "lance-sql.staged-write.v1"


def _fragment_paths(fragments: Iterable[Any]) -> list[str]:
    out = []
    for f in fragments:
        meta = json.loads(f) if isinstance(f, str) else f.to_json()
        out.extend(df["path"] for df in meta["files"])
    return out


def _move_files(
    src: str, dst: str, fragments: Sequence[Any], storage_options: Mapping[str, str] | None
) -> None:
    """Move fragments' data files from data directory ``src`` to ``dst`` (names unchanged)."""
    s, d = resolve(src, storage_options), resolve(dst, storage_options)
    d.fs.makedirs(d.path, exist_ok=True)
    for name in _fragment_paths(fragments):
        s.fs.mv(f"{s.path}/{name}", f"{d.path}/{name}")


def abort_staged(
    root: str,
    stages: Sequence[StagedWrite],
    *,
    storage_options: Mapping[str, str] | None = None,
) -> None:
    """Best-effort deletion of staged files; ``__manifest`` is never touched. Files a
    committed table version references are kept; a new table's directory goes entirely
    unless ``__manifest`` lists it."""
    locations = sorted({p.location for st in stages for p in st.partitions})
    if not locations:
        _check_stages(root, stages)
        return  # (nothing staged: __manifest is not read)
    try:
        snap = read_manifest(root, storage_options=storage_options)
        rows = snap.rows.filter(pc.is_in(snap.rows.column("location"), pa.array(locations)))
        live = {e.location: e for e in table_entries(rows, snap.root, [])}
    except LanceSqlError:
        return  # cannot tell which tables are live: deleting anything could lose data
    _check_stages(root, stages)
    for st in stages:
        for p in st.partitions:
            entry = live.get(p.location)
            if p.new and entry is None:
                remove_quietly(child_uri(root, p.location), None, storage_options)
                continue
            try:
                used = _committed_paths(root, p, storage_options)
            except (OSError, ValueError, LanceSqlError):
                continue  # cannot tell what is committed: keep everything
            stale = [f for f in p.fragments if not set(_fragment_paths([f])) & used]
            where = data_dir_uri(root, p.location, p.branch)
            remove_quietly(where, _fragment_paths(stale), storage_options)


def _check_stages(root: str, stages: Sequence[StagedWrite]) -> None:
    """Refuse stages of another namespace and any location or file escaping the root (a
    StagedWrite arrives as JSON, and committing or aborting it moves and deletes files)."""
    for st in stages:
        if st.root.rstrip("/") != root.rstrip("/"):
            raise LanceSqlError(
                f"staged write {st.write_id!r} belongs to namespace {st.root}, not {root}"
            )
        for p in st.partitions:
            where = p.location if not p.branch else f"{p.location}/tree/{p.branch}"
            resolve_location(root, where, p.object_id)
            for name in _fragment_paths(p.fragments):
                resolve_location(root, f"{where}/data/{name}", p.object_id)


def _committed_paths(
    root: str, p: StagedPartition, storage_options: Mapping[str, str] | None
) -> set[str]:
    """Data files referenced by table versions made after ``p`` was staged."""
    head = PartitionTable(
        p.object_id, p.location, child_uri(root, p.location), None, None, p.branch, None
    )
    ds = open_partition_table(head, storage_options=storage_options)
    first = 0 if p.table_version is None else p.table_version + 1
    used: set[str] = set()
    for v in range(first, ds.version + 1):
        try:
            at = ds.checkout_version((p.branch, v) if p.branch else v)
        except (OSError, ValueError):
            continue  # a version cleaned up (or never on this branch)
        used.update(_fragment_paths(f.metadata for f in at.get_fragments()))
    return used
