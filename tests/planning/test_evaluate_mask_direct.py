"""The IR evaluator's masks give exactly the pyarrow dataset's mask.

Partition selection evaluates ``__manifest`` predicates per new literal with
:func:`lance_sql.planning.arrow_expr.evaluate` (kernel calls, no pyarrow
dataset); it must select the same rows as binding :func:`to_pyarrow`'s
expression in a pyarrow dataset, for every comparison, NULLs, NaN, -0.0, mixed
literal types and Kleene AND/OR/NOT.
"""

from __future__ import annotations

import datetime as dt
import operator
import random

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from lance_sql.planning import arrow_expr
from lance_sql.spec.predicates import And, Column, Compare, IsNull, Literal, Not, Or, Predicate

OPS = ["=", "!=", "<", "<=", ">", ">="]
TYPES = {
    "i": (pa.int32(), [None, -3, 0, 1, 7, 2**31 - 1]),
    "l": (pa.int64(), [None, -(2**40), 0, 5, 2**40]),
    "f": (pa.float64(), [None, -0.0, 0.0, 1.5, float("nan"), float("inf")]),
    "d": (pa.date32(), [None, dt.date(2024, 1, 1), dt.date(2024, 5, 1), dt.date(1969, 12, 31)]),
    "s": (pa.string(), [None, "", "a", "it's", "b%"]),
    "t": (
        pa.timestamp("us", tz="UTC"),
        [
            None,
            dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
            dt.datetime(2024, 1, 2, tzinfo=dt.timezone.utc),
        ],
    ),
}
#: literal types compared with each column (some differ from it: implicit casts)
LITERAL_TYPES = {
    "i": [pa.int32(), pa.int64(), pa.float64()],
    "l": [pa.int64(), pa.int32()],
    "f": [pa.float64(), pa.float32(), pa.int64()],
    "d": [pa.date32()],
    "s": [pa.string(), pa.large_string()],
    "t": [pa.timestamp("us", tz="UTC")],
}


def table(rng: random.Random, n: int = 60) -> pa.Table:
    cols = {}
    for name, (t, values) in TYPES.items():
        cols[name] = pa.array([rng.choice(values) for _ in range(n)], t)
    return pa.table(cols)


def literal(rng: random.Random, name: str) -> Literal:
    t = rng.choice(LITERAL_TYPES[name])
    value = rng.choice(TYPES[name][1])
    if value is None:  # (the dataset route crashes pyarrow 26 on `string = NULL::large_string`)
        return Literal(None, TYPES[name][0])
    if value is not None and pa.types.is_integer(t):
        value = int(value) if not isinstance(value, float) else 1
        value = max(min(value, 2**31 - 1), -(2**31)) if t == pa.int32() else value
    if value is not None and pa.types.is_floating(t):
        value = float(value)
    return Literal(value, t)


def predicate(rng: random.Random, depth: int = 0) -> Predicate:
    kind = rng.random()
    if depth < 2 and kind < 0.3:
        children = tuple(predicate(rng, depth + 1) for _ in range(rng.randint(2, 3)))
        return And(children) if rng.random() < 0.5 else Or(children)
    if depth < 2 and kind < 0.4:
        return Not(predicate(rng, depth + 1))
    name = rng.choice(list(TYPES))
    column = Column(name, type=TYPES[name][0])
    if kind < 0.5:
        return IsNull(column, negated=rng.random() < 0.5)
    return Compare(column, rng.choice(OPS), literal(rng, name))


def dataset_mask(t: pa.Table, pred: Predicate) -> list[bool] | type:
    try:
        m = ds.dataset(t).to_table(columns={"m": arrow_expr.to_pyarrow(pred)}, use_threads=False)
        return pc.fill_null(m.column("m"), False).to_pylist()
    except Exception as exc:
        return type(exc)


def direct_mask(t: pa.Table, pred: Predicate) -> list[bool] | type:
    try:
        return pc.fill_null(arrow_expr.evaluate(pred, t), False).to_pylist()
    except AssertionError:
        raise
    except Exception as exc:
        return type(exc)


_PY_OPS = dict(
    zip(
        OPS,
        (operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge),
        strict=True,
    )
)


def brute(row: dict[str, object], pred: Predicate) -> bool | None:
    """SQL three-valued logic in Python (IEEE floats, as pyarrow's kernels)."""
    if isinstance(pred, (And, Or)):
        parts = [brute(row, c) for c in pred.children]
        stop = not isinstance(pred, And)
        if stop in parts:
            return stop
        return None if None in parts else not stop
    if isinstance(pred, Not):
        inner = brute(row, pred.child)
        return None if inner is None else not inner
    value = row[pred.term.name]  # type: ignore[union-attr]
    if isinstance(pred, IsNull):
        return (value is not None) if pred.negated else (value is None)
    assert isinstance(pred, Compare)
    if value is None or pred.literal.value is None:
        return None
    return bool(_PY_OPS[pred.op](value, pred.literal.value))


@pytest.mark.parametrize("seed", range(4))
def test_direct_masks_equal_the_dataset_route(seed: int) -> None:
    rng = random.Random(seed)
    compared = 0
    for _ in range(150):
        t = table(rng)
        pred = predicate(rng)
        want = dataset_mask(t, pred)
        got = direct_mask(t, pred)
        if isinstance(want, type):  # binding refused (e.g. int32 values beyond float32's
            # exact range): the direct kernels answer, as DataFusion compares (exactly)
            if not isinstance(got, type):
                assert got == [brute(row, pred) is True for row in t.to_pylist()], pred
            continue
        assert got == want, pred
        compared += 1
    assert compared > 100
