"""Vector and text indexes on a namespace: one commit, kept by writes, small tables flat.

Coverage is read from pylance's own index statistics at the pinned versions
(``index_coverage``); searches are checked against what pylance reports.
"""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import lance_sql
from lance_sql.cli.main import main
from lance_sql.tables.namespace import writer
from lance_sql.tables.namespace.indexes import NamespaceIndexError

DIM = 16
SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64(), nullable=False),
        ("region", pa.string()),
        ("txt", pa.string()),
        ("emb", pa.list_(pa.float32(), DIM)),
    ]
)
SPEC = [{"field_id": "region", "source": "region", "transform": {"type": "identity"}}]


def _rows(start: int, n: int, region: str) -> pa.Table:
    rng = np.random.default_rng(start)
    v = rng.random((n, DIM), dtype=np.float32)
    return pa.table(
        {
            "id": np.arange(start, start + n),
            "region": [region] * n,
            "txt": [f"w{i % 5} common" for i in range(n)],
            "emb": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), DIM),
        },
        schema=SCHEMA,
    )


def _ns(tmp_path: Path) -> lance_sql.PartitionedNamespace:
    ns = lance_sql.PartitionedNamespace.create(tmp_path / "ns", SCHEMA, SPEC)
    ns.append(pa.concat_tables([_rows(0, 400, "a"), _rows(1000, 300, "b"), _rows(2000, 20, "s")]))
    return ns


def _coverage(ns: lance_sql.PartitionedNamespace, index: str) -> dict[str, dict]:
    region = {e.object_id: e for e in ns.tables()}
    parts = {r["object_id"]: r["partition_field_region"] for r in ns.partitions().to_pylist()}
    assert set(parts) == set(region)
    return {
        parts[r["object_id"]]: r for r in ns.index_coverage().to_pylist() if r["index"] == index
    }


@pytest.mark.parametrize(
    "index_type", ["IVF_PQ", "IVF_HNSW_SQ", "IVF_HNSW_PQ", "IVF_FLAT", "IVF_SQ"]
)
def test_vector_index_one_commit_small_tables_flat(tmp_path: Path, index_type: str) -> None:
    ns = _ns(tmp_path)
    before = ns.manifest_version
    ix = ns.create_index("emb", index_type)
    assert ns.manifest_version == before + 1
    assert [(i.name, i.index_type) for i in ns.list_indexes()] == [("emb_idx", index_type)]
    cov = _coverage(ns, ix.name)
    assert cov["a"]["present"] and cov["a"]["indexed_rows"] == 400
    assert cov["b"]["present"] and cov["b"]["unindexed_fragments"] == 0
    assert not cov["s"]["present"]  # 20 rows < min_rows: searched flat
    rep = ns.search("emb", np.zeros(DIM, np.float32), k=3, explain=True)
    modes = {t.object_id: t.mode for t in rep.tables}
    assert sorted(modes.values()) == ["flat", "index", "index"]
    assert {t.index_type for t in rep.tables if t.mode == "index"} == {index_type}


