"""Render query results as aligned text (stable for tests and pipes) and write them to files."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa

_MAX_ROWS = 50


def _cell(v: object) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return str(v)
        return (
            f"{v:.6g}"
            if abs(v) >= 1e15 or (v != 0 and abs(v) < 1e-4)
            else f"{v:,.4f}".rstrip("0").rstrip(".")
        )
    return str(v)


def format_table(table: pa.Table, max_rows: int = _MAX_ROWS) -> str:
    """An aligned text table of at most ``max_rows`` rows plus a row count line."""
    names = table.column_names
    if not names:  # a statement with no result columns (CREATE TABLE, SET)
        return "(no result)"
    rows = table.slice(0, max_rows).to_pylist()
    cells = [[_cell(r[k]) for k in names] for r in rows]
    widths = [max([len(n)] + [len(c[i]) for c in cells]) for i, n in enumerate(names)]
    out = [
        " | ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)),
        "-+-".join("-" * w for w in widths),
    ]
    for c in cells:
        out.append(
            " | ".join(
                v.rjust(w) if _numeric(table, i) else v.ljust(w)
                for i, (v, w) in enumerate(zip(c, widths, strict=True))
            )
        )
    more = table.num_rows - len(rows)
    tail = f"({table.num_rows} row{'s' if table.num_rows != 1 else ''}"
    tail += f", {more} not shown)" if more > 0 else ")"
    out.append(tail)
    return "\n".join(s.rstrip() for s in out)


def _numeric(table: pa.Table, i: int) -> bool:
    t = table.schema.field(i).type
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def write_table(table: pa.Table, path: str | Path, fmt: str) -> None:
    """Write ``table`` as ``csv``, ``json`` (JSON lines) or ``parquet``."""
    path = Path(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, path)
    elif fmt == "csv":
        import pyarrow.csv as pcsv

        pcsv.write_csv(table, path)
    elif fmt == "json":
        with path.open("w", encoding="utf-8") as f:
            for row in table.to_pylist():
                f.write(json.dumps(row, default=str) + "\n")
    else:
        raise ValueError(f"unknown output format {fmt!r}")


def human_size(n: int) -> str:
    """A byte count in B, KiB, MiB or GiB, as `inspect` and `expire` print sizes."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"
