"""What a newcomer meets in the first hour of the ``lance-sql`` command: errors that keep
their cause and hint at the fix, inline specs, ``--version``, readable ``inspect``."""

from __future__ import annotations

import json
from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lance_sql.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("lance-sql: error: ") and ".rs:" not in lines[0], err
    return lines[0]


def test_version(capsys):
    assert main(["--version"]) == 0
    import lance_sql

    assert capsys.readouterr().out.strip() == f"lance-sql {lance_sql.__version__}"


def test_error_line_keeps_the_root_cause(demo_dir: Path, capsys):
    code, _, err = run(
        capsys,
        "sql",
        "--ns",
        f"events={demo_dir / 'events'}",
        "SELECT * FROM events WHERE event_date = '2025-13-45'",
    )
    assert code == 1
    line = one_line(err)
    assert "Cannot cast string '2025-13-45' to value of Date32 type" in line
    assert "Optimizer rule" not in line


def test_bad_where_is_a_filter_error_not_a_sqlglot_message(demo_dir: Path, capsys):
    code, _, err = run(capsys, "partitions", demo_dir / "events", "--where", "event_date =")
    assert code == 1
    line = one_line(err)
    assert "cannot parse filter 'event_date ='" in line
    assert "sqlglot" not in line and "Required keyword" not in line


def test_ns_on_a_dataset_hints_lance(tmp_path: Path, capsys):
    uri = tmp_path / "events.lance"
    lance.write_dataset(pa.table({"x": [1]}), str(uri))
    code, _, err = run(capsys, "sql", "--ns", f"e={uri}", "SELECT 1")
    assert code == 1
    assert "this is a Lance dataset: use --lance" in one_line(err)


def test_lance_on_a_namespace_hints_ns(demo_dir: Path, capsys):
    code, _, err = run(capsys, "sql", "--lance", f"e={demo_dir / 'events'}", "SELECT 1")
    assert code == 1
    assert "this is a partitioned namespace: use --ns" in one_line(err)


def _parquet(tmp_path: Path, name: str, table: pa.Table) -> Path:
    path = tmp_path / name
    pq.write_table(table, path)
    return path


def test_import_onto_an_existing_file(tmp_path: Path, capsys):
    src = _parquet(tmp_path, "d.parquet", pa.table({"day": [1, 2]}))
    afile = tmp_path / "afile"
    afile.write_text("x")
    code, _, err = run(capsys, "import", afile, "--from", src, "--spec", "identity(day)")
    assert code == 1
    assert "is an existing file" in one_line(err)
    assert afile.read_text() == "x"


@pytest.mark.parametrize(
    "spec",
    [
        '[{"source": "day", "transform": "identity"}]',
        '{"fields": [{"source": "day", "transform": "identity"}]}',
        "identity(day)",
        "day",
    ],
)
def test_import_takes_an_inline_spec(tmp_path: Path, capsys, spec: str):
    src = _parquet(tmp_path, "d.parquet", pa.table({"day": [1, 2, 2], "v": [1, 2, 3]}))
    code, out, err = run(capsys, "import", tmp_path / "ns", "--from", src, "--spec", spec)
    assert code == 0, err
    assert "created namespace with 3 rows" in out and "in 2 partition tables" in out
    one = _parquet(tmp_path, "one.parquet", pa.table({"day": [7], "v": [4]}))
    code, out, err = run(capsys, "import", tmp_path / "ns", "--from", one)
    assert code == 0, err
    assert out.startswith("appended 1 row;"), out


def test_import_spec_file_still_works(tmp_path: Path, capsys):
    src = _parquet(tmp_path, "d.parquet", pa.table({"day": [1, 2]}))
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps([{"source": "day", "transform": "identity"}]))
    code, _, err = run(capsys, "import", tmp_path / "ns", "--from", src, "--spec", spec)
    assert code == 0, err
    code, _, err = run(
        capsys, "import", tmp_path / "ns2", "--from", src, "--spec", tmp_path / "missing.json"
    )
    assert code == 1 and "does not exist" in one_line(err)


def test_inspect_names_columns_and_sorts_partitions(demo_dir: Path, capsys):
    code, out, _ = run(capsys, "inspect", demo_dir / "events")
    assert code == 0
    assert "v1: event_date=identity(event_date)" in out
    assert "event_year=year(event_date), country=identity(country)" in out
    assert "source ids" not in out
    code, out, _ = run(capsys, "inspect", demo_dir / "orders")
    assert "customer_id_bucket_16=bucket(16, customer_id)" in out
    buckets = [
        int(line.split("=")[1].split()[0])
        for line in out.splitlines()
        if line.startswith("  v1 customer_id_bucket_16=")
    ]
    assert buckets == sorted(buckets) == list(range(16))


def test_expire_prints_sizes_in_inspect_units(tmp_path: Path, capsys):
    import lance_sql

    ns = lance_sql.PartitionedNamespace.create(
        tmp_path / "ns", pa.schema([("k", pa.int64())]), "bucket(2, k)"
    )
    for i in range(3):
        ns.append(pa.table({"k": [i]}))
    code, out, err = run(capsys, "expire", tmp_path / "ns", "--older-than", "0s")
    assert code == 0, err
    assert out.rstrip().endswith(("B)", "KiB)", "MiB)", "GiB)")) and " bytes)" not in out, out


def test_demo_labels_each_statement_of_a_multi_statement_example(tmp_path: Path, capsys):
    from lance_sql.cli.demo import demo_context, examples_dir, run_example
    from lance_sql.cli.demo_data import build_demo

    folder, _ = build_demo(tmp_path / "demo")
    import io

    out = io.StringIO()
    run_example(examples_dir() / "06_dml.sql", demo_context(folder), folder, out)
    text = out.getvalue()
    for stmt in ("> CREATE TABLE", "> INSERT INTO daily", "> DELETE FROM daily", "> MERGE INTO"):
        assert stmt in text, text


def test_demo_data_only_builds_the_namespaces_and_runs_no_query(tmp_path: Path, capsys):
    code, out, err = run(capsys, "demo", "--dir", tmp_path / "demo", "--data-only")
    assert code == 0, err
    assert "created demo namespaces" in out and "===" not in out
    assert (tmp_path / "demo" / "events" / "__manifest").is_dir()


def test_cli_docs_show_the_demo_join_verdict_it_prints(demo_dir: Path):
    """docs/cli.md quotes the demo's storage-partitioned verdict: it must be the real one."""
    import io

    from lance_sql.cli.demo import demo_context, examples_dir, run_example

    out = io.StringIO()
    example = examples_dir() / "02_storage_partitioned_join.sql"
    run_example(example, demo_context(demo_dir), demo_dir, out)
    lines = out.getvalue().splitlines()
    verdict = next(ln for ln in lines if ln.startswith("storage-partitioned:"))
    docs = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    assert verdict in docs, verdict
