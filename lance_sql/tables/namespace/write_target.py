"""One partition table a namespace write touches: its staged state, preparation
(:func:`prepare_target`) and single Lance commit (:func:`commit_target`); the protocol
around them is in :mod:`.writer`."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from lance_sql.errors import CommitConflictError, UnsupportedFeatureError, first_line
from lance_sql.format.metadata import open_metadata
from lance_sql.spec.arrow_json import field_id_of
from lance_sql.tables.namespace.field_map import (
    NS_FIELD_ID_KEY,
    check_column_type,
    columns_by_namespace_id,
    is_marked,
    marked_field,
)
from lance_sql.tables.namespace.nested_evolution import table_field, table_renames, widen_structs
from lance_sql.tables.namespace.reader import PartitionTable, open_partition_table


@dataclass
class WriteTarget:
    """One partition table this write touches."""

    key: tuple[Any, ...]
    values: tuple[Any, ...]
    object_id: str
    location: str
    uri: str
    entry: PartitionTable | None  # None for a new table
    names: dict[str, str] = field(default_factory=dict)  # namespace name -> table column
    table_schema: pa.Schema | None = None
    buffers: list[tuple[pa.RecordBatch, np.ndarray | None]] = field(default_factory=list)
    buffered: int = 0
    fragments: list[Any] = field(default_factory=list)
    base_version: int | None = None
    prepared: bool = False
    dataset: Any = None  # pylance dataset checked out on the pinned branch (None: main)
    # a new table written and committed in one pylance call (see NamespaceWriter._flush_one)
    committed_version: int | None = None

    @property
    def branch(self) -> str | None:
        return None if self.entry is None else self.entry.read_branch

    @property
    def base(self) -> Any:
        """What pylance writes and commits to: the branch's dataset, or the table URI."""
        return self.uri if self.dataset is None else self.dataset


def prepare_target(
    t: WriteTarget,
    *,
    schema: pa.Schema,
    table_schema: pa.Schema,
    mode: str,
    staging: bool,
    partition: str,
    storage_options: Mapping[str, str] | None,
) -> None:
    """Before writing files into an existing table: pin its base and map its columns.

    A branch pin is written on that branch, a tag pin refused. While staging nothing is
    committed, so a table lacking namespace columns (a schema commit) is refused.
    """
    if t.prepared:
        return
    entry = t.entry
    assert entry is not None
    if entry.read_tag:
        raise UnsupportedFeatureError(
            f"partition table {entry.object_id!r} (partition {partition}) is pinned "
            f"to tag {entry.read_tag!r}: tags are immutable, so it cannot be written; "
            "pin it to a version or a branch first",
            path=entry.uri,
        )
    branch = entry.read_branch
    # Versions after the pinned one were never part of the namespace (a failed
    # write, or a direct pylance write): an append restores so they cannot leak in.
    ds = table_head(entry, storage_options, restore=mode == "append" and not staging)
    base = entry.read_version if entry.read_version is not None else ds.version

    def schema_at(version: int) -> pa.Schema:
        return open_metadata(entry.uri, version, branch=branch, storage_options=opts).schema

    def refuse_staged(problem: str, fix: str) -> None:
        raise UnsupportedFeatureError(
            f"partition table {entry.object_id!r} {problem}; a staged write cannot change its "
            f"schema (append through PartitionedNamespace.append once, which {fix} them)",
            path=entry.uri,
        )

    # Only a write that is not staging commits schema changes, each re-read at ds's new head.
    opts = storage_options
    tschema = schema_at(base if staging else ds.version)
    if not is_marked(tschema) and not staging and mode == "append":
        ds = _mark_legacy_columns(entry, ds if branch else entry.uri, tschema, ds.version, opts)
        tschema = schema_at(ds.version)
    by_id = {fid: f.name for fid, f in columns_by_namespace_id(tschema).items()}
    if mode == "append":
        for f in schema:
            name = by_id.get(field_id_of(f))
            if name is not None:
                check_column_type(entry.object_id, name, tschema.field(name).type, f)
    missing = [f for f in schema if by_id.get(field_id_of(f)) is None]
    if missing and mode == "append":
        if staging:
            refuse_staged(f"lacks namespace column(s) {[f.name for f in missing]}", "adds")
        taken = set(tschema.names)
        added = []
        for f in missing:
            name = f.name if f.name not in taken else f"{f.name}__field_{field_id_of(f)}"
            taken.add(name)
            added.append(marked_field(name, f, nullable=True))
        ds.add_columns(added)
        tschema = schema_at(ds.version)
        by_id = {fid: f.name for fid, f in columns_by_namespace_id(tschema).items()}
    if mode == "append":
        t.names = {f.name: by_id[field_id_of(f)] for f in schema}
        renames = [
            r
            for f in schema
            for r in table_renames(tschema.field(t.names[f.name]).type, f.type, t.names[f.name])
        ]
        if renames and staging:
            paths = [r["path"] for r in renames]
            refuse_staged(f"holds nested fields renamed since ({paths})", "renames")
        for r in renames:  # one at a time: each path names the table's fields as they are
            ds.alter_columns(r)
        if renames:
            tschema = schema_at(ds.version)
        widened = widen_structs(schema, tschema, t.names)
        if widened and staging:
            refuse_staged(f"lacks nested fields of {sorted(widened)}", "adds")
        if widened:
            ds.add_columns(pa.schema([pa.field(n, w) for n, w in widened.items()]))
            tschema = schema_at(ds.version)
        t.table_schema = pa.schema([table_field(f, tschema, t.names[f.name]) for f in schema])
    else:
        t.table_schema = table_schema
    t.dataset = ds if branch else None
    t.base_version = ds.version
    t.prepared = True


