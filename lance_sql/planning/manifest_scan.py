"""Planning a namespace scan with the pruning filter pushed into the ``__manifest`` scan.

On a large namespace, decoding every ``__manifest`` row costs more than all of the
planning: the manifest filter runs inside Lance, so only candidate rows are decoded,
then the same predicate re-checks them in memory (Lance only narrows). The report's
totals are read once per ``__manifest`` content (data files included) and cached.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.planning.planner import FilterLike, PartitionPlan, finish_plan, to_predicate
from lance_sql.planning.pruning import (
    check_partition_columns,
    partition_columns_read,
    project_to_manifest,
    select_rows,
)
from lance_sql.tables.dataset_cache import OpenCache
from lance_sql.tables.namespace.layout import spec_ids_of
from lance_sql.tables.namespace.spec import PartitionSpec

#: How many times Lance refused a pushed manifest filter (then every row was read).
PUSHDOWN_FALLBACKS = [0]

_TOTALS: OpenCache[np.ndarray] = OpenCache(16)


def _content_key(dataset: Any) -> tuple[Any, ...]:
    """What identifies one ``__manifest`` content: uri, version and its data/deletion files."""
    frags = [
        json.dumps(f.metadata.to_json(), sort_keys=True, default=str)
        for f in dataset.get_fragments()
    ]
    return (dataset.uri, dataset.version, tuple(frags))


def table_versions(dataset: Any) -> np.ndarray:
    """The spec version of every partition table row of ``dataset`` (cached per content)."""
    return _TOTALS.get_or_open(_content_key(dataset), lambda: _read_versions(dataset))


def _read_versions(dataset: Any) -> np.ndarray:
    # (filtered in memory: a Lance filter on object_type cannot skip anything here)
    ids = dataset.to_table(columns=["object_id", "object_type"])
    is_table = pc.equal(ids.column("object_type"), "table")
    versions = spec_ids_of(pc.filter(ids.column("object_id"), is_table))
    versions.flags.writeable = False  # shared by every plan of this content
    return versions


def plan_manifest(
    dataset: Any,
    filter: FilterLike,
    specs: Mapping[int, PartitionSpec],
    schema: pa.Schema,
    *,
    columns: Sequence[str] | None = None,
    root: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> PartitionPlan:
    """:func:`.planner.plan_partitions` over an open ``__manifest`` pylance dataset, the
    manifest filter inside Lance (a filter Lance refuses: every row, filtered here);
    ``columns`` limits what is decoded, ``root`` lets key filters skip tables."""
    pred = to_predicate(filter, schema)
    mf = project_to_manifest(pred, dict(specs), schema)
    names = dataset.schema.names
    check_partition_columns(mf, names)
    if columns is not None:
        from lance_sql.planning.bounds_skipping import compile_skip

        wanted = set(columns) | {"object_id", "object_type"}
        from lance_sql.planning.key_filter_skipping import compile_key_skip

        skips = compile_skip(pred) is not None or compile_key_skip(pred) is not None
        if skips:  # column bounds or key filters could skip: decode them
            wanted.add("metadata")
        wanted |= partition_columns_read(mf)
        cols: list[str] | None = [c for c in names if c in wanted]
    else:
        cols = None
    try:
        # SQL text, not a pyarrow Expression: pyarrow 26 serialises nested AND/OR to
        # Substrait in time exponential in the nesting (a 16-way OR chain takes ~1 s).
        candidates = dataset.to_table(columns=cols, filter=mf.to_sql())
    except (ValueError, OSError, TypeError, NotImplementedError, pa.ArrowException):
        PUSHDOWN_FALLBACKS[0] += 1
        candidates = dataset.to_table(columns=cols)
    # Lance only narrows; the selection (and so the result) is decided here, exactly.
    selected = select_rows(candidates, mf)
    return finish_plan(
        pred, mf, selected, table_versions(dataset), root=root, storage_options=storage_options
    )


def open_manifest(
    root: str | os.PathLike[str],
    version: int | None = None,
    *,
    storage_options: Mapping[str, str] | None = None,
) -> Any:
    """The ``__manifest`` pylance dataset of the namespace at ``root`` (NotFoundError if none)."""
    import lance

    from lance_sql.errors import NotFoundError
    from lance_sql.tables.namespace.layout import manifest_uri, root_uri

    uri = manifest_uri(root_uri(root))
    try:
        return lance.dataset(
            uri, version=version, storage_options=dict(storage_options or {}) or None
        )
    except (ValueError, OSError) as exc:
        raise NotFoundError(f"cannot open __manifest: {exc}", path=uri) from exc
