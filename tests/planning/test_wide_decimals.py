"""Decimals of more than 28 digits keep every row through pruning and column bounds.

Python's ``Decimal.scaleb`` rounds to its context's precision (28 digits by default), while
decimal128 holds 38 digits and decimal256 76. A literal bound, or a truncate boundary
stepped, through ``scaleb`` in the default context was rounded, so ``d = <32 digits>``
pruned the partition or skipped the table by its bounds that held the row. Every answer
here is compared with plain DataFusion (SQL) or pyarrow (expressions) over the same rows.
"""

from __future__ import annotations

import decimal
import random

import datafusion
import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import lance_sql
from lance_sql.engines.datafusion.provider import capture_scans
from lance_sql.spec.literals import decimal_of, unscaled_of


def _values(precision: int, scale: int, seed: int) -> list[decimal.Decimal]:
    rng = random.Random(seed)
    out = [decimal_of(int(("1234567890" * 4)[: precision - 1]), scale)]
    for _ in range(11):
        digits = min(rng.choice([2, 29, 31, precision - 1]), precision)
        out.append(decimal_of(rng.randint(-(10**digits - 1), 10**digits - 1), scale))
    return out


def test_scaling_is_exact() -> None:
    big = 12345678901234567890123456789012345678
    assert unscaled_of(decimal_of(big, 10), 10) == big
    assert decimal_of(-big, 4) == decimal.Decimal("-1234567890123456789012345678901234.5678")
    # the default context would have rounded this one
    assert decimal.Decimal(big).scaleb(-10) != decimal_of(big, 10)


@pytest.mark.parametrize(
    "spec", ["identity(d)", "truncate(1000, d)", "bucket(4, d)", "identity(x)"]
)
@pytest.mark.parametrize(("precision", "scale"), [(38, 0), (38, 10), (30, 2)])
def test_wide_decimal_filters_keep_their_rows(
    tmp_path, spec: str, precision: int, scale: int
) -> None:
    dtype = pa.decimal128(precision, scale)
    values = _values(precision, scale, seed=precision * 100 + scale)
    rows = pa.table({"d": pa.array([*values, None], dtype), "x": list(range(len(values) + 1))})
    ns = lance_sql.PartitionedNamespace.create(str(tmp_path / "ns"), rows.schema, spec)
    ns.append(rows.slice(0, 6))
    ns.append(rows.slice(6))  # two commits: tables with bounds of their own rows
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("ns", str(tmp_path / "ns"))
    plain = datafusion.SessionContext()
    plain.register_record_batches("ns", [rows.to_batches()])
    for v in values[:6]:
        lit = f"CAST('{v:f}' AS DECIMAL({precision},{scale}))"
        for where in (
            f"d = {lit}",
            f"d IN ({lit}, CAST('1' AS DECIMAL({precision},{scale})))",
            f"d >= {lit}",
            f"d != {lit}",
        ):
            query = f"SELECT x FROM ns WHERE {where} ORDER BY x"
            assert ctx.sql(query).to_pylist() == plain.sql(query).to_pylist(), query
        scalar = pa.scalar(v, dtype)
        for expr in (pc.field("d") == scalar, pc.field("d") < scalar, pc.field("d") >= scalar):
            got = sorted(ns.to_table(filter=expr).column("x").to_pylist())
            assert got == sorted(rows.filter(expr).column("x").to_pylist()), str(expr)


def _scanned(ctx: lance_sql.SessionContext, query: str) -> frozenset[str] | None:
    """The partition tables the SQL scan planned (None: all of them)."""
    with capture_scans() as records:
        ctx.sql(query).to_arrow_table()
    (rec,) = records
    return None if rec.plan.selects_all else frozenset(rec.plan.object_ids)


@pytest.mark.parametrize(
    "dtype", [pa.decimal128(10, 2), pa.decimal128(38, 4), pa.decimal256(50, 6)], ids=str
)
def test_plan_scan_reads_cast_literals_as_sql_does(tmp_path, dtype: pa.DataType) -> None:
    """``plan_scan(ns, "d = CAST('2.555' AS DECIMAL(10, 2))")`` binds the literal as
    DataFusion does (rounded half away from zero, 2.56) and prunes the same partitions
    as the SQL query; forms DataFusion reads differently (no precision, an exponent)
    keep every partition."""
    wide = "1234567890123456789012345678901" if dtype.precision > 30 else "12345678"
    texts = ["2.55", "2.56", "-2.55", "-2.56", "0", wide]
    values = [decimal.Decimal(t) for t in texts]
    rows = pa.table({"d": pa.array([*values, None], dtype), "x": list(range(len(texts) + 1))})
    ns = lance_sql.PartitionedNamespace.create(str(tmp_path / "ns"), rows.schema, "identity(d)")
    ns.append(rows)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("ns", str(tmp_path / "ns"))
    plain = datafusion.SessionContext()
    plain.register_record_batches("ns", [rows.to_batches()])
    p, s = dtype.precision, dtype.scale
    for text, op in [("2.555", "="), ("-2.555", "="), ("2.554", ">="), (wide, "<"), ("0", "!=")]:
        where = f"d {op} CAST('{text}' AS DECIMAL({p}, {s}))"
        query = f"SELECT x FROM ns WHERE {where} ORDER BY x"
        want = plain.sql(query).to_pylist()
        assert ctx.sql(query).to_pylist() == want, query
        planned = frozenset(lance_sql.plan_scan(ns, where).object_ids)
        assert len(planned) < len(ns.tables()), where  # the literal was bound: it pruned
        if pa.types.is_decimal128(dtype):  # SQL prunes decimal128 literals only
            assert _scanned(ctx, query) == planned, where
        uris = {t.object_id: (t.uri, t.read_version) for t in ns.tables()}
        kept = {
            x
            for i in planned
            for x in lance.dataset(uris[i][0], version=uris[i][1])
            .to_table()
            .column("x")
            .to_pylist()
        }
        assert {r["x"] for r in want} <= kept, where
    for where in ("d = CAST('2.56' AS DECIMAL)", f"d = CAST('1e2' AS DECIMAL({p}, {s}))"):
        assert len(lance_sql.plan_scan(ns, where).object_ids) == len(ns.tables()), where
