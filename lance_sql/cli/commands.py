"""The subcommands but ``demo`` and ``import``.

Each function takes the parsed arguments and a writer for stdout and returns
the exit code; errors are raised and turned into one line by ``main``.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any, TextIO

from lance_sql.cli.output import format_table, human_size, write_table
from lance_sql.cli.plan_stats import explain_text, scan_stats
from lance_sql.cli.session import UsageError, make_context, open_namespace
from lance_sql.cli.statements import split_statements

PREFIX = "partition_field_"  # a __manifest column holding one partition field's value


def read_queries(args: Any) -> list[str]:
    """Statements from the positional QUERY or ``-f FILE`` (exactly one of them)."""
    if (args.query is None) == (args.file is None):
        raise UsageError("give either a QUERY or -f FILE")
    if args.file is not None:
        try:
            text = Path(args.file).read_text(encoding="utf-8")
        except OSError as e:
            raise FileNotFoundError(f"cannot read SQL file {args.file!r}: {e.strerror}") from e
    else:
        text = args.query
    stmts = split_statements(text)
    if not stmts:
        raise UsageError("no SQL statement given")
    return stmts


def cmd_sql(args: Any, out: TextIO) -> int:
    import time

    import pyarrow as pa

    if args.output and not args.format:
        args.format = Path(args.output).suffix.lstrip(".").lower() or None
        if args.format not in ("csv", "json", "parquet"):
            raise UsageError("--output needs --format csv|json|parquet")
    if args.format and not args.output:
        raise UsageError("--format needs --output FILE")
    stmts = read_queries(args)
    ctx = make_context(args.ns, args.lance)
    results: list[pa.Table] = []
    for i, stmt in enumerate(stmts):
        t0 = time.perf_counter()
        table = ctx.sql(stmt).to_arrow_table()
        elapsed = time.perf_counter() - t0
        results.append(table)
        if args.output:
            continue
        if len(stmts) > 1:
            out.write(f"-- statement {i + 1}\n")
        out.write(format_table(table, args.max_rows) + "\n")
        if args.timing:
            out.write(f"time: {elapsed * 1000:.1f} ms\n")
    if args.output:
        write_table(results[-1], args.output, args.format)
        out.write(f"wrote {results[-1].num_rows} rows to {args.output}\n")
    return 0


def cmd_explain(args: Any, out: TextIO) -> int:
    stmts = read_queries(args)
    ctx = make_context(args.ns, args.lance)
    for stmt in stmts:
        plan = explain_text(ctx, stmt, analyze=args.analyze)
        out.write(plan.rstrip() + "\n")
        stats = scan_stats(plan)
        if stats:
            out.write("pruning:\n")
            for s in stats:
                out.write(f"  {s}\n")
    return 0


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str) -> timedelta:
    """``30s``, ``15m``, ``12h``, ``7d``, ``2w`` (a bare number is seconds)."""
    m = _DURATION.match(text)
    if m is None:
        raise UsageError(f"not a duration: {text!r} (examples: 30s, 15m, 12h, 7d, 2w)")
    return timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])


def cmd_compact(args: Any, out: TextIO) -> int:
    ns = open_namespace(args.root)
    report = ns.compact(target_rows_per_fragment=args.target_rows_per_fragment)
    out.write(f"{report}\n")
    return 0


def cmd_expire(args: Any, out: TextIO) -> int:
    ns = open_namespace(args.root)
    r = ns.expire_versions(older_than=parse_duration(args.older_than))
    out.write(
        f"removed {r.manifest_versions_removed} __manifest versions and "
        f"{r.table_versions_removed} versions of {r.tables} partition tables "
        f"({human_size(r.bytes_removed)})\n"
    )
    return 0


def indexes_by_partition(ns: Any) -> dict[str, dict[str, Any]]:
    """``object_id -> {"indexes": {name: "indexed/rows[ +N unindexed fragments]"|"missing"}}``."""
    out: dict[str, dict[str, Any]] = {}
    for r in ns.index_coverage().to_pylist():
        if not r["present"]:
            text = "missing"
        else:
            text = f"{r['indexed_rows']}/{r['rows']}"
            if r["unindexed_fragments"]:
                text += f" +{r['unindexed_fragments']} unindexed fragments"
        out.setdefault(r["object_id"], {"indexes": {}})["indexes"][r["index"]] = text
    return out


def describe_indexes(indexes: dict[str, str]) -> str:
    """``  indexes: id_idx=40/40, region_idx=missing`` for one partition line (or '')."""
    if not indexes:
        return ""
    return "  indexes: " + ", ".join(f"{k}={v}" for k, v in sorted(indexes.items()))


def _dir_size(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):  # a file removed while walking
                total += (Path(dirpath) / f).stat().st_size
    return total


def inspect_report(root: str) -> dict[str, Any]:
    """Specs, schema, partition counts per spec version and sizes of a namespace."""
    from lance_sql.spec.arrow_json import source_fields
    from lance_sql.spec.transforms.spec_text import field_text
    from lance_sql.spec.transforms.spec_text import time_partition_warnings as time_warnings
    from lance_sql.tables.namespace.maintenance import table_stats

    ns = open_namespace(root)
    names = {fid: path for fid, (path, _, _) in source_fields(ns.schema).items()}
    base = Path(root)
    parts = ns.partitions()
    # object_id -> {fragments, rows, deleted_rows, versions, reclaimable_bytes}
    storage = {s.pop("object_id"): s for s in table_stats(ns)}
    coverage = indexes_by_partition(ns)
    rows = []
    typed = {p["object_id"]: _partition_values(p) for p in parts.to_pylist()}
    for p in parts.to_pylist():
        rows.append(
            {
                "object_id": p["object_id"],
                "spec_version": p["spec_version"],
                "read_version": p["read_version"],
                "bytes": _dir_size(base / p["location"]),
                "values": {k: str(v) for k, v in typed[p["object_id"]].items()},
                **storage.get(p["object_id"], {}),
                **coverage.get(p["object_id"], {}),
            }
        )

    def order(r: dict[str, Any]) -> tuple[Any, ...]:  # NULL last, values by their type
        vals = typed[r["object_id"]]
        return (r["spec_version"], [(v is None, str(type(v)), v) for v in vals.values()])

    try:
        rows.sort(key=order)
    except TypeError:  # values of one field that do not compare: by their text
        rows.sort(key=lambda r: (r["spec_version"], sorted(r["values"].items())))
    per_spec = collections.Counter(r["spec_version"] for r in rows)
    return {
        "root": str(base.resolve()),
        "manifest_version": ns.manifest_version,
        "schema": [
            {"name": f.name, "type": str(f.type), "nullable": f.nullable} for f in ns.schema
        ],
        "specs": {str(k): v.to_json() for k, v in sorted(ns.specs.items())},
        "spec_text": {
            str(k): [field_text(f.to_json(), names) for f in v.fields]
            for k, v in sorted(ns.specs.items())
        },
        "partitions_per_spec": {str(k): per_spec.get(k, 0) for k in sorted(ns.specs)},
        "indexes": [i.to_json() for i in ns.list_indexes()],
        "rows": ns.count_rows(),
        "partitions": rows,
        "total_bytes": sum(r["bytes"] for r in rows),
        "reclaimable_bytes": sum(r.get("reclaimable_bytes", 0) for r in rows),
        "ignored_tables": ns.foreign_tables(),
        "manifest_bytes": _dir_size(base / "__manifest"),
        "warnings": [
            f"spec v{k}: {m}"
            for k, v in sorted(ns.specs.items())
            for m in time_warnings(v, ns.schema)
        ],
    }


def cmd_repair(args: Any, out: TextIO) -> int:
    """Rebuild a ``__manifest`` another writer damaged (partition columns, pins, metadata)."""
    ns = open_namespace(args.root, repair=True)
    out.write(
        f"repaired {args.root}: {len(ns.tables())} partition tables pinned at their current "
        f"versions, __manifest version {ns.manifest_version}\n"
    )
    return 0


def cmd_inspect(args: Any, out: TextIO) -> int:
    rep = inspect_report(args.root)
    if args.json:
        out.write(json.dumps(rep, indent=2, default=str) + "\n")
        return 0
    w = out.write
    w(f"namespace: {rep['root']}\n__manifest version: {rep['manifest_version']}\n")
    w(f"rows: {rep['rows']}\nschema:\n")
    for f in rep["schema"]:
        w(f"  {f['name']}: {f['type']}{'' if f['nullable'] else ' not null'}\n")
    w("partition specs:\n")
    for sid in rep["specs"]:
        fields = ", ".join(rep["spec_text"][sid])
        w(f"  v{sid}: {fields}  ({rep['partitions_per_spec'][sid]} partition tables)\n")
    for msg in rep["warnings"]:  # time fields that cannot prune (spec_text.time_partition_warnings)
        w(f"warning: {msg}\n")
    for i in rep["indexes"]:
        w(f"index {i['name']}: {i['index_type']} on {i['column']} (field id {i['field_id']})\n")
    w(f"partition tables ({len(rep['partitions'])}):\n")
    for p in rep["partitions"]:
        vals = ", ".join(f"{k}={v}" for k, v in p["values"].items())
        size = human_size(p["bytes"])
        frags = f"  fragments={p.get('fragments')}  deleted_rows={p.get('deleted_rows')}"
        reclaim = f"  reclaimable={human_size(p.get('reclaimable_bytes', 0))}"
        w(f"  v{p['spec_version']} {vals or '-'}  version={p['read_version']}  {size}")
        w(f"{frags}{reclaim}{describe_indexes(p.get('indexes', {}))}\n")
    if rep["ignored_tables"]:
        w(f"ignored tables, not under a spec version ({len(rep['ignored_tables'])}):\n")
        for t in rep["ignored_tables"]:
            w(f"  {t['object_id']}  location={t['location']}\n")
    w(
        f"total size: {human_size(rep['total_bytes'])} in partition tables"
        f" + {human_size(rep['manifest_bytes'])} __manifest;"
        f" reclaimable by expire + compact: {human_size(rep['reclaimable_bytes'])}\n"
    )
    return 0


def partitions_json(root: str, where: str | None) -> dict[str, Any]:
    """The partition tables a filter selects (the scan planner's), with its report."""
    from lance_sql.planning.namespace_scan import plan_scan

    ns = open_namespace(root)
    plan = plan_scan(ns, where)
    sel = [
        {
            "object_id": p.object_id,
            "location": p.location,
            "spec_version": p.spec_version,
            "read_version": p.read_version,
            "values": {
                k: v if isinstance(v, (int, float, str, bool)) else str(v)
                for k, v in _partition_values(dict(p.values)).items()
            },
        }
        for p in plan.partitions
    ]
    return {
        "root": str(Path(root).resolve()),
        "manifest_version": ns.manifest_version,
        "where": where,
        "total": plan.total_partitions,
        "selected": len(sel),
        "report": plan.explain().splitlines(),
        "partitions": sel,
    }


def cmd_partitions(args: Any, out: TextIO) -> int:
    out.write(json.dumps(partitions_json(args.root, args.where), indent=2) + "\n")
    return 0


def _partition_values(row: dict[str, Any]) -> dict[str, Any]:
    """``{field_id: value}`` of a ``__manifest`` row's non-NULL ``partition_field_*`` columns."""
    return {k[len(PREFIX) :]: v for k, v in row.items() if k.startswith(PREFIX) and v is not None}
