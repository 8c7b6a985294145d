"""WHERE clauses DataFusion folds into boolean literals, over Lance tables and namespaces.

DataFusion's ``push_down_filter`` turns ``s = 'a' AND s = 'b' AND x > 0`` into
the scan filters ``[false, x > 0]``; datafusion-python 55 then evaluated
``BooleanScalar & Expression`` and failed (issue #15) where DataFusion over
memory tables returns no rows. Random conjunctions and disjunctions of
contradicting, tautological and plain comparisons (with NULLs, IN lists,
BETWEEN, NOT, literal TRUE/FALSE/NULL) must return exactly DataFusion's rows
over memory tables, from a partitioned namespace and from a ``register_lance``
table. Examples: ``LANCE_SQL_LITERAL_FILTER_EXAMPLES`` (default 150).
"""

from __future__ import annotations

import operator
import os
import tempfile
from pathlib import Path

import datafusion
import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lance_sql
from lance_sql.engines.datafusion import filter_operators
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from lance_sql.tables.scan import matches_nothing, normalize_filter

EXAMPLES = int(os.environ.get("LANCE_SQL_LITERAL_FILTER_EXAMPLES", "150"))
WORDS = ["a", "b", "c"]


def _rows() -> pa.Table:
    n = 60
    return pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "x": pa.array([None if i % 9 == 0 else i % 5 - 1 for i in range(n)], pa.int64()),
            "y": pa.array([i % 4 for i in range(n)], pa.int64()),
            "s": pa.array([None if i % 7 == 0 else WORDS[i % 3] for i in range(n)], pa.string()),
        }
    )


@pytest.fixture(scope="module")
def contexts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, datafusion.SessionContext]:
    root: Path = tmp_path_factory.mktemp("literal_filters")
    rows = _rows()
    ns = PartitionedNamespace.create(
        str(root / "ns"),
        rows.schema,
        [
            {"source": "s", "transform": "identity"},
            {"source": "x", "transform": "bucket", "num_buckets": 4},
        ],
    )
    ns.append(rows)
    lance.write_dataset(rows, str(root / "t.lance"), max_rows_per_file=20)
    ours = lance_sql.SessionContext()
    ours.register_namespace("ns", str(root / "ns"))
    ours.register_lance("lt", str(root / "t.lance"))
    plain = datafusion.SessionContext()
    plain.register_record_batches("mem", [rows.to_batches(max_chunksize=25)])
    return {"ours": ours, "plain": plain}


def _ids(ctx: datafusion.SessionContext, table: str, where: str) -> list[int]:
    out = ctx.sql(f"SELECT id FROM {table} WHERE {where}").to_arrow_table()
    return sorted(out.column("id").to_pylist())


_INT = st.sampled_from([-1, 0, 1, 2, 3, 7])
_WORD = st.sampled_from([*WORDS, "z"])


@st.composite
def _atom(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 11))
    col = draw(st.sampled_from(["x", "y"]))
    if kind == 0:
        a, b = draw(_INT), draw(_INT)
        return f"({col} = {a} AND {col} = {b})"  # a contradiction unless a == b
    if kind == 1:
        a, b = draw(_WORD), draw(_WORD)
        return f"(s = '{a}' AND s = '{b}')"
    if kind == 2:
        a = draw(_INT)
        return f"({col} < {a} AND {col} > {a})"  # always false
    if kind == 3:
        return draw(st.sampled_from(["TRUE", "FALSE", "NULL", "1 = 1", "1 = 0", "NOT TRUE"]))
    if kind == 4:
        a = draw(_INT)
        return f"({col} >= {a} OR {col} < {a})"  # true except where NULL
    if kind == 5:
        vals = draw(st.lists(_INT, min_size=1, max_size=3))
        neg = draw(st.sampled_from(["", "NOT "]))
        return f"{col} {neg}IN ({', '.join(map(str, vals))})"
    if kind == 6:
        lo, hi = sorted((draw(_INT), draw(_INT)))
        if draw(st.booleans()):
            lo, hi = hi, lo  # an empty range when they differ
        return f"{col} BETWEEN {lo} AND {hi}"
    if kind == 7:
        return f"{draw(st.sampled_from(['x', 's']))} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if kind == 8:
        op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
        return f"{col} {op} {draw(_INT)}"
    if kind == 9:
        op = draw(st.sampled_from(["=", "!="]))
        return f"s {op} '{draw(_WORD)}'"
    if kind == 10:
        return f"(s = '{draw(_WORD)}' OR s != s)"
    return f"({col} = {draw(_INT)} AND s = '{draw(_WORD)}' AND s = '{draw(_WORD)}')"


