"""CLI: `import` applies the one schema rule (schema_rule); `inspect` warns about time fields."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from lance_sql import PartitionedNamespace
from lance_sql.cli.main import main

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), pa.field("n", pa.int32()), ("s", pa.utf8())]
)


def _run(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def test_import_follows_the_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "ns"
    PartitionedNamespace.create(str(root), SCHEMA, "bucket(2, id)")
    # Parquet is typed: a string id is refused, not parsed (it used to be cast)
    pq.write_table(pa.table({"id": ["1"], "n": pa.array([1], pa.int32())}), tmp_path / "s.parquet")
    code, err = _run(capsys, "import", root, "--from", tmp_path / "s.parquet")
    assert code != 0 and "'id'" in err and "string" in err
    # an extra column is refused, not dropped
    pq.write_table(pa.table({"id": [1], "zz": [2]}), tmp_path / "x.parquet")
    code, err = _run(capsys, "import", root, "--from", tmp_path / "x.parquet")
    assert code != 0 and "'zz'" in err
    assert PartitionedNamespace.open(str(root)).count_rows() == 0
    # CSV has no types: its values are read as the namespace types; missing nullable -> NULL
    pacsv.write_csv(pa.table({"id": [1, 2], "n": [5, 6]}), tmp_path / "ok.csv")
    code, err = _run(capsys, "import", root, "--from", tmp_path / "ok.csv")
    assert code == 0, err
    got = PartitionedNamespace.open(str(root)).to_table().sort_by("id").to_pylist()
    assert got == [{"id": 1, "n": 5, "s": None}, {"id": 2, "n": 6, "s": None}]
    # a CSV value that is not a number of the namespace type is refused, naming the column
    (tmp_path / "bad.csv").write_text("id,n\n3,x\n")
    code, err = _run(capsys, "import", root, "--from", tmp_path / "bad.csv")
    assert code != 0 and "'n'" in err


def test_inspect_warns_about_day_of_month_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("ts", pa.timestamp("us", "UTC"))])
    root = tmp_path / "days"
    PartitionedNamespace.create(str(root), schema, "day(ts), bucket(4, id)")
    code = main(["inspect", str(root)])
    out = capsys.readouterr().out
    assert code == 0
    assert "warning: spec v1: partition field 'ts_day' is day(ts), the day of month" in out
    fine = tmp_path / "fine"
    PartitionedNamespace.create(str(fine), schema, "days(ts)")
    assert main(["inspect", str(fine)]) == 0
    assert "warning" not in capsys.readouterr().out
