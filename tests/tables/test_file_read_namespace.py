"""SQL on a partitioned namespace of small tables (read from their data files by
tables/file_read.py) equals plain DataFusion over the partition tables read by
pylance, at the latest and at pinned ``__manifest`` versions, and equals
lance-sql's own answers with the file route switched off (test only).
"""

from __future__ import annotations

import lance
import pyarrow as pa
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from small_partitions import SCHEMA as _NS_SCHEMA
from small_partitions import rows as _ns_rows

from lance_sql.tables import file_read

_NS_SPEC = {
    "id": 1,
    "fields": [
        {
            "field_id": "p",
            "source_ids": [0],
            "transform": {"type": "identity"},
            "result_type": {"type": "int32"},
        }
    ],
}


def _ns_reference(root: str, version: int) -> pa.Table:
    """Every partition table of ``__manifest`` version ``version``, read by pylance."""
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    ns = PartitionedNamespace.open(root, version=version)
    names = _NS_SCHEMA.names
    parts = [
        lance.dataset(e.uri, version=e.read_version).to_table(columns=names) for e in ns.tables()
    ]
    return pa.concat_tables(parts).cast(_NS_SCHEMA) if parts else _NS_SCHEMA.empty_table()


def _rounded(t: pa.Table) -> list:
    """Rows with sums rounded (DataFusion adds floats in partition order)."""
    return [
        {k: round(x, 6) if isinstance(x, float) else x for k, x in r.items()} for r in t.to_pylist()
    ]


_QUERIES = [
    "SELECT count(*) AS c FROM t",
    "SELECT * FROM t ORDER BY id",
    "SELECT x FROM t ORDER BY x NULLS FIRST, 1",
    "SELECT s, id FROM t ORDER BY s, id",
    "SELECT p, count(*) AS c, sum(x) AS sx FROM t GROUP BY p ORDER BY p",
]


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # shrinking namespaces is slow
)
@given(
    n=st.integers(0, 400),
    parts=st.integers(1, 12),
    ops=st.lists(st.sampled_from(["append", "delete", "update", "merge", "compact"]), max_size=4),
    seed=st.integers(0, 100),
)
def test_namespace_sql_equals_datafusion_over_pylance_reads(tmp_path_factory, n, parts, ops, seed):
    """SQL on a namespace (latest and each pinned ``__manifest`` version) equals plain
    DataFusion over memory tables read by pylance from each pinned partition table."""
    import datafusion

    import lance_sql
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    root = str(tmp_path_factory.mktemp("ns") / "ns")
    ns = PartitionedNamespace.create(root, _NS_SCHEMA, _NS_SPEC)
    if n:
        ns.append(_ns_rows(0, n, parts))
    for step, op in enumerate(ops):
        k = seed + step
        if op == "append":
            ns.append(_ns_rows(10_000 * (step + 1), 1 + k * 13 % 90, parts))
        elif op == "delete":
            ns.delete(f"id % {2 + k % 5} = {k % 2}")
        elif op == "update":
            ns.update({"s": "'u'", "x": "x + 1"}, where=f"id % 3 = {k % 3}")
        elif op == "merge":
            src = _ns_rows(n // 2, 40, parts)
            ns.merge(src, ["id"], when_matched_update=True, when_not_matched_insert=True)
        elif op == "compact":
            ns.compact(target_rows_per_fragment=64)
    versions = sorted({1, ns.manifest_version, (1 + ns.manifest_version) // 2})
    for v in [None, *versions]:
        ctx = lance_sql.SessionContext()
        ctx.register_namespace("t", root, version=v)
        ref = datafusion.SessionContext()
        table = _ns_reference(root, v or ns.manifest_version)
        batches = table.to_batches() or [pa.RecordBatch.from_pylist([], schema=_NS_SCHEMA)]
        ref.register_record_batches("t", [batches])
        for q in _QUERIES:
            ours = ctx.sql(q).to_arrow_table()
            theirs = ref.sql(q).to_arrow_table()
            assert ours.column_names == theirs.column_names, q
            assert _rounded(ours) == _rounded(theirs), (v, q)


def test_namespace_schema_evolution_reads_the_same_with_the_route_off(tmp_path, monkeypatch):
    """Columns added, renamed and dropped in the namespace (partition tables keep their
    own field ids and names): every query reads the same with the file route switched off."""
    import lance_sql
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    root = str(tmp_path / "ns")
    ns = PartitionedNamespace.create(root, _NS_SCHEMA, _NS_SPEC)
    ns.append(_ns_rows(0, 120, 4))
    ns.add_columns([pa.field("z", pa.int64())])
    ns.rename_column("s", "s2")
    ns.append(
        _ns_rows(500, 60, 6)
        .rename_columns(["p", "id", "x", "s2"])
        .append_column("z", pa.array(range(60), pa.int64()))
    )
    ns.drop_columns(["x"])
    ns.delete("id % 5 = 0")
    ns.update({"z": "id"}, where="id % 3 = 0")
    queries = [
        "SELECT * FROM t ORDER BY id",
        "SELECT count(*) AS c FROM t",
        "SELECT s2, z, id FROM t ORDER BY id",
        "SELECT p, count(z) AS c FROM t GROUP BY p ORDER BY p",
    ]

    def run() -> list[list[dict]]:
        ctx = lance_sql.SessionContext()
        ctx.register_namespace("t", root)
        return [ctx.sql(q).to_arrow_table().to_pylist() for q in queries]

    ours = run()
    with monkeypatch.context() as m:
        m.setattr(file_read, "DIRECT_MAX_ROWS", 0)
        m.setattr(file_read, "DIRECT_MAX_BYTES", 0)
        scanned = run()
    assert ours == scanned
    assert ours[1] == [{"c": 180 - 36}]
    rows = {r["id"]: r for r in ours[0]}
    assert rows[3]["z"] == 3 and rows[4]["z"] is None and rows[503]["z"] == 3
    assert rows[501]["z"] == 501
    assert rows[1]["s2"] == "s1" and "x" not in rows[1]
