"""Per-spec ``__manifest`` filter, partition selection, residuals and the report.

:func:`project_to_manifest` makes one ``__manifest`` filter: per spec version, its
``v{N}$`` tables AND the inclusive projection; tables of a version with no known spec
are kept (pruning never loses rows). Each top-level conjunct also gets a strict
projection per spec: a table whose values satisfy it need not re-check it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lance_sql.errors import PlanningError
from lance_sql.planning.arrow_expr import evaluate, to_pyarrow
from lance_sql.planning.projection import SpecProjector
from lance_sql.spec.predicates import (
    FALSE,
    TRUE,
    Column,
    Compare,
    Literal,
    Not,
    Predicate,
    StartsWith,
    and_,
    columns_of,
    conjuncts,
    or_,
    to_sql,
)
from lance_sql.tables.namespace.layout import spec_ids_of
from lance_sql.tables.namespace.manifest_fragments import table_versions
from lance_sql.tables.namespace.spec import PartitionSpec

OBJECT_ID = Column("object_id", None, pa.string())
OBJECT_TYPE = Column("object_type", None, pa.string())
IS_TABLE = Compare(OBJECT_TYPE, "=", Literal("table", pa.string()))


def version_prefix(spec_id: int) -> str:
    """The ``object_id`` prefix of every object under spec version ``spec_id``."""
    return f"v{spec_id}$"


def in_version(spec_id: int) -> Predicate:
    return StartsWith(OBJECT_ID, version_prefix(spec_id))


@dataclass(frozen=True)
class SpecFilter:
    """What one spec version contributes: its partition predicate and per-conjunct proofs."""

    spec_id: int
    inclusive: Predicate
    strict: tuple[Predicate, ...]  # one per top-level conjunct of the filter


@dataclass(frozen=True)
class ManifestFilter:
    """A pruning filter over ``__manifest`` plus what is needed to compute residuals."""

    filter: Predicate  # the prepared source filter (over namespace columns)
    conjuncts: tuple[Predicate, ...]
    specs: dict[int, SpecFilter] = field(default_factory=dict)

    @property
    def predicate(self) -> Predicate:
        """The whole ``__manifest`` predicate (IS_TABLE AND per-version disjunction)."""
        branches = [and_(in_version(i), s.inclusive) for i, s in sorted(self.specs.items())]
        known = or_(*(in_version(i) for i in sorted(self.specs)))
        others = Not(known) if self.specs else TRUE
        return and_(IS_TABLE, or_(*branches, others))

    def to_sql(self) -> str:
        """DataFusion SQL text of :attr:`predicate` (for EXPLAIN and ``__manifest`` queries)."""
        return to_sql(self.predicate)

    def to_pyarrow(self) -> pc.Expression:
        """The predicate as a pyarrow expression (pylance ``scanner(filter=...)`` accepts it)."""
        return to_pyarrow(self.predicate)

    def spec_sql(self, spec_id: int) -> str:
        return to_sql(self.specs[spec_id].inclusive)


def project_to_manifest(
    pred: Predicate, specs: dict[int, PartitionSpec], schema: pa.Schema
) -> ManifestFilter:
    """Project a prepared predicate (:func:`.passes.prepare`) through every spec version."""
    parts = conjuncts(pred)
    out: dict[int, SpecFilter] = {}
    for spec_id, spec in sorted(specs.items()):
        projector = SpecProjector(spec, schema)
        out[spec_id] = SpecFilter(
            spec_id,
            projector.inclusive(pred),
            tuple(projector.strict(c) for c in parts),
        )
    return ManifestFilter(pred, parts, out)


def select_rows(manifest: pa.Table, mf: ManifestFilter) -> pa.Table:
    """The partition-table rows of ``manifest`` the filter keeps (order preserved)."""
    return manifest.filter(pa.array(select_mask(manifest, mf)))


def select_mask(
    manifest: pa.Table, mf: ManifestFilter, versions: np.ndarray | None = None
) -> np.ndarray:
    """Per row of ``manifest``: a partition table (not one outside every ``v{N}``) that
    :attr:`ManifestFilter.predicate` keeps. A missing partition column raises: read as
    all-NULL it would prune every partition of its versions."""
    check_partition_columns(mf, manifest.column_names)
    versions = table_versions(manifest) if versions is None else versions
    mask = np.zeros(len(versions), bool)
    known = np.zeros(len(versions), bool)
    for spec_id, s in mf.specs.items():
        in_spec = versions == spec_id
        known |= in_spec
        if s.inclusive == FALSE or not in_spec.any():
            continue
        if s.inclusive == TRUE:
            mask |= in_spec
        else:
            read = manifest.select(sorted(columns_of(s.inclusive))).combine_chunks()
            mask |= in_spec & _mask_numpy(read, s.inclusive)
    return mask | ((versions >= 0) & ~known)


def partition_columns_read(mf: ManifestFilter) -> set[str]:
    """The ``__manifest`` columns the inclusive and strict projections of ``mf`` read."""
    needed: set[str] = set()
    for s in mf.specs.values():
        needed |= columns_of(s.inclusive)
        for p in s.strict:
            needed |= columns_of(p)
    return needed


def check_partition_columns(mf: ManifestFilter, names: Sequence[str]) -> None:
    missing = sorted(partition_columns_read(mf) - set(names))
    if missing:
        raise PlanningError(
            f"__manifest lacks partition column(s) {', '.join(missing)} of its partition specs"
        )


def spec_ids(table: pa.Table) -> np.ndarray:
    """The spec version of every row's ``object_id`` (-1 where it is not ``v{N}$...``)."""
    return spec_ids_of(table.column("object_id")) if table.num_rows else np.zeros(0, np.int64)


