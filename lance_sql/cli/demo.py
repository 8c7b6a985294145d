"""``lance-sql demo``: build the sample namespaces and run every ``sql_examples/`` file
(per query: result, partition tables read, join layout, wall time)."""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from lance_sql.cli.demo_data import DEMO_TABLES, build_demo
from lance_sql.cli.output import format_table
from lance_sql.cli.plan_stats import explain_text, join_summary, scan_stats
from lance_sql.cli.statements import header_tags, split_statements
from lance_sql.engines.datafusion.dml import statement_keyword


def examples_dir() -> Path:
    """``sql_examples/`` of the source checkout this package runs from."""
    return Path(__file__).resolve().parents[2] / "sql_examples"


def demo_context(folder: Path, prune: Any = "planner") -> Any:
    from lance_sql.engines.datafusion.context import SessionContext

    ctx = SessionContext()
    for name in DEMO_TABLES:
        ctx.register_namespace(name, folder / name, prune=prune)
    # CREATE TABLE in the examples: a fresh folder per session (SET lance.warehouse)
    (folder / "warehouse").mkdir(parents=True, exist_ok=True)
    ctx.lance_warehouse = tempfile.mkdtemp(prefix="session-", dir=folder / "warehouse")
    return ctx


def _parse_join(tag: str) -> tuple[str, str, str, str]:
    """``orders.customer_id = customers.id`` -> (orders, customer_id, customers, id)."""
    left, _, right = tag.partition("=")
    lt, _, lc = left.strip().partition(".")
    rt, _, rc = right.strip().partition(".")
    return lt, lc, rt, rc


def run_example(path: Path, ctx: Any, folder: Path, out: TextIO, max_rows: int = 20) -> None:
    """Run one example file: result, pruning, join layout, time."""
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    text = path.read_text(encoding="utf-8")
    tags = header_tags(text)
    out.write(f"\n=== {path.name}: {tags.get('title', '')}\n")
    statements = split_statements(text)
    for stmt in statements:
        if len(statements) > 1:  # say which statement each result belongs to
            out.write(f"> {_first_code_line(stmt)}\n")
        t0 = time.perf_counter()
        table = ctx.sql(stmt).to_arrow_table()
        elapsed = time.perf_counter() - t0
        out.write(format_table(table, max_rows) + "\n")
        plan = "" if statement_keyword(stmt) == "CREATE" else explain_text(ctx, stmt)
        for s in scan_stats(plan):
            out.write(f"pruning: {s}\n")
        if "join" in tags:
            lt, lc, rt, rc = _parse_join(tags["join"])
            left = PartitionedNamespace.open(folder / lt)
            right = PartitionedNamespace.open(folder / rt)
            out.write(join_summary(left, right, (lc, rc), plan) + "\n")
        out.write(f"time: {elapsed * 1000:.0f} ms\n")


def _first_code_line(stmt: str) -> str:
    lines = [ln.strip() for ln in stmt.splitlines()]
    first = next((ln for ln in lines if ln and not ln.startswith("--")), stmt.strip())
    return first if len(first) <= 100 else first[:97] + "..."


def _building(show: bool) -> Any:
    """A spinner on stderr (a terminal only) while the sample data is built."""
    if not show:
        return contextlib.nullcontext()
    from rich.console import Console

    return Console(stderr=True).status("building the demo namespaces ...")


def cmd_demo(args: Any, out: TextIO) -> int:
    t0 = time.perf_counter()
    with _building(sys.stderr.isatty()):
        folder, created = build_demo(args.dir)
    verb = "created" if created else "reusing"
    out.write(
        f"{verb} demo namespaces in {folder} ({time.perf_counter() - t0:.1f} s): "
        f"{', '.join(DEMO_TABLES)}\n"
    )
    if getattr(args, "data_only", False):
        return 0
    examples = sorted(examples_dir().glob("*.sql"))
    if not examples:
        raise FileNotFoundError(f"no example queries found in {examples_dir()}")
    ctx = demo_context(folder)
    for path in examples:
        run_example(path, ctx, folder, out, args.max_rows)
    out.write(
        f"\ndone in {time.perf_counter() - t0:.1f} s. Try:\n"
        f"  lance-sql sql --ns events={folder / 'events'} "
        '"SELECT country, count(*) FROM events GROUP BY country"\n'
        f"  lance-sql inspect {folder / 'events'}\n"
    )
    return 0
