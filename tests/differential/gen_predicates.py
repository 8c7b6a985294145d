"""Hypothesis strategies for the generated differential tests: columns, literals, predicates.

A predicate is a small tree (tuples, see :func:`predicates`) rendered either as
SQL text (:func:`to_sql`) or as a ``datafusion`` expression (:func:`to_expr`),
so SQL and DataFrame programs draw from the same predicates over every column
type: integers of each width, unsigned, floats (-0.0; NaN only through
``customers.score``), strings (non-ASCII too, and ``nullif``), dates, timestamps,
zoned timestamps (compared with columns only), decimals and booleans.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
from datafusion import Expr, col, lit
from datafusion import functions as f
from diff_data import BIG, KINDS, NATIONS, S_KEYS, SKUS, STATUSES, WIDE_0, WIDE_4, WIDE_6
from hypothesis import strategies as st

#: table -> [(column, kind)]; kinds: int, big, float, str, date, ts, tstz, dec, bool
COLUMNS: dict[str, list[tuple[str, str]]] = {
    "orders": [
        ("order_id", "int"),
        ("customer_id", "int"),
        ("status", "str"),
        ("amount", "float"),
        ("price", "dec"),
        ("qty", "int"),
        ("odate", "date"),
        ("ts", "ts"),
        ("big", "big"),
        ("flag", "bool"),
        ("code", "int"),
    ],
    "customers": [
        ("id", "int"),
        ("name", "str"),
        ("nation", "str"),
        ("segment", "str"),
        ("score", "float"),
        ("created", "date"),
        ("tier", "int"),
    ],
    "items": [
        ("item_id", "int"),
        ("order_id", "int"),
        ("sku", "str"),
        ("qty", "int"),
        ("unit_price", "dec"),
        ("weight", "float"),
    ],
    "events": [
        ("event_id", "int"),
        ("customer_id", "int"),
        ("ts", "ts"),
        ("kind", "str"),
        ("value", "float"),
        ("u", "int"),
    ],
    "products": [
        ("sku", "str"),
        ("category", "str"),
        ("list_price", "dec"),
        ("added", "ts"),
        ("rating", "float"),
    ],
    # and emb, profile, items, attrs: selected with *, never in generated predicates
    "docs": [("doc_id", "int"), ("customer_id", "int"), ("lang", "str"), ("rank", "float")],
    "a_ns": [("id", "int"), ("k", "int"), ("x", "int"), ("b", "bool"), ("c", "bool")],
    "b_ns": [("id", "int"), ("k", "int"), ("x", "int"), ("b", "bool"), ("c", "bool")],
    "t": [("x", "int"), ("y", "int")],
    "wide": [("id", "int"), ("customer_id", "int"), ("w4", "w4"), ("w0", "w0"), ("w6", "w6")],
    "s0": [("id", "int"), ("c0", "str"), ("c1", "float"), ("c2", "tstz")],
    "s1": [("id", "int"), ("c0", "str"), ("c1", "float"), ("c2", "tstz")],
}
#: columns holding NaN: no min/max over them (DataFusion 55's grouped min/max with NaN
#: depends on row order, plain DataFusion included)
NAN_COLUMNS = {("customers", "score")}

_TS = [
    dt.datetime(2024, 1, 3),
    dt.datetime(2024, 1, 5, 12),
    dt.datetime(2023, 6, 1),
    dt.datetime(2024, 1, 1),
    dt.datetime(2024, 1, 7, 23, 59, 59),
]
_STR = sorted(
    {*STATUSES, *NATIONS, *KINDS, *SKUS[::9], *S_KEYS, "a", "ab", "zz", "tools", "abcust0001"}
    | {"zzz", "日本語", "éa", "en"}
)
LITERALS: dict[str, list[Any]] = {
    "int": [-129, -1, 0, 1, 2, 3, 7, 10, 20, 40, 127, 128, 255, 300, 499, 555, 2147483647],
    "big": [7, BIG - 5, BIG, 9 * BIG, -BIG, 0],
    "float": [-1.5, -0.0, 0.0, 0.5, 1.0, 2.5, 100.0, 1e15, 1e300],
    "str": _STR,
    "date": [dt.date(2023, 1, 1), dt.date(2024, 1, 1), dt.date(2024, 2, 29), dt.date(2024, 6, 30)],
    "ts": _TS,
    "dec": [Decimal("0"), Decimal("1.5"), Decimal("100"), Decimal("-5.25"), Decimal("12.34")],
    "bool": [True, False],
    # wide decimals (more than 28 digits; w6 is a decimal256), as CAST literals
    "w4": [*WIDE_4, Decimal("12345678901234567890123456789012.34565"), Decimal("0")],
    "w0": [*WIDE_0, Decimal("1234567890123456789012345678901000"), Decimal("-1")],
    "w6": [*WIDE_6, Decimal("1234567890123456789012345678901.000000"), Decimal("-7.25")],
}
#: float IN lists never hold 0.0 / -0.0: plain DataFusion 55 is itself inconsistent there
#: (an IN list of 3+ floats is a hash set that tells -0.0 from 0.0; ``=`` and short lists
#: do not; DuckDB and lance-sql's pushed filters do not). Corpus: ``float_in_list_*``.
FLOAT_IN_POOL = [v for v in LITERALS["float"] if v != 0.0]
ARROW: dict[str, pa.DataType] = {
    "int": pa.int64(),
    "big": pa.int64(),
    "float": pa.float64(),
    "str": pa.string(),
    "date": pa.date32(),
    "ts": pa.timestamp("us"),
    "dec": pa.float64(),  # SQL parses 12.34 as a Float64 literal too
    "bool": pa.bool_(),
    "w4": pa.decimal128(38, 4),
    "w0": pa.decimal128(38, 0),
    "w6": pa.decimal256(50, 6),
}
#: wide decimal kinds: literals are ``CAST('...' AS DECIMAL(p, s))`` of the column's type
WIDE_KINDS = {"w4", "w0", "w6"}
ORDERED_KINDS = {"int", "big", "float", "str", "date", "ts", "dec", *WIDE_KINDS}
#: kinds compared with other columns only (no literal: a zoned literal means different
#: instants to DataFusion and DuckDB)
COLUMN_ONLY_KINDS = {"tstz"}

#: a column reference: (qualifier or None, name, kind)
ColRef = tuple[str | None, str, str]


def sql_literal(value: Any, kind: str) -> str:
    if value is None:
        return "NULL"
    if kind == "str":
        return "'" + str(value).replace("'", "''") + "'"
    if kind == "date":
        return f"DATE '{value.isoformat()}'"
    if kind == "ts":
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if kind == "bool":
        return "true" if value else "false"
    if kind == "dec":
        return str(value)
    if kind in WIDE_KINDS:
        t = ARROW[kind]
        return f"CAST('{value:f}' AS DECIMAL({t.precision}, {t.scale}))"
    if kind == "float":
        return repr(float(value))
    return str(value)


def expr_literal(value: Any, kind: str) -> Expr:
    if kind == "dec":
        value = float(value)
    return lit(pa.scalar(value, ARROW[kind]))


def literal(kind: str) -> st.SearchStrategy[Any]:
    return st.sampled_from(LITERALS[kind])


@st.composite
def atom(draw: st.DrawFn, cols: list[ColRef], nulls: bool = True) -> tuple[Any, ...]:
    c = draw(st.sampled_from(cols))
    if nulls and draw(st.integers(0, 7)) == 0:
        return ("null", c)  # a bare NULL: ``x = 1 OR NULL``, ``NOT (x = 1 AND NULL)``
    kind = c[2]
    shapes = ["isnull"] if kind in COLUMN_ONLY_KINDS else ["cmp", "isnull", "in", "distinct"]
    if kind in ORDERED_KINDS:
        shapes += ["cmp", "between"]
    if kind == "str":
        shapes += ["like", "left", "nullif"]
    if kind == "ts":
        shapes += ["date_trunc", "cast_date", "year"]
    if kind == "int":
        shapes += ["mod"]
    if kind == "bool":
        shapes += ["bool", "bool"]
    same = [
        o for o in cols if o[2] == kind and o != c and kind in ORDERED_KINDS | COLUMN_ONLY_KINDS
    ]
    if same:
        shapes.append("cmpcol")
    shape = draw(st.sampled_from(shapes))
    if shape == "cmp":
        op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">="]))
        if kind == "bool":
            op = draw(st.sampled_from(["=", "<>"]))
        return ("cmp", op, c, draw(literal(kind)))
    if shape == "cmpcol":
        op = draw(st.sampled_from(["=", "<>", "<", ">="]))
        return ("cmpcol", op, c, draw(st.sampled_from(same)))
    if shape == "isnull":
        return ("isnull", c, draw(st.booleans()))
    if shape == "in":
        pool = LITERALS[kind]
        if kind == "float":  # DataFusion 55 itself: see FLOAT_IN_POOL
            pool = FLOAT_IN_POOL
        values = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4))
        return ("in", c, values, draw(st.booleans()))
    if shape == "distinct":
        value = draw(st.one_of(st.none(), literal(kind)))
        return ("distinct", c, value, draw(st.booleans()))
    if shape == "between":
        lo, hi = sorted(draw(st.lists(literal(kind), min_size=2, max_size=2)))
        return ("between", c, lo, hi, draw(st.booleans()))
    if shape == "like":
        pattern = draw(st.sampled_from(["a%", "ab%", "%cust%", "_pen", "%", "zz%", "D_"]))
        return ("like", c, pattern, draw(st.booleans()))
    if shape == "left":
        n = draw(st.integers(1, 3))
        return ("left", c, n, draw(st.sampled_from(["a", "ab", "zz0", "D", "b", "ac"]))[:n])
    if shape == "nullif":  # NULL where the column equals the first literal
        op = draw(st.sampled_from(["=", "<>", "<", ">="]))
        return ("nullif", c, draw(literal(kind)), op, draw(literal(kind)))
    if shape == "date_trunc":
        day = draw(st.sampled_from([dt.datetime(2024, 1, d) for d in (1, 2, 3, 5, 8)]))
        return ("date_trunc", c, day)
    if shape == "cast_date":
        return ("cast_date", c, draw(st.sampled_from([dt.date(2024, 1, d) for d in (1, 3, 6)])))
    if shape == "year":
        return ("year", c, draw(st.sampled_from([2023, 2024, 2025])))
    if shape == "mod":
        n = draw(st.sampled_from([2, 4, 16]))
        return ("mod", c, n, draw(st.integers(0, n - 1)))
    return ("bool", c, draw(st.booleans()))


def like_regex(pattern: str) -> str:
    """A LIKE pattern as an anchored regular expression."""
    import re

    body = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern)
    return f"^{body}$"


def predicates(
    cols: list[ColRef], depth: int = 2, nulls: bool = True
) -> st.SearchStrategy[tuple[Any, ...]]:
    """Random predicates over ``cols``; ``nulls``: bare NULL atoms too."""
    base = atom(cols, nulls)
    if depth <= 0:
        return base
    sub = predicates(cols, depth - 1, nulls)
    return st.one_of(
        base,
        base,
        st.tuples(st.just("and"), sub, sub),
        st.tuples(st.just("or"), sub, sub),
        st.tuples(st.just("not"), sub),
    )


# ---- rendering ---------------------------------------------------------------------------
def sql_col(c: ColRef) -> str:
    return f"{c[0]}.{c[1]}" if c[0] else c[1]


def to_sql(p: tuple[Any, ...]) -> str:
    tag = p[0]
    if tag == "and":
        return f"({to_sql(p[1])} AND {to_sql(p[2])})"
    if tag == "or":
        return f"({to_sql(p[1])} OR {to_sql(p[2])})"
    if tag == "not":
        return f"(NOT {to_sql(p[1])})"
    if tag == "null":
        return "NULL"
    c = p[1] if tag != "cmp" and tag != "cmpcol" else p[2]
    name, kind = sql_col(c), c[2]
    if tag == "cmp":
        return f"{name} {p[1]} {sql_literal(p[3], kind)}"
    if tag == "cmpcol":
        return f"{name} {p[1]} {sql_col(p[3])}"
    if tag == "isnull":
        return f"{name} IS {'NOT ' if p[2] else ''}NULL"
    if tag == "in":
        values = ", ".join(sql_literal(v, kind) for v in p[2])
        return f"{name} {'NOT ' if p[3] else ''}IN ({values})"
    if tag == "distinct":
        # parenthesised: sqlparser binds ``IS DISTINCT FROM`` looser than AND
        return f"({name} IS {'NOT ' if p[3] else ''}DISTINCT FROM {sql_literal(p[2], kind)})"
    if tag == "between":
        lo, hi = sql_literal(p[2], kind), sql_literal(p[3], kind)
        return f"{name} {'NOT ' if p[4] else ''}BETWEEN {lo} AND {hi}"
    if tag == "like":
        return f"{name} {'NOT ' if p[3] else ''}LIKE {sql_literal(p[2], 'str')}"
    if tag == "left":
        return f"left({name}, {p[2]}) = {sql_literal(p[3], 'str')}"
    if tag == "nullif":
        return f"nullif({name}, {sql_literal(p[2], kind)}) {p[3]} {sql_literal(p[4], kind)}"
    if tag == "date_trunc":
        return f"date_trunc('day', {name}) = {sql_literal(p[2], 'ts')}"
    if tag == "cast_date":
        return f"CAST({name} AS DATE) = {sql_literal(p[2], 'date')}"
    if tag == "year":
        return f"date_part('year', {name}) = {p[2]}"
    if tag == "mod":
        return f"{name} % {p[2]} = {p[3]}"
    if tag == "bool":
        return name if p[2] else f"NOT {name}"
    raise AssertionError(tag)


def df_col(c: ColRef) -> Expr:
    return col(f'"{c[1]}"')


def _compare(e: Expr, op: str, other: Expr) -> Expr:
    ops = {"=": e.__eq__, "<>": e.__ne__, "<": e.__lt__, "<=": e.__le__, ">": e.__gt__}
    ops[">="] = e.__ge__
    return ops[op](other)


def to_expr(p: tuple[Any, ...]) -> Expr:
    tag = p[0]
    if tag == "and":
        return to_expr(p[1]) & to_expr(p[2])
    if tag == "or":
        return to_expr(p[1]) | to_expr(p[2])
    if tag == "not":
        return ~to_expr(p[1])
    if tag == "null":
        return lit(None).cast(pa.bool_())
    c = p[1] if tag != "cmp" and tag != "cmpcol" else p[2]
    e, kind = df_col(c), c[2]
    if tag in ("cmp", "cmpcol"):
        other = expr_literal(p[3], kind) if tag == "cmp" else df_col(p[3])
        return _compare(e, p[1], other)
    if tag == "nullif":
        return _compare(f.nullif(e, expr_literal(p[2], kind)), p[3], expr_literal(p[4], kind))
    if tag == "isnull":
        return e.is_not_null() if p[2] else e.is_null()
    if tag == "in":
        return f.in_list(e, [expr_literal(v, kind) for v in p[2]], negated=p[3])
    if tag == "distinct":  # no IS [NOT] DISTINCT FROM in datafusion-python 55's Expr
        same = (
            e.is_null() if p[2] is None else f.coalesce(e == expr_literal(p[2], kind), lit(False))
        )
        return ~same if p[3] else same
    if tag == "between":
        return e.between(expr_literal(p[2], kind), expr_literal(p[3], kind), negated=p[4])
    if tag == "like":  # no LIKE in datafusion-python 55's Expr: the same pattern as a regex
        found = f.regexp_like(e, lit(like_regex(p[2])))
        return ~found if p[3] else found
    if tag == "left":
        return f.left(e, lit(p[2])) == lit(p[3])
    if tag == "date_trunc":
        return f.date_trunc("day", e) == expr_literal(p[2], "ts")
    if tag == "cast_date":
        return e.cast(pa.date32()) == expr_literal(p[2], "date")
    if tag == "year":
        return f.date_part("year", e) == lit(p[2])
    if tag == "mod":
        return (e % lit(p[2])) == lit(p[3])
    if tag == "bool":
        return e if p[2] else ~e
    raise AssertionError(tag)
