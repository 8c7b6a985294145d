"""Differential property test: joining group by group equals joining all rows.

Random specs on both sides (compatible and not, several spec versions), random
skewed keys with NULLs; partition values computed with udfs as a writer would.
For every join type, the multiset of result rows of the per-group joins must
equal the plain join (SQL equality: NULL matches nothing).
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from join_helpers import (
    assert_partitions_once,
    field,
    grouped_join,
    layout,
    reference_join,
    schema,
    specs,
)

from lance_sql.planning.joins import plan_join_partitions
from lance_sql.planning.joins.plan import PRESERVED

HOWS = sorted(PRESERVED)
KEY_TYPES = [
    (pa.int64(), pa.int64()),
    (pa.int32(), pa.int64()),
    (pa.string(), pa.string()),
    (pa.int64(), pa.string()),  # incompatible types: must fall back
    (pa.date32(), pa.date32()),
]
DATES = [dt.date(2024, 12, 31), dt.date(2025, 1, 1), dt.date(2025, 1, 2), dt.date(2025, 2, 1)]


@st.composite
def field_choice(draw, key: str, other: str, two_keys: bool, key_type: pa.DataType):
    is_string = pa.types.is_string(key_type)
    if pa.types.is_date(key_type):
        kinds = ["identity", "bucket", "year", "month", "day", "other_bucket"]
    else:
        kinds = ["identity", "bucket", "truncate", "other_bucket"]
    if two_keys:
        kinds += ["multi_bucket", "second_identity", "second_bucket"]
    kind = draw(st.sampled_from(kinds))
    n = draw(st.sampled_from([1, 2, 3, 4, 6, 8, 12, 16]))
    if kind in ("identity", "year", "month", "day"):
        return (key, kind, None)
    if kind == "bucket":
        return (key, "bucket", n)
    if kind == "truncate":
        return (
            key,
            "truncate",
            draw(st.sampled_from([1, 2, 3, 4, 5, 10] if not is_string else [1, 2, 3])),
        )
    if kind == "multi_bucket":
        order = draw(st.booleans())
        return ((key, other) if order else (other, key), "multi_bucket", n)
    if kind == "second_identity":
        return (other, "identity", None)
    if kind == "second_bucket":
        return (other, "bucket", n)
    return ("x", "bucket", n)


@st.composite
def side(draw, prefix: str, key_type: pa.DataType, two_keys: bool):
    key, other = f"{prefix}k", f"{prefix}j"
    sch = schema(**{key: key_type, other: pa.int64(), "x": pa.int64(), f"{prefix}id": pa.int64()})
    n_versions = draw(st.integers(1, 2))
    versions = []
    for _ in range(n_versions):
        choices = draw(
            st.lists(
                field_choice(key, other, two_keys, key_type),
                min_size=1,
                max_size=3,
            )
        )
        fields = {}
        for src, kind, param in choices:
            f = field(sch, src, kind, param)
            fields.setdefault(f.field_id, f)
        versions.append(list(fields.values()))
    return sch, specs(*versions)


def key_values(key_type: pa.DataType):
    ints = st.one_of(st.none(), st.integers(-12, 12), st.sampled_from([0, 1, 1, 1, -7]))
    if pa.types.is_date(key_type):
        return st.one_of(st.none(), st.sampled_from(DATES))
    if pa.types.is_string(key_type):
        return ints.map(lambda v: None if v is None else f"k{v}"[: 1 + abs(v) % 4])
    return ints


@st.composite
def rows(draw, prefix: str, key_type: pa.DataType, n_versions: int, id_base: int):
    n = draw(st.integers(0, 18))
    out = []
    for i in range(n):
        out.append(
            {
                f"{prefix}k": draw(key_values(key_type)),
                f"{prefix}j": draw(st.one_of(st.none(), st.integers(0, 3))),
                "x": draw(st.integers(0, 5)),
                f"{prefix}id": id_base + i,
                "lid" if prefix == "l" else "rid": id_base + i,
            }
        )
    versions = [draw(st.integers(1, n_versions)) for _ in out]
    return out, versions


@st.composite
def scenario(draw):
    lt, rt = draw(st.sampled_from(KEY_TYPES))
    two_keys = draw(st.booleans())
    lsch, lspecs = draw(side("l", lt, two_keys))
    rsch, rspecs = draw(side("r", rt, two_keys))
    lrows, lver = draw(rows("l", lt, len(lspecs), 0))
    rrows, rver = draw(rows("r", rt, len(rspecs), 1000))
    on = [("lk", "rk")] + ([("lj", "rj")] if two_keys else [])
    return lsch, lspecs, lrows, lver, rsch, rspecs, rrows, rver, on


def check(data) -> bool:
    lsch, lspecs, lrows, lver, rsch, rspecs, rrows, rver, on = data
    lparts, lby = layout(lsch, lspecs, lrows, lver)
    rparts, rby = layout(rsch, rspecs, rrows, rver)
    compatible = None
    for how in HOWS:
        plan = plan_join_partitions(lspecs, lsch, lparts, rspecs, rsch, rparts, on, how)
        if compatible is None:
            compatible = plan.compatible
        assert plan.compatible == compatible
        if not plan.compatible:
            assert plan.reason and not plan.groups
            continue
        assert_partitions_once(plan)
        expected = reference_join(lrows, rrows, on, how)
        assert grouped_join(plan, lby, rby) == expected, (how, plan.regrouping)
    return bool(compatible)


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenario())
def test_grouped_join_equals_plain_join(data) -> None:
    check(data)


def test_identity_on_both_sides_is_always_compatible() -> None:
    lsch = schema(lk=pa.int32(), lj=pa.int64(), x=pa.int64(), lid=pa.int64())
    rsch = schema(rk=pa.int64(), rj=pa.int64(), x=pa.int64(), rid=pa.int64())
    lspecs = specs([field(lsch, "lk", "identity")], [field(lsch, "lk", "bucket", 4)])
    rspecs = specs([field(rsch, "rk", "identity")])
    lrows = [{"lk": k, "lj": 0, "x": 0, "lid": i} for i, k in enumerate([1, 2, None, 5, 1])]
    rrows = [{"rk": k, "rj": 0, "x": 0, "rid": 100 + i} for i, k in enumerate([1, None, 5, 9])]
    data = (lsch, lspecs, lrows, [1, 2, 1, 2, 2], rsch, rspecs, rrows, [1] * 4, [("lk", "rk")])
    assert check(data)


@pytest.mark.slow
@settings(
    max_examples=3000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(scenario())
def test_grouped_join_equals_plain_join_long(data) -> None:
    check(data)
