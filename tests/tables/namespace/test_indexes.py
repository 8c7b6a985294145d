"""Scalar indexes on a namespace: built in every partition table, kept by every write.

Each case checks the index coverage of every partition table (pylance's own
index statistics at the pinned versions), that the rows read back equal a
pyarrow model, and where it matters that pylance's scanner plans the index.
"""

from __future__ import annotations

from pathlib import Path

import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_sql
from lance_sql.errors import CommitConflictError, LanceSqlError
from lance_sql.tables.lance_scanner import lance_scanner
from lance_sql.tables.namespace.index_upkeep import INDEXES_KEY, NamespaceIndexError

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("region", pa.string()),
        ("amount", pa.int64()),
        ("tags", pa.list_(pa.string())),
    ]
)
SPEC = [{"field_id": "region", "source": "region", "transform": {"type": "identity"}}]


def _rows(ids: list[int], regions: int = 4, amount: int = 1) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "region": [f"r{i % regions}" for i in ids],
            "amount": [amount] * len(ids),
            "tags": [[f"t{i % 3}"] for i in ids],
        },
        schema=SCHEMA,
    )


def _ns(tmp_path: Path, n: int = 40) -> lance_sql.PartitionedNamespace:
    ns = lance_sql.PartitionedNamespace.create(tmp_path / "ns", SCHEMA, SPEC)
    ns.append(_rows(list(range(n))))
    return ns


def _fully_covered(ns: lance_sql.PartitionedNamespace) -> None:
    """Every partition table has every namespace index, covering all its fragments."""
    cov = ns.index_coverage().to_pylist()
    names = {i.name for i in ns.list_indexes()}
    assert {(r["object_id"], r["index"]) for r in cov} == {
        (e.object_id, n) for e in ns.tables() for n in names
    }
    for r in cov:
        assert r["present"], r
        assert r["unindexed_fragments"] == 0, r


def _sorted_ids(ns: lance_sql.PartitionedNamespace, flt: pc.Expression | None = None) -> list[int]:
    return sorted(ns.to_table(["id"], filter=flt).column("id").to_pylist())


