"""The ``lance-sql`` command, run in-process through ``main([...])``.

Every subcommand is exercised on real demo namespaces (pylance-written), with
its error paths: each must print exactly one ``lance-sql: error:`` line naming
the object at fault and return the documented exit code, never a traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from lance_sql import PartitionedNamespace
from lance_sql.cli.main import main
from lance_sql.cli.statements import header_tags, split_statements

D10_US = "event_date = DATE '2025-12-10' AND country = 'US'"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def assert_one_error(err: str, *needles: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("lance-sql: error: "), err
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0], (n, err)


# ---- sql -------------------------------------------------------------------


def test_sql_prints_table(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys,
        "sql",
        "--ns",
        f"events={demo_dir / 'events'}",
        "SELECT country, count(*) AS n FROM events GROUP BY country ORDER BY country",
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == ["country", "|", "n"]
    assert any(ln.startswith("US ") for ln in lines)
    assert lines[-1] == "(5 rows)"
    total = sum(int(ln.split("|")[1]) for ln in lines[2:-1])
    assert total == PartitionedNamespace.open(demo_dir / "events").count_rows()


def test_sql_file_with_several_statements(
    demo_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "q.sql"
    f.write_text(
        "-- two statements; the ';' in the string is not a separator\n"
        "SELECT 'a;b' AS s;\nSELECT count(*) AS n FROM orders;\n"
    )
    code, out, err = run(
        capsys, "sql", "--ns", f"orders={demo_dir / 'orders'}", "-f", f, "--timing"
    )
    assert code == 0, err
    assert "-- statement 1" in out and "-- statement 2" in out
    assert "a;b" in out and "4000" in out and "time:" in out


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_sql_output_formats(
    demo_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    target = tmp_path / f"out.{fmt}"
    q = f"SELECT id, country FROM events WHERE {D10_US} ORDER BY id"
    code, out, err = run(
        capsys,
        "sql",
        "--ns",
        f"events={demo_dir / 'events'}",
        q,
        "--format",
        fmt,
        "--output",
        target,
    )
    assert code == 0, err
    assert f"to {target}" in out
    if fmt == "parquet":
        t = pq.read_table(target)
    elif fmt == "csv":
        t = pacsv.read_csv(target)
    else:
        rows = [json.loads(ln) for ln in target.read_text().splitlines()]
        t = pa.Table.from_pylist(rows)
    assert t.num_rows > 0
    assert set(t.column("country").to_pylist()) == {"US"}
    ids = t.column("id").to_pylist()
    assert ids == sorted(ids)


def test_sql_lance_dataset(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # any partition table is a plain Lance dataset
    loc = PartitionedNamespace.open(demo_dir / "orders").partitions().column("location")[0]
    uri = demo_dir / "orders" / loc.as_py()
    code, out, err = run(capsys, "sql", "--lance", f"t={uri}", "SELECT count(*) AS n FROM t")
    assert code == 0, err
    assert "(1 row)" in out


def test_sql_errors(demo_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ns = f"events={demo_dir / 'events'}"
    code, _, err = run(capsys, "sql", "--ns", ns, "SELEC * FROM events")
    assert code == 1
    assert_one_error(err, "SQL")
    code, _, err = run(capsys, "sql", "--ns", ns, "SELECT * FROM missing_table")
    assert code == 1
    assert_one_error(err, "missing_table")
    code, _, err = run(capsys, "sql", "--ns", f"x={tmp_path / 'nowhere'}", "SELECT 1")
    assert code == 1
    assert_one_error(err, "nowhere", "does not exist")
    code, _, err = run(capsys, "sql", "--ns", "no-equals-sign", "SELECT 1")
    assert code == 2
    assert_one_error(err, "--ns", "no-equals-sign")
    code, _, err = run(capsys, "sql", "--ns", ns)
    assert code == 2
    assert_one_error(err, "QUERY")
    code, _, err = run(capsys, "sql", "-f", tmp_path / "none.sql")
    assert code == 1
    assert_one_error(err, "none.sql")
    code, _, err = run(capsys, "sql", "SELECT 1", "--format", "csv")
    assert code == 2
    assert_one_error(err, "--output")


def test_bad_flags_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "sql", "--no-such-flag", "SELECT 1")
    assert code == 2
    assert "unrecognized arguments: --no-such-flag" in err
    code, _, err = run(capsys, "frobnicate")
    assert code == 2
    assert "invalid choice" in err
    code, _, err = run(capsys)
    assert code == 2
    code, out, _ = run(capsys, "--help")
    assert code == 0
    assert "demo" in out and "partitions" in out


def test_debug_shows_traceback(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys,
        "--debug",
        "sql",
        "--ns",
        f"events={demo_dir / 'events'}",
        "SELECT * FROM missing_table",
    )
    assert code == 1
    assert "Traceback" in err and "lance-sql: error:" in err


# ---- explain ---------------------------------------------------------------


def test_explain_shows_pruning(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys,
        "explain",
        "--ns",
        f"events={demo_dir / 'events'}",
        f"SELECT * FROM events WHERE {D10_US}",
    )
    assert code == 0, err
    assert "LanceNamespaceScan:" in out
    assert "events: 2/19 partition tables read" in out


def test_explain_analyze_and_errors(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "explain", "--analyze", "--ns", f"c={demo_dir / 'clicks'}", "SELECT count(*) FROM c"
    )
    assert code == 0, err
    assert "c: 20/20 partition tables read" in out
    code, _, err = run(capsys, "explain", "--ns", f"c={demo_dir / 'clicks'}", "SELECT nope FROM c")
    assert code == 1
    assert_one_error(err, "nope")


# ---- inspect ---------------------------------------------------------------


def test_inspect_text_and_json(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "inspect", demo_dir / "events")
    assert code == 0, err
    assert "__manifest version: " in out
    assert "v1: event_date=identity" in out
    assert "v2: event_year=year" in out and "country=identity" in out
    assert "(14 partition tables)" in out and "(5 partition tables)" in out
    assert "total size:" in out
    code, out, err = run(capsys, "inspect", "--json", demo_dir / "events")
    assert code == 0, err
    rep = json.loads(out)
    ns = PartitionedNamespace.open(demo_dir / "events")
    assert rep["manifest_version"] == ns.manifest_version
    assert rep["partitions_per_spec"] == {"1": 14, "2": 5}
    assert rep["rows"] == 4000
    assert rep["total_bytes"] == sum(p["bytes"] for p in rep["partitions"]) > 0
    assert rep["specs"]["2"]["fields"][0]["transform"] == {"type": "year"}


def test_inspect_errors(demo_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "inspect", tmp_path / "absent")
    assert code == 1
    assert_one_error(err, "absent", "does not exist")
    code, _, err = run(capsys, "inspect", demo_dir)  # a folder, not a namespace
    assert code == 1
    assert_one_error(err, str(demo_dir), "not a partitioned namespace")


# ---- partitions ------------------------------------------------------------


def test_partitions_json(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "partitions", demo_dir / "events", "--where", D10_US)
    assert code == 0, err
    doc = json.loads(out)
    assert (doc["selected"], doc["total"]) == (2, 19)
    by_version = {p["spec_version"]: p for p in doc["partitions"]}
    assert by_version[1]["values"] == {"event_date": "2025-12-10"}
    assert by_version[2]["values"] == {"event_year": 2025, "country": "US"}
    for p in doc["partitions"]:
        assert (demo_dir / "events" / p["location"]).is_dir()
        assert p["read_version"] >= 1
    code, out, _ = run(capsys, "partitions", demo_dir / "events")
    assert json.loads(out)["selected"] == 19


def test_partitions_errors(
    demo_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "partitions", demo_dir / "events", "--where", "country = (")
    assert code == 1
    assert_one_error(err, "country = (")
    assert "\x1b" not in err
    code, _, err = run(capsys, "partitions", demo_dir / "events", "--where", "no_such_col = 1")
    assert code == 1
    assert_one_error(err, "no_such_col")
    code, _, err = run(capsys, "partitions", tmp_path / "absent", "--where", "x = 1")
    assert code == 1
    assert_one_error(err, "absent")


# ---- import ----------------------------------------------------------------


def _data(n: int = 600) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "day": pa.array([20000 + i % 4 for i in range(n)], pa.date32()),
            "v": pa.array([float(i) for i in range(n)]),
        }
    )


def test_import_creates_then_appends(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pq.write_table(_data(), tmp_path / "d.parquet")
    pacsv.write_csv(_data(), tmp_path / "d.csv")
    (tmp_path / "spec.json").write_text(json.dumps([{"source": "day", "transform": "identity"}]))
    root = tmp_path / "ns"
    code, out, err = run(
        capsys,
        "import",
        root,
        "--from",
        tmp_path / "d.parquet",
        "--spec",
        tmp_path / "spec.json",
        "--progress",
    )
    assert code == 0, err
    assert "created namespace with 600 rows" in out
    code, out, err = run(capsys, "import", root, "--from", tmp_path / "d.csv")
    assert code == 0, err
    assert "appended 600 rows" in out
    ns = PartitionedNamespace.open(root)
    assert ns.count_rows() == 1200
    assert ns.partitions().num_rows == 4
    assert ns.schema.field("day").type == pa.date32()
    # JSON lines, with an explicit schema file for a new namespace
    rows = _data(50).to_pylist()
    (tmp_path / "d.json").write_text(
        "".join(json.dumps({**r, "day": r["day"].isoformat()}) + "\n" for r in rows)
    )
    from lance_sql.spec.arrow_json import schema_to_json

    (tmp_path / "schema.json").write_text(json.dumps(schema_to_json(_data().schema)))
    code, out, err = run(
        capsys,
        "import",
        tmp_path / "ns2",
        "--from",
        tmp_path / "d.json",
        "--spec",
        tmp_path / "spec.json",
        "--schema",
        tmp_path / "schema.json",
    )
    assert code == 0, err
    assert PartitionedNamespace.open(tmp_path / "ns2").count_rows() == 50


def test_import_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pq.write_table(_data(), tmp_path / "d.parquet")
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "wrong.json").write_text(json.dumps([{"source": "nope", "transform": "identity"}]))
    (tmp_path / "spec.json").write_text(json.dumps([{"source": "day", "transform": "identity"}]))
    (tmp_path / "garbage.parquet").write_bytes(b"this is not parquet")
    root = tmp_path / "ns"
    cases = [
        (["--from", tmp_path / "d.parquet"], ["--spec is required"]),
        (
            ["--from", tmp_path / "d.parquet", "--spec", tmp_path / "bad.json"],
            ["bad.json", "not valid JSON"],
        ),
        (["--from", tmp_path / "d.parquet", "--spec", tmp_path / "wrong.json"], ["nope"]),
        (["--from", tmp_path / "d.parquet", "--spec", tmp_path / "absent.json"], ["absent.json"]),
        (["--from", tmp_path / "missing.csv", "--spec", tmp_path / "spec.json"], ["missing.csv"]),
        (
            ["--from", tmp_path / "garbage.parquet", "--spec", tmp_path / "spec.json"],
            ["garbage.parquet"],
        ),
        (["--from", tmp_path / "d.txt", "--spec", tmp_path / "spec.json"], ["d.txt", "format"]),
    ]
    for extra, needles in cases:
        code, _, err = run(capsys, "import", root, *extra)
        assert code == 1, (extra, err)
        assert_one_error(err, *needles)
        assert not (root / "__manifest").exists()
    code, _, err = run(capsys, "import", root)  # --from missing: argparse usage error
    assert code == 2
    assert "--from" in err


# ---- helpers ---------------------------------------------------------------


def test_split_statements_and_tags() -> None:
    text = (
        "-- Title: x\n-- Tables: a, b\nSELECT ';' AS s; -- c;\nSELECT \"a;b\" FROM t;;\n-- only\n"
    )
    assert split_statements(text) == [
        "-- Title: x\n-- Tables: a, b\nSELECT ';' AS s",
        '-- c;\nSELECT "a;b" FROM t',
    ]
    assert header_tags(text) == {"title": "x", "tables": "a, b"}