def _where() -> st.SearchStrategy[str]:
    def extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(children, children).map(lambda p: f"({p[0]} AND {p[1]})"),
            st.tuples(children, children).map(lambda p: f"({p[0]} OR {p[1]})"),
            children.map(lambda c: f"NOT ({c})"),
            st.lists(children, min_size=3, max_size=4).map(lambda cs: " AND ".join(cs)),
        )

    return st.recursive(_atom(), extend, max_leaves=6)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(where=_where())
def test_literal_folding_matches_datafusion(
    contexts: dict[str, datafusion.SessionContext], where: str
) -> None:
    expected = _ids(contexts["plain"], "mem", where)
    for table in ("ns", "lt"):
        assert _ids(contexts["ours"], table, where) == expected, (table, where)


@pytest.mark.parametrize(
    "where",
    [
        "s = 'a' AND s = 'b' AND x > 0",
        "x > 0 AND s = 'a' AND s = 'b'",
        "x = 1 AND x = 2",
        "x = 1 AND x = 2 AND s IS NULL AND y < 3",
        "x > 0 AND NULL",
        "NULL AND x > 0",
        "NOT (x > 0 AND NULL)",
        "(x = 1 AND x = 2) OR y = 1",
        "x IN (1, 2) AND x IN (3)",
    ],
)
def test_issue_examples(contexts: dict[str, datafusion.SessionContext], where: str) -> None:
    expected = _ids(contexts["plain"], "mem", where)
    for table in ("ns", "lt"):
        assert _ids(contexts["ours"], table, where) == expected, (table, where)


def test_contradiction_reads_nothing(contexts: dict[str, datafusion.SessionContext]) -> None:
    ctx = contexts["ours"]
    lt = ctx._lance_tables["lt"]  # type: ignore[attr-defined]
    lt.metrics.reset()
    assert _ids(ctx, "lt", "s = 'a' AND s = 'b' AND x > 0") == []
    assert lt.metrics.rows_read == 0


# -- the operator shim itself -------------------------------------------------------------


def test_operator_shim_is_installed_and_kleene() -> None:
    assert filter_operators.installed()
    x = pc.field("x") > 1
    f, t, n = pa.scalar(False), pa.scalar(True), pa.scalar(None, pa.bool_())
    assert operator.and_(f, x).equals(pc.scalar(False))
    assert operator.and_(x, f).equals(pc.scalar(False))
    assert operator.and_(t, x).equals(x)
    assert operator.and_(operator.and_(f, x), x).equals(pc.scalar(False))
    assert operator.or_(t, x).equals(pc.scalar(True))
    assert operator.or_(f, x).equals(x)
    assert operator.invert(f).equals(pc.scalar(True))
    assert normalize_filter(operator.invert(n)) is not None
    assert matches_nothing(normalize_filter(operator.invert(n)))
    assert "null" in str(operator.and_(n, x))  # NULL AND x is not a constant
    # everything that is not a pyarrow boolean literal goes to the original functions
    assert operator.and_(6, 3) == 2 and operator.or_(4, 1) == 5 and operator.invert(0) == -1
    assert operator.and_({1, 2}, {2}) == {2}
    assert str(operator.and_(x, pc.field("y") > 2)) == str(x & (pc.field("y") > 2))


def test_numba_compiles_new_kernels_after_the_shim_is_installed() -> None:
    """numba, imported after the shim, still sees builtin operators (udfs/_kernels_proxy)."""
    code = (
        "import lance_sql, operator, numpy as np, pyarrow as pa, udfs\n"
        "from lance_sql.engines.datafusion import filter_operators, provider  # noqa\n"
        "assert filter_operators.installed()\n"
        "want = udfs.murmur3(pa.array(np.arange(9), pa.int64())).to_pylist()\n"
        "for t in (pa.int8(), pa.int16(), pa.uint16(), pa.uint32()):\n"
        "    assert udfs.murmur3(pa.array(np.arange(9), t)).to_pylist() == want\n"
        "assert filter_operators.installed()\n"
    )
    import subprocess
    import sys

    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        env={**os.environ, "NUMBA_CACHE_DIR": str(Path(tempfile.mkdtemp()))},
    )


def test_normalize_filter_literals() -> None:
    assert normalize_filter(pc.scalar(True)) is None
    assert matches_nothing(normalize_filter(pc.scalar(False)))
    assert matches_nothing(normalize_filter(pc.scalar(pa.scalar(None, pa.bool_()))))
    assert matches_nothing(normalize_filter(pa.scalar(False)))
    assert normalize_filter(pa.scalar(True)) is None
    x = pc.field("x") > 1
    assert normalize_filter(x) is x
