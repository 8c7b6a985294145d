"""The planner folds contradictory ``=`` / ``IN`` conjuncts of one term as DataFusion does,
so ``plan_scan`` selects what SQL selects; floats are left alone (DataFusion compares
them in total order: ``-0.0 <> 0.0``).

Each filter is checked against plain DataFusion over random rows: the folded predicate
keeps exactly the rows the original keeps.
"""

from __future__ import annotations

import datafusion
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lance_sql.planning.arrow_expr import evaluate
from lance_sql.planning.sql_filter import parse_filter
from lance_sql.spec.predicates import FALSE, Compare, InList

SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.string()), ("x", pa.float64())])


@pytest.mark.parametrize(
    ("where", "folded"),
    [
        ("k = -9 AND k = -4", FALSE),
        ("k = 1 AND k IN (1, 2)", "k = 1"),
        ("k IN (1, 2, 3) AND k IN (2, 3, 4)", "k IN (2, 3)"),
        ("s = 'a' AND s = 'b' AND k = 1", FALSE),
        ("s IN ('a', 'b') AND k = 1 AND s IN ('b', 'c')", "s = 'b' AND k = 1"),
        # other comparisons on the intersected term stay (they were dropped once)
        ("k = -20 AND k < -20 AND k IN (-20, -3)", "k = -20 AND k < -20"),
        ("k < 0 AND k = 1 AND k IN (1, 2)", "k < 0 AND k = 1"),
        ("k IN (1, 2) AND k NOT IN (1) AND k IN (1, 3)", "k = 1 AND k != 1"),
        ("k = 1 AND k != 2 AND k IN (1, 2)", "k = 1 AND k != 2"),
    ],
)
def test_contradictions_fold(where: str, folded: object) -> None:
    expected = folded if folded is FALSE else parse_filter(str(folded), SCHEMA)
    assert parse_filter(where, SCHEMA) == expected


def test_floats_are_not_intersected() -> None:
    pred = parse_filter("x IN (0.0, 1.0) AND x IN (-0.0, 2.0)", SCHEMA)
    assert pred != FALSE
    assert sum(isinstance(c, (Compare, InList)) for c in pred.children) == 2


KS = st.sampled_from([-1, 0, 1, 2, 3])
ATOM = st.one_of(
    KS.map(lambda v: f"k = {v}"),
    st.lists(KS, min_size=1, max_size=3).map(lambda vs: f"k IN ({', '.join(map(str, vs))})"),
    st.sampled_from(
        ["s = 'a'", "s IN ('a', 'b')", "s = 'b'", "k IS NULL", "k > 0", "k < 1", "k != 2"]
    ),
    st.lists(KS, min_size=1, max_size=2).map(lambda vs: f"k NOT IN ({', '.join(map(str, vs))})"),
)


@given(
    atoms=st.lists(ATOM, min_size=2, max_size=4),
    rows=st.lists(
        st.tuples(st.one_of(st.none(), KS), st.sampled_from([None, "a", "b", "c"])),
        min_size=1,
        max_size=12,
    ),
)
def test_folded_filters_keep_the_rows_datafusion_keeps(atoms: list[str], rows: list[tuple]) -> None:
    where = " AND ".join(atoms)
    table = pa.table(
        {
            "k": pa.array([r[0] for r in rows], pa.int64()),
            "s": pa.array([r[1] for r in rows], pa.string()),
            "x": pa.array([0.0] * len(rows), pa.float64()),
        }
    )
    ctx = datafusion.SessionContext()
    ctx.register_record_batches("t", [table.to_batches()])
    keep = ctx.sql(f"SELECT count(*) AS n FROM t WHERE {where}").to_pylist()[0]["n"]
    mask = evaluate(parse_filter(where, SCHEMA), table)
    assert sum(1 for m in mask.to_pylist() if m) == keep, where


@pytest.mark.parametrize(
    "where",
    [
        "k = -20 AND k < -20 AND k IN (-20, -3)",
        "k = 0 AND k IN (0, 1) AND k > 0",
        "k IN (0, 1) AND k IN (1, 2) AND k != 1",
        "k IN (0, 1) AND k IN (0, 2) AND k NOT IN (0)",
    ],
)
def test_sql_over_a_namespace_keeps_the_other_comparisons(tmp_path, where: str) -> None:
    """Through SQL over an identity-partitioned namespace, pruning and the residual filter
    both keep the comparisons beside an intersected term: rows are plain DataFusion's."""
    import lance_sql
    from lance_sql.tables.namespace.namespace import PartitionedNamespace

    schema = pa.schema([("k", pa.int64()), ("v", pa.int64())])
    rows = pa.table({"k": [-20, -3, 0, 1, 2, 0, None], "v": [1, 2, 3, 4, 5, 6, 7]}, schema=schema)
    spec = [{"field_id": "k", "source": "k", "transform": {"type": "identity"}}]
    ns = PartitionedNamespace.create(str(tmp_path / "ns"), schema, spec)
    ns.append(rows)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", ns.root)
    plain = datafusion.SessionContext()
    plain.register_record_batches("t", [rows.to_batches()])
    sql = f"SELECT k, v FROM t WHERE {where} ORDER BY v"
    assert ctx.sql(sql).to_arrow_table().to_pylist() == plain.sql(sql).to_arrow_table().to_pylist()
    assert ns.to_table(filter=where).num_rows == plain.sql(sql).count()
