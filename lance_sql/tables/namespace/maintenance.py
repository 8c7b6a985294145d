"""Keeping a namespace fast and its storage bounded: ``compact``, ``expire_versions``,
``table_stats``. Semantics: docs/namespaces.md, "Compaction and expiry"."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from lance_sql.errors import LanceSqlError
from lance_sql.format.storage import list_dir, resolve, walk_files
from lance_sql.tables.namespace.cleanup import expiry_pins, written_rows
from lance_sql.tables.namespace.key_filters import remove_unreferenced
from lance_sql.tables.namespace.layout import child_uri, manifest_uri
from lance_sql.tables.namespace.mutation import Mutation, run
from lance_sql.tables.namespace.write_target import table_conflicts, written_concurrently


@dataclass
class CompactReport:
    manifest_version: int
    compacted: dict[str, tuple[int, int]] = field(default_factory=dict)  # oid -> (before, after)
    skipped: int = 0

    def __str__(self) -> str:
        frags = sum(b for b, _ in self.compacted.values())
        after = sum(a for _, a in self.compacted.values())
        return (
            f"compacted {len(self.compacted)} partition tables ({frags} -> {after} fragments), "
            f"{self.skipped} left as they were; __manifest version {self.manifest_version}"
        )


def _needs_compaction(fragments: list[Any], target: int) -> bool:
    if any(f.metadata.deletion_file is not None for f in fragments):
        return True
    if len(fragments) < 2:
        return False
    return sum(1 for f in fragments if f.count_rows() < target) >= 2


def compact(ns: Any, *, target_rows_per_fragment: int = 1 << 20, **options: Any) -> CompactReport:
    """Compact the partition tables that need it; one ``__manifest`` commit."""
    ns._check_writable()

    def build(m: Mutation) -> CompactReport:
        pinned = m.version_pinned()
        report = CompactReport(ns.manifest_version, skipped=len(m.entries) - len(pinned))
        for entry in pinned:
            ds = m.head(entry)
            frags = ds.get_fragments()
            if not _needs_compaction(frags, target_rows_per_fragment):
                report.skipped += 1
                continue
            before, rows = ds.version, ds.count_rows()
            with table_conflicts(entry, "compaction"):
                ds.optimize.compact_files(
                    target_rows_per_fragment=target_rows_per_fragment, **options
                )
            import lance

            new = lance.dataset(entry.uri, storage_options=ns.storage_options)
            if new.version == before:
                report.skipped += 1
                continue
            # compaction commits more than one version (reserve fragments, rewrite); a
            # concurrent append in between would show as changed rows
            if new.count_rows() != rows:
                raise written_concurrently(entry, "compaction")
            m.set_version(entry, new, same_rows=True)  # compaction keeps the rows
            report.compacted[entry.object_id] = (len(frags), len(new.get_fragments()))
        return report

    report = run(ns, build)
    report.manifest_version = ns.manifest_version
    return report


@dataclass
class ExpireReport:
    manifest_versions_removed: int = 0
    table_versions_removed: int = 0
    bytes_removed: int = 0
    tables: int = 0
    key_filters_removed: int = 0  # sidecar files no live __manifest version points to

    def __str__(self) -> str:
        return (
            f"removed {self.manifest_versions_removed} __manifest versions and "
            f"{self.table_versions_removed} versions of {self.tables} partition tables "
            f"({self.bytes_removed} bytes)"
        )


def _cleanup(ds: Any, **kwargs: Any) -> Any:
    return ds.cleanup_old_versions(error_if_tagged_old_versions=False, **kwargs)


def expire_versions(ns: Any, *, older_than: timedelta) -> ExpireReport:
    """Remove versions older than ``older_than`` that nothing live pins (module docstring)."""
    import lance

    ns._check_writable()
    if older_than < timedelta(0):
        raise ValueError(f"older_than must not be negative, got {older_than}")
    opts = ns.storage_options
    report = ExpireReport()
    written = written_rows(ns.root, opts)  # (before the versions that wrote them go)
    mds = lance.dataset(manifest_uri(ns.root), storage_options=opts)
    stats = _cleanup(mds, older_than=older_than)
    report.manifest_versions_removed = int(stats.old_versions)
    report.bytes_removed += int(stats.bytes_removed)
    pins = expiry_pins(ns.root, opts, written)  # only tables whose pins changed since
    cutoff = datetime.now(timezone.utc) - older_than
    for location, pin in pins.items():
        if pin.all_versions or _one_version(child_uri(ns.root, location), opts):
            continue  # (a table never written since its creation: nothing to open)
        try:
            ds = lance.dataset(child_uri(ns.root, location), storage_options=opts)
        except (OSError, ValueError):
            continue  # dropped and already removed by cleanup
        old = [
            int(v["version"])
            for v in ds.versions()
            if int(v["version"]) not in pin.versions
            and int(v["version"]) != ds.version
            and _aware(v["timestamp"]) < cutoff
        ]
        if not old:
            continue
        stats = _cleanup(ds, versions=old, older_than=older_than)
        report.tables += 1
        report.table_versions_removed += int(stats.old_versions)
        report.bytes_removed += int(stats.bytes_removed)
    for location, pin in pins.items():
        report.key_filters_removed += remove_unreferenced(
            child_uri(ns.root, location), pin.key_filters, cutoff, opts
        )
    ns.refresh()
    return report


def _one_version(uri: str, opts: Any) -> bool:
    """Whether the table at ``uri`` has a single version file (False when unsure)."""
    try:
        found = list_dir(resolve(f"{uri.rstrip('/')}/_versions", opts))
    except (OSError, ValueError, LanceSqlError):
        return False
    return sum(e.name.endswith(".manifest") for e in found) == 1


def _aware(ts: datetime) -> datetime:
    """pylance reports version timestamps as naive local times."""
    return ts.astimezone(timezone.utc) if ts.tzinfo is None else ts


def table_stats(ns: Any) -> list[dict[str, Any]]:
    """Per partition table: fragments, rows, deleted rows, versions and reclaimable bytes
    (files the pinned version does not reference, plus the share of referenced files
    holding deleted rows)."""
    import lance

    out = []
    for entry in ns.tables():
        ds, _ = ns._open(entry)
        frags = ds.get_fragments()
        rows = sum(f.count_rows() for f in frags)
        physical = sum(int(f.metadata.physical_rows or 0) for f in frags)
        live_files = {df.path for f in frags for df in f.metadata.files}
        on_disk = 0
        unreferenced = 0
        live_bytes = 0
        try:
            loc = resolve(entry.uri, ns.storage_options)
            for info in walk_files(loc.join("data")):
                on_disk += info.size
                if info.relative not in live_files:
                    unreferenced += info.size
                else:
                    live_bytes += info.size
        except (OSError, ValueError):
            pass
        deleted_share = (physical - rows) / physical if physical else 0.0
        head = lance.dataset(entry.uri, storage_options=ns.storage_options)
        out.append(
            {
                "object_id": entry.object_id,
                "fragments": len(frags),
                "rows": rows,
                "deleted_rows": physical - rows,
                "versions": len(head.versions()),
                "data_bytes": on_disk,
                "reclaimable_bytes": unreferenced + int(live_bytes * deleted_share),
            }
        )
    return out