def proofs(table: pa.Table, mf: ManifestFilter, versions: np.ndarray) -> np.ndarray:
    """Which conjuncts each row's partition values prove (rows x conjuncts): a row of
    version N by spec N's strict projection; a row of no known version proves nothing."""
    check_partition_columns(mf, table.column_names)
    n, k = table.num_rows, len(mf.conjuncts)
    out = np.zeros((n, k), dtype=bool)
    if n == 0 or k == 0:
        return out
    for spec_id, s in mf.specs.items():
        in_spec = versions == spec_id
        if not in_spec.any():
            continue
        for bit, p in enumerate(s.strict):
            if p == FALSE:
                continue
            mask = np.ones(n, dtype=bool) if p == TRUE else _mask_numpy(table, p)
            out[:, bit] |= mask & in_spec
    return out


def fully_proven(proven: np.ndarray) -> np.ndarray:
    """Rows whose every conjunct is proven (residual TRUE: no re-check at all)."""
    return proven.all(axis=1)


def _mask_numpy(table: pa.Table, pred: Predicate) -> np.ndarray:
    """Where ``pred`` is TRUE over ``table``'s columns."""
    mask = pc.fill_null(evaluate(pred, table), False)
    return np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)


def residuals_from_proofs(proven: np.ndarray, mf: ManifestFilter) -> list[Predicate]:
    """Per row, the AND of the conjuncts it does not prove (the whole filter if none)."""
    n, k = proven.shape
    if n == 0 or k == 0:  # no conjunct: the filter is TRUE
        return [mf.filter] * n
    patterns, inverse = _distinct_rows(proven)
    preds = np.empty(len(patterns), dtype=object)
    for i, pattern in enumerate(patterns):
        if not pattern.any():
            preds[i] = mf.filter
        else:
            preds[i] = and_(*(c for c, done in zip(mf.conjuncts, pattern, strict=True) if not done))
    return list(preds[np.asarray(inverse).reshape(-1)])


def _distinct_rows(proven: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows of a bool matrix, each row's index among them); rows of up to 62
    columns are packed into integers (``np.unique`` over rows is several times slower)."""
    n, k = proven.shape
    if n == 1:
        return proven, np.zeros(1, np.int64)
    if k > 62:
        patterns, inverse = np.unique(proven, axis=0, return_inverse=True)
        return patterns, np.asarray(inverse).reshape(-1)
    bits = np.arange(k, dtype=np.int64)
    codes, inverse = np.unique(proven.astype(np.int64) @ (1 << bits), return_inverse=True)
    return ((codes[:, None] >> bits) & 1).astype(bool), inverse


def _text(source: str | Callable[[], str]) -> str:
    return source if isinstance(source, str) else source()


@dataclass(frozen=True)
class SpecVersionReport:
    """Pruning of one spec version: its ``__manifest`` filter (SQL, rendered when first
    read) and selected/total counts; ``fully_matching``: selected partitions whose
    values prove the whole filter."""

    spec_version: int
    manifest_filter_source: str | Callable[[], str] = field(repr=False, compare=False)
    selected: int
    total: int
    fully_matching: int = 0

    @functools.cached_property
    def manifest_filter(self) -> str:
        return _text(self.manifest_filter_source)

    spec_id = property(lambda self: self.spec_version)
    filter_sql = property(lambda self: self.manifest_filter)

    def line(self, label: str) -> str:
        return (
            f"  v{self.spec_version}: {self.selected}/{self.total} selected"
            f" ({self.fully_matching} without re-check); {label}: {self.manifest_filter}"
        )

    def to_dict(self) -> dict[str, object]:
        names = ("spec_version", "manifest_filter", "selected", "total", "fully_matching")
        return {name: getattr(self, name) for name in names}


@dataclass(frozen=True)
class PruningReport:
    """What pruning did, per spec version (for EXPLAIN and tests)."""

    manifest_sql_source: str | Callable[[], str] = field(repr=False, compare=False)
    specs: tuple[SpecVersionReport, ...]
    selected: int
    total: int

    @functools.cached_property
    def manifest_filter_sql(self) -> str:
        return _text(self.manifest_sql_source)

    def lines(self) -> list[str]:
        header = f"partitions: {self.selected}/{self.total} selected"
        return [header, *(s.line("filter") for s in self.specs)]

    def __str__(self) -> str:
        return "\n".join(self.lines())


def report(
    mf: ManifestFilter, all_versions: np.ndarray, versions: np.ndarray, done: np.ndarray
) -> PruningReport:
    """The report from the spec version of every table row and of every selected row."""
    specs = tuple(
        SpecVersionReport(
            spec_id,
            functools.partial(mf.spec_sql, spec_id),
            int((versions == spec_id).sum()),
            int((all_versions == spec_id).sum()),
            int(((versions == spec_id) & done).sum()),
        )
        for spec_id in sorted(mf.specs)
    )
    return PruningReport(mf.to_sql, specs, len(versions), int((all_versions >= 0).sum()))
