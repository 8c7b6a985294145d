"""Planning a namespace scan with the pruning filter pushed into the ``__manifest`` scan.

Opening a namespace reads every ``__manifest`` row, and on a namespace of
100,000 partitions that read (decoding every ``object_id``, ``location`` and
``metadata`` string) costs more than all of the planning. A planner that only
needs the partitions a filter can select does not need those rows: it opens
``__manifest`` once (one metadata read: root properties, schema, fragments),
projects the filter per spec version, and hands the resulting manifest filter
to pylance's scan as SQL text (``to_table(filter=...)``), so only candidate
rows are decoded. The candidates are then re-checked in memory with the same predicate
(Lance only narrows, the exact selection is this project's), and residuals
and the report are computed over them, vectorised.

The report's totals (partition tables per spec version) need the spec version
of every table row; they are read once per ``__manifest`` content and cached
(the key includes the data files, which a rewrite always replaces).
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import PlanningError
from lance_sql.planning.planner import FilterLike, PartitionPlan, finish_plan, to_predicate
from lance_sql.planning.pruning import (
    ManifestFilter,
    project_to_manifest,
    select_rows,
    spec_ids,
    spec_ids_of,
)
from lance_sql.spec.predicates import columns_of, to_sql
from lance_sql.tables.namespace.manifest_fragments import root_properties
from lance_sql.tables.namespace.spec import PartitionSpec

#: Columns a scan plan needs besides the partition columns.
PLAN_COLUMNS = ("object_id", "object_type", "location", "read_version", "read_branch", "read_tag")

#: How many times Lance refused a pushed manifest filter (then every row was read).
PUSHDOWN_FALLBACKS = [0]

_TOTALS: OrderedDict[tuple[Any, ...], np.ndarray] = OrderedDict()
_TOTALS_LOCK = threading.Lock()
_TOTALS_MAX = 16


def partition_columns(specs: Mapping[int, PartitionSpec]) -> list[str]:
    """The ``partition_field_*`` column of every field of every spec (first seen order)."""
    out: dict[str, None] = {}
    for n in sorted(specs):
        for f in specs[n].fields:
            out.setdefault(f.column_name, None)
    return list(out)


def _content_key(dataset: Any) -> tuple[Any, ...]:
    """What identifies one ``__manifest`` content: uri, version and its data/deletion files."""
    frags = [
        json.dumps(f.metadata.to_json(), sort_keys=True, default=str)
        for f in dataset.get_fragments()
    ]
    return (dataset.uri, dataset.version, tuple(frags))


def table_versions(dataset: Any) -> np.ndarray:
    """The spec version of every partition table row of ``dataset`` (cached per content)."""
    key = _content_key(dataset)
    with _TOTALS_LOCK:
        hit = _TOTALS.get(key)
        if hit is not None:
            _TOTALS.move_to_end(key)
            return hit
    # Two columns of every row, filtered in memory: a Lance filter on object_type makes
    # this scan 2-4x slower (measured on 200k rows), it cannot skip anything here.
    ids = dataset.to_table(columns=["object_id", "object_type"])
    is_table = pc.equal(ids.column("object_type"), "table")
    versions = spec_ids_of(pc.filter(ids.column("object_id"), is_table))
    versions.flags.writeable = False  # shared by every plan of this content
    with _TOTALS_LOCK:
        _TOTALS[key] = versions
        while len(_TOTALS) > _TOTALS_MAX:
            _TOTALS.popitem(last=False)
    return versions


def _check_columns(mf: ManifestFilter, names: Sequence[str]) -> None:
    needed: set[str] = set()
    for s in mf.specs.values():
        needed |= columns_of(s.inclusive)
        for p in s.strict:
            needed |= columns_of(p)
    missing = sorted(needed - set(names))
    if missing:
        raise PlanningError(
            f"__manifest lacks partition column(s) {', '.join(missing)} of its partition specs"
        )


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
    """:func:`.planner.plan_partitions` over an open ``__manifest`` pylance dataset.

    The manifest filter runs inside Lance; ``columns`` limits what is decoded
    for the selected rows (default: every column). A filter Lance refuses
    falls back to reading every row and filtering in memory (same result).
    ``root`` (the namespace root) lets key filters skip tables.
    """
    pred = to_predicate(filter, schema)
    mf = project_to_manifest(pred, dict(specs), schema)
    names = dataset.schema.names
    _check_columns(mf, names)
    if columns is not None:
        from lance_sql.planning.bounds_skipping import compile_skip

        wanted = set(columns) | {"object_id", "object_type"}
        from lance_sql.planning.key_filter_skipping import compile_key_skip

        skips = compile_skip(pred) is not None or compile_key_skip(pred) is not None
        if skips:  # column bounds or key filters could skip: decode them
            wanted.add("metadata")
        for s in mf.specs.values():
            wanted |= columns_of(s.inclusive)
            for p in s.strict:
                wanted |= columns_of(p)
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


def planned_partitions(selected: pa.Table, value_columns: Sequence[str]) -> tuple[Any, ...]:
    """``PlannedPartition`` objects for ``selected`` manifest rows, sorted by ``object_id``.

    Columns are converted once each (no per-row Arrow access).
    """
    from lance_sql.planning.scan_plan import PlannedPartition

    if selected.num_rows == 0:
        return ()
    rows = selected.sort_by("object_id")
    n = rows.num_rows

    def col(name: str) -> list[Any]:
        return rows.column(name).to_pylist() if name in rows.column_names else [None] * n

    versions = [None if v < 0 else int(v) for v in spec_ids(rows)]
    present = [c for c in value_columns if c in rows.column_names]
    values = [rows.column(c).to_pylist() for c in present]
    oid, loc, rv, rb, rt = (col(c) for c in PLAN_COLUMNS if c != "object_type")
    out = []
    for i in range(n):
        vals = tuple((c, v[i]) for c, v in zip(present, values, strict=True) if v[i] is not None)
        out.append(PlannedPartition(oid[i], loc[i], versions[i], rv[i], rb[i], rt[i], vals))
    return tuple(out)


def scan_plan_from(
    plan: PartitionPlan,
    *,
    root: str,
    manifest_version: int,
    specs: Mapping[int, PartitionSpec],
    scan_filter: Any = None,
) -> Any:
    """The :class:`.scan_plan.ScanPlan` of a :class:`PartitionPlan`."""
    from lance_sql.planning.scan_plan import ScanPlan, SpecVersionReport

    rep = plan.report
    return ScanPlan(
        root=root,
        manifest_version=manifest_version,
        partitions=planned_partitions(plan.selected, partition_columns(specs)),
        total_partitions=rep.total,
        specs=tuple(
            SpecVersionReport(
                s.spec_id, s.filter_sql, s.selected, s.total, fully_matching=s.fully_matching
            )
            for s in rep.specs
        ),
        manifest_filter=rep.manifest_filter_sql,
        filter_sql=to_sql(plan.predicate),
        scan_filter=scan_filter,
        skipped_by_bounds=plan.skipped_by_bounds,
        skipped_by_key_filter=plan.skipped_by_key_filter,
        proven=plan.proven_object_ids(),
    )


def plan_scan_at(
    root: str | os.PathLike[str],
    filter: FilterLike,
    *,
    version: int | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> Any:
    """Plan a scan of the namespace at ``root`` reading only the ``__manifest`` rows it selects.

    What a driver pays per query: one ``__manifest`` open, one pushed-down
    scan, planning over the candidates. A filter that does not parse raises
    :class:`PlanningError` naming it.
    """
    from lance_sql.errors import LanceSqlError
    from lance_sql.tables.namespace.layout import root_uri
    from lance_sql.tables.namespace.namespace import parse_properties

    ds = open_manifest(root, version, storage_options=storage_options)
    schema, specs = parse_properties(root_properties(ds))
    try:
        pred = to_predicate(filter, schema)
    except (LanceSqlError, NotImplementedError, ValueError, TypeError, pa.ArrowException) as e:
        raise PlanningError(f"scan filter {filter!s} cannot be planned: {e}") from e
    cols = [*PLAN_COLUMNS, *partition_columns(specs)]
    plan = plan_manifest(
        ds, pred, specs, schema, columns=cols, root=root_uri(root), storage_options=storage_options
    )
    from lance_sql.planning.scan_filter import ScanFilter

    return scan_plan_from(
        plan,
        root=root_uri(root),
        manifest_version=ds.version,
        specs=specs,
        scan_filter=ScanFilter.of(filter, pred, schema),
    )


__all__ = [
    "PLAN_COLUMNS",
    "open_manifest",
    "partition_columns",
    "plan_manifest",
    "plan_scan_at",
    "planned_partitions",
    "scan_plan_from",
    "table_versions",
]
