"""``lance-sql import``: stream a parquet/CSV/JSON file into a partitioned namespace.

Batches reach ``append`` as a generator: memory is bounded by the writer's buffer.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import pyarrow as pa

from lance_sql.errors import SpecError

_FORMATS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
}


def open_batches(
    path: str, fmt: str | None = None
) -> tuple[pa.Schema, Iterator[pa.RecordBatch], int | None]:
    """``(schema, batches, total_rows or None)`` of a data file, read lazily."""
    p = Path(path)
    fmt = fmt or _FORMATS.get(p.suffix.lower())
    if fmt is None:
        raise ValueError(
            f"cannot tell the format of {path!r}: use .parquet, .csv or .json, or --format"
        )
    if not p.is_file():
        raise FileNotFoundError(f"import file {path!r} does not exist")
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            f = pq.ParquetFile(p)
            return f.schema_arrow, f.iter_batches(batch_size=65536), f.metadata.num_rows
        if fmt == "csv":
            import pyarrow.csv as pcsv

            r = pcsv.open_csv(p)
            return r.schema, iter(r), None
        import pyarrow.json as pjson

        t = pjson.read_json(p)  # pyarrow has no streaming JSON reader
        return t.schema, iter(t.to_batches(max_chunksize=65536)), t.num_rows
    except pa.ArrowInvalid as e:
        raise ValueError(f"cannot read {fmt} file {path!r}: {e}") from e


def _cast_to(
    schema: pa.Schema, batches: Iterator[pa.RecordBatch], text: bool = False
) -> Iterator[pa.RecordBatch]:
    """Each batch under the shared schema rule; text formats (CSV, JSON) carry only the
    types pyarrow inferred, so their columns are parsed as the namespace types first."""
    from lance_sql.tables.namespace.schema_rule import cast_named, conform

    for b in batches:
        if text:
            b = cast_named(b, schema, "import file")
        yield conform(b, schema, source="import file")


def _progress(
    batches: Iterator[pa.RecordBatch], total: int | None, enabled: bool
) -> Iterator[pa.RecordBatch]:
    if not enabled:
        yield from batches
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("importing"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("rows"),
        TimeElapsedColumn(),
        console=Console(file=sys.stderr),
        transient=True,
    ) as prog:
        task = prog.add_task("import", total=total)
        for b in batches:
            yield b
            prog.advance(task, b.num_rows)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def read_spec(value: str) -> Any:
    """``--spec``: a file holding a partition spec, or the spec inline (text or JSON)."""
    from lance_sql.spec.transforms.spec_text import spec_fields

    path = Path(value)
    text = value
    if not value.lstrip().startswith(("[", "{")) and path.is_file():
        text = path.read_text(encoding="utf-8")
    elif path.suffix.lower() == ".json" and "(" not in value:
        raise SpecError(f"--spec file {value!r} does not exist")
    spec = spec_fields(text)
    if isinstance(spec, str):  # a JSON object: the spec's own form or {"fields": [...]}
        try:
            spec = json.loads(spec)
        except ValueError as e:
            raise SpecError(f"--spec {value!r} is not valid JSON: {e}") from e
        if isinstance(spec, dict) and "id" not in spec:
            spec = spec.get("fields", spec)
    return spec


def cmd_import(args: Any, out: TextIO) -> int:
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    root = Path(args.root)
    exists = (root / "__manifest").exists()
    spec = read_spec(args.spec) if args.spec else None
    file_schema, batches, total = open_batches(args.source, args.format)
    before = _listing(root)
    if exists:
        ns = PartitionedNamespace.open(root)
    else:
        if spec is None:
            raise ValueError(
                f"{root} is not a partitioned namespace yet: --spec is required to create it"
            )
        schema = _load_schema(args.schema) if args.schema else file_schema
        ns = PartitionedNamespace.create(root, schema, spec)
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    text = (args.format or _FORMATS.get(Path(args.source).suffix.lower())) != "parquet"
    counted = _Counter(_cast_to(ns.schema, batches, text))
    try:
        ns.append(_progress(iter(counted), total, show))
    except BaseException:
        if not exists:  # the first write failed: leave no namespace behind
            _remove_new(root, before)
        raise
    ns = PartitionedNamespace.open(root)
    verb = "appended" if exists else "created namespace with"
    n_tables = ns.partitions().num_rows
    out.write(
        f"{verb} {_count(counted.rows, 'row')}; {root}: {_count(ns.count_rows(), 'row')} in "
        f"{_count(n_tables, 'partition table')}, __manifest version {ns.manifest_version}\n"
    )
    return 0


def _listing(root: Path) -> set[str] | None:
    """Names directly under ``root`` before the import (None: ``root`` did not exist)."""
    return {p.name for p in root.iterdir()} if root.is_dir() else None


def _remove_new(root: Path, before: set[str] | None) -> None:
    """Remove what a failed creating import made: the root, or only the new entries in it."""
    import shutil

    if before is None:
        shutil.rmtree(root, ignore_errors=True)
        return
    for p in root.iterdir():
        if p.name not in before:
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)


class _Counter:
    def __init__(self, it: Iterator[pa.RecordBatch]) -> None:
        self._it = it
        self.rows = 0

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        for b in self._it:
            self.rows += b.num_rows
            yield b


def _load_schema(path: str) -> pa.Schema:
    """``--schema``: a JSON file holding the namespace schema (JsonArrowSchema)."""
    from lance_sql.spec.arrow_json import schema_from_json

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise FileNotFoundError(f"cannot read schema file {path!r}: {e.strerror}") from e
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"schema file {path!r} is not valid JSON: {e}") from e
    return schema_from_json(obj)