def test_create_builds_the_index_everywhere_in_one_commit(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    version = ns.manifest_version
    index = ns.create_scalar_index("id", "BTREE")
    assert ns.manifest_version == version + 1
    assert index.name == "id_idx" and index.field_id == 0 and index.index_type == "BTREE"
    assert ns.list_indexes() == [index]
    _fully_covered(ns)
    # each pinned table version holds the index; a reopened namespace sees it
    again = lance_sql.PartitionedNamespace.open(ns.root)
    assert again.list_indexes() == [index]
    for e in again.tables():
        ds = lance.dataset(e.uri, version=e.read_version)
        assert [i.name for i in ds.describe_indices()] == ["id_idx"]
    # the version before is time travel without the index
    old = lance_sql.PartitionedNamespace.open(ns.root, version=version)
    assert old.list_indexes() == []


def test_pushed_filters_use_the_index_in_every_partition_scan(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.create_scalar_index("id")
    flt = pc.field("id") == 13
    for unit in ns.scan_units():
        inner = unit._inner
        scanner = lance_scanner(
            inner.dataset, columns=["id"], filter=flt, fragments=inner._fragments()
        )
        assert "ScalarIndexQuery" in scanner.explain_plan(), scanner.explain_plan()
        assert "id_idx" in scanner.analyze_plan()
    assert _sorted_ids(ns, flt) == [13]


def test_sql_point_lookup_over_an_indexed_namespace(tmp_path: Path) -> None:
    ns = _ns(tmp_path, 200)
    ns.create_scalar_index("id")
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", str(ns.root))
    got = ctx.sql("SELECT id, region FROM t WHERE id = 77 OR id = 150").to_arrow_table()
    assert sorted(got.column("id").to_pylist()) == [77, 150]
    got = ctx.sql("SELECT count(*) AS n FROM t WHERE id < 50 AND region = 'r1'").to_arrow_table()
    assert got.column("n").to_pylist() == [sum(1 for i in range(50) if i % 4 == 1)]


def test_appends_to_existing_and_new_partitions_are_indexed_in_the_same_commit(
    tmp_path: Path,
) -> None:
    ns = _ns(tmp_path)
    ns.create_scalar_index("id")
    ns.create_scalar_index("region", "BITMAP")
    version = ns.manifest_version
    ns.append(_rows([100, 101, 102, 103, 104], regions=6))  # r4, r5 new; r0..r2 appended
    assert ns.manifest_version == version + 1
    assert len(ns.tables()) == 6
    _fully_covered(ns)
    for _ in range(3):
        ns.append(_rows([200, 205]))
    _fully_covered(ns)
    assert (
        _sorted_ids(ns, pc.field("id") >= 100) == [100, 101, 102, 103, 104] + [200] * 3 + [205] * 3
    )
    assert _sorted_ids(ns, pc.field("region") == "r4") == [100]


def test_every_lifecycle_operation_keeps_the_index(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.create_scalar_index("id")
    model = set(range(40))
    assert ns.delete("id = 3") == 1
    model.discard(3)
    _fully_covered(ns)
    assert ns.delete("region = 'r2'") == 10  # a whole partition leaves __manifest
    model -= {i for i in range(40) if i % 4 == 2}
    _fully_covered(ns)
    assert ns.update({"region": "'r9'"}, "id = 5") == 1  # moves to a new partition
    _fully_covered(ns)
    result = ns.merge(
        _rows([7, 300]),
        on=["id"],
        when_matched_update=True,
        when_not_matched_insert=True,
    )
    assert result.rows == 2
    model.add(300)
    _fully_covered(ns)
    ns.overwrite(_rows([1, 401]), partitions="dynamic")  # replaces r1 only
    model = {i for i in model if i % 4 != 1 or i == 5} | {1, 401}  # 5 moved to r9
    _fully_covered(ns)
    ns.compact()
    _fully_covered(ns)
    assert _sorted_ids(ns) == sorted(model)
    for i in [*sorted(model)[:5], 401]:
        assert _sorted_ids(ns, pc.field("id") == i) == [i]
    ns.overwrite(_rows([1, 2, 3]))  # full overwrite: new tables
    _fully_covered(ns)
    assert _sorted_ids(ns, pc.field("id") == 2) == [2]


def test_staged_writes_are_indexed_at_commit(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.create_scalar_index("id")
    a = lance_sql.PartitionedNamespace.open(ns.root).stage(_rows([50, 51]), write_id="j")
    b = lance_sql.PartitionedNamespace.open(ns.root).stage(_rows([52, 53], 8), write_id="j")
    ns.commit_staged([a, b])
    _fully_covered(ns)
    assert _sorted_ids(ns, pc.field("id") > 49) == [50, 51, 52, 53]


def test_drop_index_removes_it_from_every_table_in_one_commit(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.create_scalar_index("id")
    ns.create_scalar_index("tags", "LABEL_LIST")
    version = ns.manifest_version
    ns.drop_index("id_idx")
    assert ns.manifest_version == version + 1
    assert [i.name for i in ns.list_indexes()] == ["tags_idx"]
    for e in ns.tables():
        ds = lance.dataset(e.uri, version=e.read_version)
        names = [i.name for i in ds.describe_indices()]
        assert names == ["tags_idx"]
    ns.append(_rows([500]))  # a dropped index is not rebuilt
    _fully_covered(ns)
    assert INDEXES_KEY in ns.snapshot.properties


def test_replace_rebuilds_and_duplicates_are_refused(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.create_scalar_index("id")
    with pytest.raises(NamespaceIndexError, match="'id_idx' already exists"):
        ns.create_scalar_index("id", "BITMAP")
    index = ns.create_scalar_index("id", "BITMAP", replace=True)
    assert ns.list_indexes() == [index]
    _fully_covered(ns)


def test_errors_are_typed_and_name_the_column_and_table(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    version = ns.manifest_version
    with pytest.raises(NamespaceIndexError, match="column 'nope'"):
        ns.create_scalar_index("nope")
    with pytest.raises(NamespaceIndexError, match="no index named 'x'"):
        ns.drop_index("x")
    with pytest.raises(
        NamespaceIndexError, match=r"column 'amount' failed in partition table 'v1\$"
    ) as e:
        ns.create_scalar_index("amount", "LABEL_LIST")  # LABEL_LIST needs a list column
    assert e.value.table is not None
    assert isinstance(e.value, LanceSqlError)
    # nothing was committed by any of them
    assert lance_sql.PartitionedNamespace.open(ns.root).manifest_version == version
    assert ns.list_indexes() == []


def test_a_writer_that_started_before_the_index_cannot_rebase_over_it(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    writer = ns._writer("append", None)
    writer.write(_rows([900], regions=7))  # a new partition the index would miss
    lance_sql.PartitionedNamespace.open(ns.root).create_scalar_index("id")
    with pytest.raises(CommitConflictError, match="indexes changed"):
        writer.commit()
    writer.abort()
    ns.refresh()
    ns.append(_rows([900], regions=7))  # the retried append is indexed
    _fully_covered(ns)


def test_an_index_on_an_empty_namespace_covers_later_partitions(tmp_path: Path) -> None:
    ns = lance_sql.PartitionedNamespace.create(tmp_path / "ns", SCHEMA, SPEC)
    ns.create_scalar_index("id")
    assert ns.tables() == [] and [i.name for i in ns.list_indexes()] == ["id_idx"]
    ns.append(_rows(list(range(10))))
    _fully_covered(ns)


def test_renamed_and_added_columns(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.create_scalar_index("amount")
    ns.rename_column("amount", "value")  # the index follows the field id
    ns.append(pa.table({"id": [41], "region": ["r1"], "value": [5], "tags": [["a"]]}))
    _fully_covered(ns)
    ns.add_columns([pa.field("score", pa.int64())])
    ns.create_scalar_index("score")  # old tables lack the column: not indexed there
    cov = {(r["object_id"], r["index"]): r["present"] for r in ns.index_coverage().to_pylist()}
    assert not any(p for (_, name), p in cov.items() if name == "score_idx")
    assert _sorted_ids(ns, pc.field("value") == 5) == [41]


def test_inspect_shows_index_coverage_per_partition(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from lance_sql.cli.main import main

    ns = _ns(tmp_path)
    ns.create_scalar_index("id")
    ns.add_columns([pa.field("score", pa.int64())])
    ns.create_scalar_index("score", "BITMAP")  # no old table has the column
    root = str(ns.root)
    assert main(["inspect", root, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [i["name"] for i in report["indexes"]] == ["id_idx", "score_idx"]
    for p in report["partitions"]:
        assert p["indexes"] == {"id_idx": "10/10", "score_idx": "missing"}
    assert main(["inspect", root]) == 0
    text = capsys.readouterr().out
    assert "index id_idx: BTREE on id (field id 0)" in text
    assert text.count("indexes: id_idx=10/10, score_idx=missing") == 4