def table_head(
    entry: PartitionTable,
    storage_options: Mapping[str, str] | None,
    *,
    restore: bool = True,
    max_retries: int = 20,
) -> Any:
    """The table's dataset at its newest version (on its pinned branch); with ``restore``,
    versions after the pinned one are first undone by a ``Restore`` commit of it."""
    import lance

    head = dataclasses.replace(entry, read_version=None, read_tag=None)  # the branch's latest
    ds = open_partition_table(head, storage_options=storage_options)
    pinned = entry.read_version
    if restore and pinned is not None and ds.version != pinned:
        with table_conflicts(entry, f"the restore of version {pinned}"):
            ds = lance.LanceDataset.commit(
                ds if entry.read_branch else entry.uri,
                lance.LanceOperation.Restore(pinned),
                read_version=ds.version,
                storage_options=storage_options,
                max_retries=max_retries,
            )
    return ds


def commit_target(t: WriteTarget, *, mode: str, storage_options: Mapping[str, str] | None) -> int:
    """One Lance commit of ``t``'s staged fragments; returns the new table version."""
    import lance

    if t.committed_version is not None:
        return t.committed_version
    op_mod = lance.LanceOperation
    if t.entry is None:
        op, read_version = op_mod.Overwrite(t.table_schema, t.fragments), None
    elif mode == "overwrite":
        op, read_version = op_mod.Overwrite(t.table_schema, t.fragments), t.base_version
    else:
        op, read_version = op_mod.Append(t.fragments), t.base_version
    with table_conflicts(t, "its commit"):
        ds = lance.LanceDataset.commit(
            t.base, op, read_version=read_version, storage_options=storage_options
        )
    if read_version is not None and int(ds.version) != read_version + 1:
        # Lance rebased our Append over a concurrent writer's uncommitted one: the new
        # version holds that writer's rows too, and pinning it would publish them
        # (half of a commit that may still fail). Leave it unreferenced.
        moved = f" (version {read_version} moved to {int(ds.version) - 1})"
        raise written_concurrently(t, "its commit", moved)
    return int(ds.version)


def create_table(
    t: WriteTarget, table: pa.Table, storage_options: Any, file_version: str | None
) -> None:
    """Write and commit a new table's only files in one pylance call (its creating
    commit, as :func:`commit_target` would make it)."""
    import lance

    schema = t.table_schema
    assert schema is not None
    # the field metadata comes from the data: the table's schema (no cast when only the
    # metadata differs, the usual case: casting 10,000 rows cost 0.2 ms)
    if table.schema.equals(schema):
        table = pa.Table.from_arrays(table.columns, schema=schema)
    else:
        table = table.cast(schema)
    ds = lance.write_dataset(
        table,
        t.uri,
        schema=schema,
        mode="create",
        storage_options=storage_options,
        data_storage_version=file_version,
    )
    t.committed_version = int(ds.version)
    t.fragments.extend(f.metadata for f in ds.get_fragments())


def _mark_legacy_columns(
    entry: PartitionTable,
    base: Any,
    tschema: pa.Schema,
    read_version: int,
    storage_options: Mapping[str, str] | None,
) -> Any:
    """Record on every column of an unmarked (older, read by Lance field id) table the
    namespace id it holds, so the mapping survives columns this write adds."""
    import lance

    updates = {
        fid: lance.LanceOperation.UpdateMap({NS_FIELD_ID_KEY: str(fid)})
        for f in tschema
        if (fid := field_id_of(f)) is not None
    }
    op = lance.LanceOperation.UpdateConfig(field_metadata_updates=updates)
    with table_conflicts(entry, "the marking of its columns"):
        return lance.LanceDataset.commit(
            base, op, read_version=read_version, storage_options=storage_options, max_retries=0
        )


@contextmanager
def table_conflicts(entry: PartitionTable | WriteTarget, what: str) -> Iterator[None]:
    """Lance commit conflicts on a partition table (pylance raises them as OSError from
    its conflict resolver, or as its CommitConflictError) as :class:`CommitConflictError`."""
    from lance.commit import CommitConflictError as LanceConflict

    try:
        yield
    except LanceConflict as exc:
        raise written_concurrently(entry, what, f" ({exc})") from exc
    except OSError as exc:
        text = str(exc)
        if "ncompatible transaction" not in text and "onflict" not in text:
            raise
        raise written_concurrently(entry, what, f" ({first_line(exc)})") from exc


def head_after(entry: PartitionTable, before: int, what: str, storage_options: Any) -> Any:
    """The table's head after ``what``, one commit on top of version ``before``; an error
    when another writer committed in between (pinning it could publish their rows)."""
    import lance

    head = lance.dataset(entry.uri, storage_options=storage_options)
    if int(head.version) != before + 1:
        raise written_concurrently(entry, what)
    return head


def written_concurrently(
    entry: PartitionTable | WriteTarget, what: str, detail: str = ""
) -> CommitConflictError:
    """The error of a partition table another writer changed during ``what``."""
    return CommitConflictError(
        f"partition table {entry.object_id!r} was written concurrently during {what}; "
        f"__manifest was not committed{detail}"
    )