def test_writes_keep_vector_and_text_indexes(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.create_index("emb", "IVF_FLAT")
    ns.create_index("txt")  # a string column: INVERTED by default
    assert {i.index_type for i in ns.list_indexes()} == {"IVF_FLAT", "INVERTED"}
    ns.append(pa.concat_tables([_rows(5000, 300, "c"), _rows(6000, 10, "d"), _rows(7000, 50, "a")]))
    emb = _coverage(ns, "emb_idx")
    assert emb["c"]["present"] and emb["c"]["indexed_rows"] == 300  # new table: same commit
    assert not emb["d"]["present"]  # new but small: flat
    assert emb["a"]["unindexed_fragments"] == 0 and emb["a"]["indexed_rows"] == 450
    txt = _coverage(ns, "txt_idx")
    assert all(r["present"] and r["unindexed_fragments"] == 0 for r in txt.values())
    ns.append(_rows(8000, 300, "s"))  # the small table grows past min_rows: built now
    assert _coverage(ns, "emb_idx")["s"]["present"]
    assert ns.optimize_indexes() == 0  # nothing left to do
    hit = ns.search("txt", "w3", k=1000, where="region = 'c'")
    assert hit.num_rows == 60


def test_optimize_indexes_catches_up_tables_written_without_upkeep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tables written without index upkeep (another tool: here lance-sql's writer with its
    upkeep switched off) get new versions with every index, in one commit."""
    ns = _ns(tmp_path)
    ns.create_index("emb", "IVF_FLAT")
    ns.create_index("txt")
    with monkeypatch.context() as m:
        m.setattr(writer, "maintain_indexes", lambda entry, version, *a, **k: version)
        ns.append(pa.concat_tables([_rows(5000, 300, "c"), _rows(7000, 50, "a")]))
    emb = _coverage(ns, "emb_idx")
    assert not emb["c"]["present"] and emb["a"]["unindexed_fragments"] == 1
    region = {r["object_id"]: r["partition_field_region"] for r in ns.partitions().to_pylist()}
    pins = {region[e.object_id]: e.read_version for e in ns.tables()}
    ids = sorted(ns.to_table(columns=["id"]).column("id").to_pylist())
    before = ns.manifest_version
    assert ns.optimize_indexes() == 2  # "a" and "c"
    assert ns.manifest_version == before + 1
    now = {region[e.object_id]: e.read_version for e in ns.tables()}
    assert {r for r in pins if now[r] != pins[r]} == {"a", "c"}
    assert all(now[r] > pins[r] for r in ("a", "c"))
    emb = _coverage(ns, "emb_idx")
    assert emb["c"]["present"] and emb["c"]["indexed_rows"] == 300
    assert emb["a"]["unindexed_fragments"] == 0 and emb["a"]["indexed_rows"] == 450
    assert not emb["s"]["present"]  # still below min_rows: searched flat
    txt = _coverage(ns, "txt_idx")
    assert all(r["present"] and r["unindexed_fragments"] == 0 for r in txt.values())
    assert sorted(ns.to_table(columns=["id"]).column("id").to_pylist()) == ids
    assert ns.search("txt", "w3", k=1000, where="region = 'c'").num_rows == 60
    assert ns.optimize_indexes() == 0 and ns.manifest_version == before + 1


def test_min_rows_parameter_and_drop_index(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.create_index("emb", "IVF_FLAT", min_rows=1000)
    assert not any(r["present"] for r in ns.index_coverage().to_pylist())
    ns.drop_index("emb_idx")
    ns.create_index("emb", "IVF_FLAT", min_rows=10)
    assert all(r["present"] for r in ns.index_coverage().to_pylist())
    ns.drop_index("emb_idx")
    assert ns.list_indexes() == []
    assert ns.index_coverage().num_rows == 0


def test_alias_and_errors(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    assert ns.create_scalar_index("id").index_type == "BTREE"
    ns.create_scalar_index("txt", "NGRAM", name="txt_ngram")
    with pytest.raises(NamespaceIndexError, match="no top-level column"):
        ns.create_index("nope", "IVF_PQ")
    with pytest.raises(NamespaceIndexError, match="needs a fixed-size list"):
        ns.create_index("txt", "IVF_PQ")
    with pytest.raises(NamespaceIndexError, match="needs a string column"):
        ns.create_index("emb", "INVERTED")
    with pytest.raises(NamespaceIndexError, match="partition table") as exc:
        ns.create_index("id", "NO_SUCH_KIND", name="bad")
    assert ".rs:" not in str(exc.value) and "\n" not in str(exc.value)


def test_inspect_shows_vector_and_text_indexes(tmp_path: Path) -> None:
    ns = _ns(tmp_path)
    ns.create_index("emb", "IVF_PQ")
    ns.create_index("txt", "INVERTED")
    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["inspect", str(ns.root)])
    text = out.getvalue()
    assert rc == 0
    assert "index emb_idx: IVF_PQ on emb" in text
    assert "index txt_idx: INVERTED on txt" in text
    assert "emb_idx=missing" in text and "emb_idx=400/400" in text
