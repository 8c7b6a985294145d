"""Every file in ``sql_examples/`` runs on the demo data and returns the right rows.

The reference is the same statement over the same namespaces registered with
pruning disabled (``prune=None``: every partition table is read), so a pruning
mistake shows up as a difference. Files tagged ``-- Prunes: <table>`` must
also really prune that table (fewer partition tables read than exist).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lance_sql.cli.demo import demo_context, examples_dir
from lance_sql.cli.demo_data import build_demo
from lance_sql.cli.plan_stats import explain_text, scan_stats
from lance_sql.cli.statements import header_tags, split_statements
from lance_sql.engines.datafusion.dml import statement_keyword

EXAMPLES = sorted(examples_dir().glob("*.sql"))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, object]:
    folder, _ = build_demo(tmp_path_factory.mktemp("examples") / "demo")
    return demo_context(folder), demo_context(folder, prune=None)


def test_examples_present() -> None:
    names = {p.name for p in EXAMPLES}
    assert len(names) >= 5
    for p in EXAMPLES:
        tags = header_tags(p.read_text())
        assert {"title", "shows", "tables", "expected"} <= tags.keys(), p.name


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_matches_unpruned(path: Path, demo: tuple[object, object]) -> None:
    pruned, full = demo
    text = path.read_text()
    tags = header_tags(text)
    stmts = split_statements(text)
    assert stmts
    for stmt in stmts:
        got = pruned.sql(stmt).to_arrow_table()
        want = full.sql(stmt).to_arrow_table()
        assert got.num_rows > 0 or statement_keyword(stmt) == "CREATE", stmt  # DDL: no rows
        assert got.equals(want), (path.name, got, want)  # every example has ORDER BY
    if "prunes" in tags:
        table = tags["prunes"]
        stats = [
            s for stmt in stmts for s in scan_stats(explain_text(pruned, stmt)) if s.table == table
        ]
        assert stats and all(s.read < s.total for s in stats), (path.name, stats)


def test_example_specific_results(demo: tuple[object, object]) -> None:
    """Facts the example headers promise, computed independently of the engine."""
    ctx, _ = demo
    import pyarrow.compute as pc

    by_name = {p.name: split_statements(p.read_text()) for p in EXAMPLES}
    t = ctx.sql(by_name["01_partition_pruning.sql"][0]).to_arrow_table()
    assert set(t.column("country").to_pylist()) == {"US"}
    assert {str(d) for d in t.column("event_date").to_pylist()} == {"2025-12-10"}
    h = ctx.sql(by_name["04_murmur3.sql"][0]).to_arrow_table().to_pylist()[0]
    assert list(h.values()) == [-629525236, -1158136343]  # design notes 2.1
    buckets = ctx.sql(by_name["04_murmur3.sql"][1]).to_arrow_table()
    assert buckets.num_rows == 16 and pc.sum(buckets.column("orders")).as_py() == 4000
    j = ctx.sql(by_name["02_storage_partitioned_join.sql"][0]).to_arrow_table()
    known = ctx.sql("SELECT count(*) AS n FROM orders WHERE customer_id < 500").to_arrow_table()
    assert pc.sum(j.column("orders")).as_py() == known.column("n")[0].as_py()
    ev = ctx.sql(by_name["03_spec_evolution.sql"][0]).to_arrow_table()
    assert pc.sum(ev.column("from_spec_v1")).as_py() > 0
    assert pc.sum(ev.column("from_spec_v2")).as_py() > 0
