"""The differential harness: the same query on lance-sql and on plain DataFusion (or DuckDB).

``Contexts`` holds, built once per session from the same rows:

- ``lance``: ``lance_sql.SessionContext()`` (defaults: storage-partitioned joins on),
- ``lance_off``: ``lance_sql.SessionContext(spj=False)``,
- ``plain``: ``datafusion.SessionContext()`` with every table as a memory table,
- ``duck``: a DuckDB connection over the same Arrow tables (second oracle, used
  where plain DataFusion itself is suspect, e.g. apache/datafusion#21246);
- ``twin`` / ``twin_off``: lance-sql (SPJ on / off) where each namespace with
  AI-shaped columns is its scalar-only twin (``diff_data.SCALAR_TWINS``):
  :func:`run_lance_twin_checked` asserts a query reads the same partition
  tables with and without those columns.

``assert_same(got, want)`` compares output schema (names, types, order,
nullability) and rows: as multisets, or in order when the query's top-level
ORDER BY makes the order deterministic; floats with a tight relative tolerance,
NaN equal to NaN, -0.0 equal to 0.0.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import datafusion
import duckdb
import pyarrow as pa
from ai_columns import (
    assert_reads_like_scalar,
    named_partition_reads,
    plan_passes_applied,
    vector_stops_passes,
)
from diff_data import DATASETS, NAMESPACES, SCALAR_TWINS

import lance_sql
import udfs
from lance_sql.engines.datafusion.provider import capture_scans

REL_TOL = 1e-9
ABS_TOL = 1e-9


# ---- user Python UDFs, registered on every context --------------------------------------
def _plus_one(values: pa.Array) -> pa.Array:
    import pyarrow.compute as pc

    return pc.add(values, 1)


def _shout(values: pa.Array) -> pa.Array:
    import pyarrow.compute as pc

    return pc.utf8_upper(values)


USER_UDFS = [
    datafusion.udf(_plus_one, [pa.int64()], pa.int64(), "immutable", "plus_one"),
    datafusion.udf(_shout, [pa.string()], pa.string(), "immutable", "shout"),
]

# ---- murmur3 for the plain context: one UDF per argument type ----------------------------
MURMUR3_TYPES: dict[str, pa.DataType] = {
    "i64": pa.int64(),
    "i32": pa.int32(),
    "i16": pa.int16(),
    "i8": pa.int8(),
    "u32": pa.uint32(),
    "str": pa.string(),
    "date": pa.date32(),
    "ts": pa.timestamp("us"),
    "dec12": pa.decimal128(12, 2),
    "dec10": pa.decimal128(10, 3),
    "bool": pa.bool_(),
    "f64": pa.float64(),
}


def _murmur3(values: pa.Array) -> pa.Array:
    return udfs.murmur3(values)


def _murmur3_multi(*columns: pa.Array) -> pa.Array:
    return udfs.murmur3_multi(list(columns))


def plain_murmur3_udfs() -> list[Any]:
    """``murmur3_<tag>`` and ``murmur3_multi_<tag>_<tag>`` UDFs for the plain context."""
    out = [
        datafusion.udf(_murmur3, [t], pa.int32(), "immutable", f"murmur3_{tag}")
        for tag, t in MURMUR3_TYPES.items()
    ]
    for a, b in [("str", "i64"), ("i64", "str"), ("i64", "i64"), ("date", "str"), ("i32", "i16")]:
        out.append(
            datafusion.udf(
                _murmur3_multi,
                [MURMUR3_TYPES[a], MURMUR3_TYPES[b]],
                pa.int32(),
                "immutable",
                f"murmur3_multi_{a}_{b}",
            )
        )
    out.append(
        datafusion.udf(_murmur3_multi, [pa.string()], pa.int32(), "immutable", "murmur3_multi_str")
    )
    return out


@dataclass
class Contexts:
    """The contexts under comparison and the rows they were built from."""

    lance: lance_sql.SessionContext
    lance_off: lance_sql.SessionContext
    plain: datafusion.SessionContext
    duck: duckdb.DuckDBPyConnection
    tables: dict[str, pa.Table]
    uris: dict[str, str]
    twin: lance_sql.SessionContext
    twin_off: lance_sql.SessionContext
    setups_done: set[str] = field(default_factory=set)
    plain_cache: dict[tuple[str, tuple[Any, ...]], pa.Table] = field(default_factory=dict)

    def __repr__(self) -> str:  # hypothesis prints fixtures of failing examples
        return f"Contexts({sorted(self.tables)})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def lance_ctx(self, spj: bool) -> lance_sql.SessionContext:
        return self.lance if spj else self.lance_off

    def twin_ctx(self, spj: bool) -> lance_sql.SessionContext:
        return self.twin if spj else self.twin_off

    def all_contexts(self) -> list[datafusion.SessionContext]:
        return [self.lance, self.lance_off, self.plain]

    def plain_oracle_after(self, exc: BaseException) -> datafusion.SessionContext | None:
        """Where plain DataFusion failed inside its own physical planner (an engine bug,
        not a refusal of the query), a plain context of one partition per table to ask
        instead; None for any other error."""
        if not any(fragment in str(exc) for fragment in PLAIN_PLANNER_BUGS):
            return None
        one = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(1))
        for name, table in self.tables.items():
            one.register_record_batches(name, [table.combine_chunks().to_batches()])
        for fn in [*USER_UDFS, *plain_murmur3_udfs()]:
            one.register_udf(fn)
        return one


#: DataFusion 55 failures of its physical planner over two-partition memory tables, e.g.
#: SanityCheckPlan refusing a TopK over ``id, id + 1`` below a filter with a bare NULL
#: (``a_ns.filter(id = k).select(id, id + 1 AS p1).filter(NULL AND NOT p1 BETWEEN 7 AND
#: 7).sort(...).limit(1)``): the query is valid, lance-sql's plan answers it
PLAIN_PLANNER_BUGS = ("SanityCheckPlan",)


def build_contexts(tables: dict[str, pa.Table], uris: dict[str, str]) -> Contexts:
    lance_on = lance_sql.SessionContext()
    lance_off = lance_sql.SessionContext(spj=False)
    twin_on = lance_sql.SessionContext()
    twin_off = lance_sql.SessionContext(spj=False)
    for ctx in (lance_on, lance_off, twin_on, twin_off):
        twins = ctx in (twin_on, twin_off)
        for name in NAMESPACES:
            ctx.register_namespace(name, uris[SCALAR_TWINS.get(name, name) if twins else name])
        for name in DATASETS:
            ctx.register_lance(name, uris[name])
    plain = datafusion.SessionContext()
    duck = duckdb.connect()
    for name, table in tables.items():
        batches = table.combine_chunks().to_batches(max_chunksize=1024)
        half = len(batches) // 2 or 1
        plain.register_record_batches(name, [batches[:half], batches[half:]])
        duck.register(name, duck_copy(table))
    for ctx in (lance_on, lance_off, twin_on, twin_off, plain):
        for fn in USER_UDFS:
            ctx.register_udf(fn)
    for fn in plain_murmur3_udfs():
        plain.register_udf(fn)
    return Contexts(lance_on, lance_off, plain, duck, tables, uris, twin_on, twin_off)


# ---- running -----------------------------------------------------------------------------
def collect(df: datafusion.DataFrame) -> pa.Table:
    return df.to_arrow_table()


def run_lance(
    c: Contexts, sql: str, *, spj: bool = True, params: dict[str, Any] | None = None
) -> pa.Table:
    ctx = c.lance_ctx(spj)
    df = ctx.sql(sql, param_values=params) if params else ctx.sql(sql)
    return collect(df)


def run_lance_twin_checked(
    c: Contexts,
    frame: Callable[[lance_sql.SessionContext], datafusion.DataFrame],
    *,
    spj: bool,
    tables: Iterable[str],
    vector_read: bool,
    label: str,
) -> pa.Table:
    """The rows of ``frame(lance-sql's context)``; when it reads a namespace with AI-shaped
    columns (``tables``), it runs again where that namespace is its scalar-only twin and
    must read the same partition tables (``ai_columns.assert_reads_like_scalar``).

    The one allowed difference, checked precisely where the reads differ: the scalar
    plan went through lance-sql's plan passes and the AI plan could not, because it
    reads the vector column (``vector_read``, and the Substrait producer refused it).
    """
    with capture_scans() as records:
        got = collect(frame(c.lance_ctx(spj)))
    if not set(tables) & SCALAR_TWINS.keys():
        return got
    with capture_scans() as scalar:
        collect(frame(c.twin_ctx(spj)))
    ai_reads, scalar_reads = named_partition_reads(records), named_partition_reads(scalar)
    passes_stopped = (
        vector_read
        and ai_reads != scalar_reads
        and plan_passes_applied(c.twin_ctx(spj), frame(c.twin_ctx(spj)))
        and vector_stops_passes(c.lance_ctx(spj), frame(c.lance_ctx(spj)))
    )
    assert_reads_like_scalar(
        ai_reads, scalar_reads, vector_read=vector_read, plan_pass=passes_stopped, what=label
    )
    return got


def run_plain(c: Contexts, sql: str, *, params: dict[str, Any] | None = None) -> pa.Table:
    """Plain DataFusion's answer (cached: the corpus asks once per SPJ setting)."""
    key = (sql, tuple(sorted((params or {}).items())))
    if key not in c.plain_cache:
        df = c.plain.sql(sql, param_values=params) if params else c.plain.sql(sql)
        c.plain_cache[key] = collect(df)
    return c.plain_cache[key]


def duck_copy(table: pa.Table) -> pa.Table:
    """``table`` for DuckDB, which has no decimal256: such columns become decimal128(38, s)
    (the generated data keeps their values within 38 digits, so the cast is exact)."""
    schema = pa.schema(
        f.with_type(pa.decimal128(38, f.type.scale)) if pa.types.is_decimal256(f.type) else f
        for f in table.schema
    )
    return table.cast(schema)


def duck_sql(sql: str) -> str:
    """``sql`` for DuckDB: a ``DECIMAL(p, s)`` wider than its 38 digits is ``DECIMAL(38, s)``."""
    return re.sub(
        r"DECIMAL\((\d+), (\d+)\)",
        lambda m: f"DECIMAL({min(int(m.group(1)), 38)}, {m.group(2)})",
        sql,
    )


def run_duck(c: Contexts, sql: str) -> pa.Table:
    return c.duck.sql(duck_sql(sql)).to_arrow_table()


def run_both(
    c: Contexts, sql: str, *, spj: bool = True, plain_sql: str | None = None, **kw: Any
) -> tuple[pa.Table, pa.Table]:
    """(lance-sql's answer, plain DataFusion's answer) for ``sql``."""
    return run_lance(c, sql, spj=spj, **kw), run_plain(c, plain_sql or sql, **kw)


# ---- comparing ---------------------------------------------------------------------------
def schema_of(table: pa.Table) -> list[tuple[str, str, bool]]:
    return [(f.name, str(f.type), f.nullable) for f in table.schema]


def assert_same_schema(got: pa.Table, want: pa.Table, context: str = "") -> None:
    assert schema_of(got) == schema_of(want), f"schema differs{context}"


def names_types(table: pa.Table) -> list[tuple[str, pa.DataType]]:
    return [(field.name, field.type) for field in table.schema]


def assert_schema_without_passes(got: pa.Table, df: Any, context: str = "") -> None:
    """``got``'s schema is that of ``df`` (a ``LanceDataFrame``) run without lance-sql's
    plan passes: the query over lance-sql's own tables, as DataFusion plans it alone.

    For answers whose rows are right where only nullability differs from plain
    DataFusion over memory tables, which can simplify a plan a dataset provider keeps.
    """
    assert_same_schema(got, datafusion.DataFrame(df.df).to_arrow_table(), context)


def _norm(value: Any) -> Any:
    """A hashable, sortable-ish form of one value (floats kept for tolerant comparison)."""
    if isinstance(value, float):
        return ("nan",) if math.isnan(value) else value
    if isinstance(value, dict):
        return tuple(sorted((k, _norm(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_norm(v) for v in value)
    return value


def rows_of(table: pa.Table) -> list[tuple[Any, ...]]:
    cols = [c.to_pylist() for c in table.columns]
    return [tuple(_norm(v) for v in row) for row in zip(*cols, strict=True)]


def _sort_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    out: list[Any] = []
    for v in row:
        if v is None:
            out.append((0, ""))
        elif isinstance(v, float):
            out.append((1, float(f"{v:.6g}") if math.isfinite(v) else v))
        elif isinstance(v, (int, Decimal)) and not isinstance(v, bool):
            out.append((1, float(v)))
        else:
            out.append((2, repr(v)))
    return tuple(out)


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return all(_close(x, y) for x, y in zip(a, b, strict=True))
    return (bool(a == b) and type(a) is type(b)) or (a is None and b is None)


def rows_equal(got: Sequence[tuple[Any, ...]], want: Sequence[tuple[Any, ...]]) -> bool:
    if len(got) != len(want):
        return False
    return all(_close(g, w) for g, w in zip(got, want, strict=True))


def multiset_equal(got: Sequence[tuple[Any, ...]], want: Sequence[tuple[Any, ...]]) -> bool:
    if len(got) != len(want):
        return False
    g, w = sorted(got, key=_sort_key), sorted(want, key=_sort_key)
    if rows_equal(g, w):
        return True
    # rounding in the sort key can misalign near-equal floats: match greedily
    pool = list(w)
    for row in g:
        for i, cand in enumerate(pool):
            if _close(row, cand):
                del pool[i]
                break
        else:
            return False
    return True


def describe_difference(got: Iterable[tuple[Any, ...]], want: Iterable[tuple[Any, ...]]) -> str:
    from collections import Counter

    g, w = Counter(got), Counter(want)
    extra = list((g - w).elements())[:5]
    missing = list((w - g).elements())[:5]
    return f"extra rows (first 5): {extra}; missing rows (first 5): {missing}"


def assert_same(
    got: pa.Table, want: pa.Table, *, ordered: bool = False, schema: bool = True, sql: str = ""
) -> None:
    """Equal output schema (unless ``schema=False``) and equal rows."""
    where = f"\n  query: {sql}" if sql else ""
    if schema:
        assert schema_of(got) == schema_of(want), (
            f"schema differs{where}\n  got:  {schema_of(got)}\n  want: {schema_of(want)}"
        )
    g, w = rows_of(got), rows_of(want)
    ok = rows_equal(g, w) if ordered else multiset_equal(g, w)
    assert ok, f"rows differ ({len(g)} vs {len(w)} rows){where}\n  {describe_difference(g, w)}"


def values_only(table: pa.Table) -> pa.Table:
    """Rows with positional names (DuckDB names and types differ from DataFusion's)."""
    return table.rename_columns([f"c{i}" for i in range(table.num_columns)])


def duck_rows_equal(got: pa.Table, want: pa.Table, *, ordered: bool = False) -> bool:
    g, w = rows_of(got), rows_of(want)
    g = [tuple(_loose(v) for v in r) for r in g]
    w = [tuple(_loose(v) for v in r) for r in w]
    return rows_equal(g, w) if ordered else multiset_equal(g, w)


def _loose(v: Any) -> Any:
    """DuckDB widens sums and averages: compare numbers as floats, exact ints as ints."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, int) and abs(v) > 2**53:
        return v
    if isinstance(v, int):
        return float(v)
    return v


def run_setup(
    c: Contexts, statements: Sequence[str], ctx_filter: Callable[[Any], bool] | None = None
) -> None:
    """Run DDL (CREATE VIEW ...) on every context once per session."""
    for stmt in statements:
        if stmt in c.setups_done:
            continue
        for ctx in c.all_contexts():
            if ctx_filter is None or ctx_filter(ctx):
                ctx.sql(stmt).collect()
        c.setups_done.add(stmt)
