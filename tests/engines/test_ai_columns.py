"""Every feature behaves the same whatever the types of the columns it does not read.

Namespaces holding an embedding vector (``fixed_size_list<float32>``), a struct,
a list of structs, a map and large / view strings are compared with the same
namespace without them: partition counts in SQL, DataFrames and ``plan_scan``
(SQL text and pyarrow filters), storage-partitioned joins, the transform-term
prune pass and row operations; rows against plain DataFusion over memory tables.
Before the fix, a vector, a struct with field ids or a list of structs anywhere
in the schema made every pushed filter unreadable (every table was read, without
a word in EXPLAIN) and switched off every plan pass.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import datafusion
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from ai_columns import add_ai_columns
from datafusion import col, lit

import lance_sql
from lance_sql.engines.datafusion.provider import capture_scans
from lance_sql.tables.namespace.namespace import PartitionedNamespace

BASE = pa.schema([("id", pa.int64()), ("region", pa.string()), ("x", pa.int64())])
REGIONS = ["eu", "us", "ap"]
EXTRA = {
    "vector": pa.field("v", pa.list_(pa.float32(), 4)),
    "struct": pa.field("s", pa.struct([("a", pa.int64()), ("tags", pa.list_(pa.string()))])),
    "list_of_struct": pa.field(
        "ls", pa.list_(pa.struct([("k", pa.string()), ("w", pa.float32())]))
    ),
    "map": pa.field("m", pa.map_(pa.string(), pa.string())),
    "large_and_view": pa.field("t", pa.large_string()),
}


def _base_rows(n: int = 24) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "region": pa.array([REGIONS[i % 3] for i in range(n)]),
            "x": pa.array([i * 10 for i in range(n)], pa.int64()),
        }
    )


def _extra_values(kind: str, n: int) -> pa.Array:
    f = EXTRA[kind]
    values: list[Any] = {
        "vector": [[float(i)] * 4 if i % 5 else None for i in range(n)],
        "struct": [{"a": i, "tags": ["t"]} for i in range(n)],
        "list_of_struct": [[{"k": "a", "w": 1.0}] for _ in range(n)],
        "map": [[("k", str(i))] for i in range(n)],
        "large_and_view": [f"t{i}" for i in range(n)],
    }[kind]
    return pa.array(values, f.type)


def _namespace(root: Path, kind: str | None, spec: str = "identity(region)") -> str:
    rows = _base_rows()
    if kind == "all":
        rows = add_ai_columns(rows)
    elif kind is not None:
        rows = rows.append_column(EXTRA[kind], _extra_values(kind, rows.num_rows))
    ns = PartitionedNamespace.create(str(root), rows.schema, spec)
    ns.append(rows)
    return str(root)


def _tables_read(run: Any) -> list[str]:
    with capture_scans() as records:
        run()
    found = [re.search(r"partition_tables=\d+/\d+", r.plan.description) for r in records]
    return [m.group(0) for m in found if m]


def _bag(table: pa.Table) -> Counter:
    return Counter(repr(sorted(r.items())) for r in table.to_pylist())


def _counts(root: str) -> dict[str, Any]:
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("n", root)
    ns = PartitionedNamespace.open(root)
    df = ctx.table("n").filter(col("region") == lit("eu")).select(col("id"))
    return {
        "sql": _tables_read(lambda: ctx.sql("SELECT id FROM n WHERE region = 'eu'").collect()),
        "dataframe": _tables_read(df.collect),
        "plan_scan sql": len(lance_sql.plan_scan(ns, "region = 'eu'").partitions),
        "plan_scan expr": len(lance_sql.plan_scan(ns, pc.field("region") == "eu").partitions),
        "to_table expr": ns.to_table(filter=pc.field("region") == "eu").num_rows,
    }


@pytest.mark.parametrize("kind", [*EXTRA, "all"])
def test_pruning_ignores_columns_the_filter_does_not_read(tmp_path: Path, kind: str) -> None:
    scalar = _counts(_namespace(tmp_path / "scalar", None))
    assert scalar["sql"] == ["partition_tables=1/3"] and scalar["plan_scan expr"] == 1
    assert _counts(_namespace(tmp_path / kind, kind)) == scalar


def test_rows_and_explain_with_ai_columns(tmp_path: Path) -> None:
    root = _namespace(tmp_path / "ns", "all")
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("n", root)
    memory = datafusion.SessionContext()
    table = PartitionedNamespace.open(root).to_table()
    memory.register_record_batches("n", [table.to_batches()])
    for where in (
        "region = 'eu'",
        "region = 'eu' AND emb IS NOT NULL",
        "region <> 'us' OR profile IS NULL",
        "region IN ('eu', 'ap') AND profile['a'] > 3",
        "attrs['c'] = '1' AND x < 150",
    ):
        sql = f"SELECT * FROM n WHERE {where}"
        assert _bag(ctx.sql(sql).to_arrow_table()) == _bag(memory.sql(sql).to_arrow_table()), where
    plan = "\n".join(
        ctx.sql("EXPLAIN SELECT id FROM n WHERE region = 'eu' OR emb IS NULL")
        .to_arrow_table()
        .column("plan")
        .to_pylist()
    )
    (line,) = [x for x in plan.splitlines() if "LanceNamespaceScan:" in x]
    assert "partition_tables=3/3" in line
    assert "not_used_for_pruning=[a condition on emb: fixed_size_list<item: float>[8]" in line


def _joined(root_n: str, root_m: str) -> tuple[lance_sql.SessionContext, datafusion.SessionContext]:
    ctx = lance_sql.SessionContext()
    memory = datafusion.SessionContext()
    for name, root in (("n", root_n), ("m", root_m)):
        ctx.register_namespace(name, root)
        rows = PartitionedNamespace.open(root).to_table()
        memory.register_record_batches(name, [rows.to_batches()])
    return ctx, memory


@pytest.mark.parametrize("ai", [False, True])
def test_storage_partitioned_joins_with_ai_columns(tmp_path: Path, ai: bool) -> None:
    spec = "identity(region), bucket(4, id)"
    kind = "all" if ai else None
    ctx, memory = _joined(
        _namespace(tmp_path / "n", kind, spec), _namespace(tmp_path / "m", kind, spec)
    )
    on = "n.region = m.region AND n.id = m.id"
    queries = [
        f"SELECT n.id, m.x FROM n JOIN m ON {on}",
        f"SELECT n.region, count(*) AS c, sum(m.x) AS s FROM n JOIN m ON {on} GROUP BY n.region",
        f"SELECT n.id FROM n LEFT JOIN m ON {on} WHERE m.id IS NULL",
    ]
    if ai:  # struct, list-of-struct and map columns through the join, and a same-named field
        queries.append(f"SELECT n.profile, m.items, n.attrs, m.x AS k FROM n JOIN m ON {on}")
    for sql in queries:
        df = ctx.sql(sql)
        done = df.lance_rewrite()
        assert done.reasons == [] and len(done.used) == 1, (sql, done.reasons)
        got = df.to_arrow_table()
        want = memory.sql(sql).to_arrow_table()
        assert got.schema.names == want.schema.names
        assert _bag(got) == _bag(want), sql


def test_prune_pass_with_ai_columns(tmp_path: Path) -> None:
    """A transform-term filter (not pushed by DataFusion) prunes through the plan pass."""
    spec = "truncate(1, region)"
    scalar = _namespace(tmp_path / "scalar", None, spec)
    ai = _namespace(tmp_path / "ai", "all", spec)
    sql = "SELECT id FROM n WHERE left(region, 1) = 'e'"
    seen = []
    for root in (scalar, ai):
        ctx = lance_sql.SessionContext()
        ctx.register_namespace("n", root)
        reads = _tables_read(lambda c=ctx: c.sql(sql).collect())
        rows = sorted(r["id"] for r in ctx.sql(sql).to_pylist())
        seen.append((reads, rows))
    assert seen[0] == seen[1]
    assert seen[0][0] == ["partition_tables=1/3"]


def test_row_operations_prune_with_ai_columns(tmp_path: Path) -> None:
    root = _namespace(tmp_path / "ns", "all")
    ns = PartitionedNamespace.open(root)

    def versions() -> dict[str, int]:
        p = PartitionedNamespace.open(root).partitions()
        ids, pins = p.column("object_id").to_pylist(), p.column("read_version").to_pylist()
        return dict(zip(ids, pins, strict=True))

    def touched(run: Any) -> int:
        before = versions()
        run()
        after = versions()
        return sum(1 for k, v in after.items() if before.get(k) != v)

    eu3 = (pc.field("region") == "eu") & (pc.field("id") == 3)
    assert touched(lambda: ns.delete(eu3)) == 1
    assert touched(lambda: ns.update({"x": "x + 1"}, where="region = 'us' AND id = 4")) == 1
    ns = PartitionedNamespace.open(root)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("n", root)
    assert touched(lambda: ctx.sql("DELETE FROM n WHERE region = 'ap' AND id = 5").collect()) == 1
    ids = sorted(r["id"] for r in ctx.sql("SELECT id FROM n").to_pylist())
    assert ids == [i for i in range(24) if i not in (3, 5)]
    assert ctx.sql("SELECT x FROM n WHERE id = 4").to_pylist() == [{"x": 41}]
    ns = PartitionedNamespace.open(root)
    ns.compact()
    assert PartitionedNamespace.open(root).count_rows(pc.field("region") == "eu") == 7


@pytest.mark.parametrize("kind", [None, "all"])
def test_bounds_and_key_filters_with_ai_columns(tmp_path: Path, kind: str | None) -> None:
    """Column bounds and key filters skip the same tables with or without AI columns."""
    root = _namespace(tmp_path / "ns", kind)
    ns = PartitionedNamespace.open(root)
    ns.append(_base_rows() if kind is None else add_ai_columns(_base_rows()))
    ns.create_scalar_index("x", "BTREE")
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("n", root)
    cases = (("x > 220", 1, 0, lambda x: x > 220), ("x = 50", 0, 1, lambda x: x == 50))
    for where, bounds, keys, test in cases:
        sql = f"SELECT id FROM n WHERE {where}"
        with capture_scans() as records:
            rows = ctx.sql(sql).to_pylist()
        (line,) = [r.plan.description for r in records]
        assert ("skipped_by_bounds=" in line) == bool(bounds), line
        assert ("skipped_by_key_filter=" in line) == bool(keys), line
        plan = lance_sql.plan_scan(PartitionedNamespace.open(root), pc.field("x") > 220)
        assert plan.skipped_by_bounds >= 1
        want = [i for i in range(24) if test(i * 10)]
        assert sorted(r["id"] for r in rows) == sorted(want * 2)
