"""Unit tests: every compatibility rule, NULL partitions, one-sided groups, fallbacks."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from join_helpers import (
    assert_partitions_once,
    field,
    grouped_join,
    layout,
    partitions_table,
    reference_join,
    schema,
    specs,
)

from lance_sql.errors import PlanningError
from lance_sql.planning.joins import JoinPlan, plan_join_partitions
from lance_sql.planning.joins.plan import PRESERVED

ORDERS = schema(order_id=pa.int64(), customer_id=pa.int64())
CUSTOMERS = schema(id=pa.int64(), name=pa.string())
ON = [("customer_id", "id")]


def plan_of(lspecs, lparts, rspecs, rparts, how="inner", lsch=ORDERS, rsch=CUSTOMERS, on=ON):
    return plan_join_partitions(lspecs, lsch, lparts, rspecs, rsch, rparts, on, how)


def bucket_side(sch, col, counts_by_version):
    sp = specs(*[[field(sch, col, "bucket", n)] for n in counts_by_version])
    parts = [(v + 1, (b,)) for v, n in enumerate(counts_by_version) for b in range(n)]
    return sp, partitions_table(sp, parts)


def values(refs):
    return [dict(r.values) for r in refs]


# -- appendix F and buckets ------------------------------------------------------------------


def test_appendix_f_orders_16_customers_8() -> None:
    ls, lp = bucket_side(ORDERS, "customer_id", [16])
    rs, rp = bucket_side(CUSTOMERS, "id", [8])
    plan = plan_of(ls, lp, rs, rp)
    assert plan.compatible and plan.reason is None
    assert len(plan.groups) == 8
    assert "bucket % 8" in plan.regrouping and "bucket[16]" in plan.regrouping
    for i, g in enumerate(plan.groups):
        assert g.key == (i,)
        assert [v["customer_id_bucket16"] for v in values(g.left)] == [i, i + 8]
        assert [v["id_bucket8"] for v in values(g.right)] == [i]
    assert_partitions_once(plan)


def test_bucket_gcd_4_and_6_gives_2_groups() -> None:
    ls, lp = bucket_side(ORDERS, "customer_id", [4])
    rs, rp = bucket_side(CUSTOMERS, "id", [6])
    plan = plan_of(ls, lp, rs, rp)
    assert [g.key for g in plan.groups] == [(0,), (1,)]
    assert [v["customer_id_bucket4"] for v in values(plan.groups[0].left)] == [0, 2]
    assert [v["id_bucket6"] for v in values(plan.groups[1].right)] == [1, 3, 5]
    assert "bucket % 2" in plan.regrouping


def test_bucket_gcd_1_falls_back_with_reason() -> None:
    ls, lp = bucket_side(ORDERS, "customer_id", [4])
    rs, rp = bucket_side(CUSTOMERS, "id", [5])
    plan = plan_of(ls, lp, rs, rp)
    assert not plan.compatible and plan.groups == ()
    assert "gcd 1" in plan.reason and "[4, 5]" in plan.reason
    assert "not applied" in plan.explain()


def test_bucket_gcd_over_all_spec_versions() -> None:
    ls, lp = bucket_side(ORDERS, "customer_id", [16, 12])
    rs, rp = bucket_side(CUSTOMERS, "id", [8])
    plan = plan_of(ls, lp, rs, rp)
    assert len(plan.groups) == 4  # gcd(16, 12, 8)
    g0 = plan.groups[0]
    assert sorted((r.spec_version, v) for r in g0.left for v in dict(r.values).values()) == [
        (1, 0),
        (1, 4),
        (1, 8),
        (1, 12),
        (2, 0),
        (2, 4),
        (2, 8),
    ]


def test_identity_against_bucket_hashes_identity_values() -> None:
    ls = specs([field(ORDERS, "customer_id", "identity")])
    lp = partitions_table(ls, [(1, (k,)) for k in [1, 2, 3, -5]])
    rs, rp = bucket_side(CUSTOMERS, "id", [8])
    plan = plan_of(ls, lp, rs, rp)
    # NOTES 2.1: bucket[8] of 1, 2, 3, -5 = 4, 4, 5, 6
    by_key = {g.key: sorted(v["customer_id"] for v in values(g.left)) for g in plan.groups}
    assert by_key == {(4,): [1, 2], (5,): [3], (6,): [-5]}


def test_identity_int32_with_int64() -> None:
    lsch = schema(order_id=pa.int64(), customer_id=pa.int32())
    ls = specs([field(lsch, "customer_id", "identity")])
    rs = specs([field(CUSTOMERS, "id", "identity")])
    plan = plan_of(
        ls,
        partitions_table(ls, [(1, (1,)), (1, (2,))]),
        rs,
        partitions_table(rs, [(1, (2,)), (1, (3,))]),
        how="full",
        lsch=lsch,
    )
    assert [(g.key, len(g.left), len(g.right)) for g in plan.groups] == [
        ((1,), 1, 0),
        ((2,), 1, 1),
        ((3,), 0, 1),
    ]


def test_key_types_that_hash_differently_fall_back() -> None:
    rsch = schema(id=pa.float64(), name=pa.string())
    ls, lp = bucket_side(ORDERS, "customer_id", [8])
    rs, rp = bucket_side(rsch, "id", [8])
    plan = plan_of(ls, lp, rs, rp, rsch=rsch)
    assert not plan.compatible
    assert "customer_id is int64, id is double" in plan.reason


def test_multi_bucket_same_key_order_uses_gcd() -> None:
    lsch = schema(a=pa.int64(), b=pa.string(), lid=pa.int64())
    rsch = schema(x=pa.int64(), y=pa.string(), rid=pa.int64())
    ls = specs([field(lsch, ["a", "b"], "multi_bucket", 8)])
    rs = specs([field(rsch, ["x", "y"], "multi_bucket", 4)])
    on = [("a", "x"), ("b", "y")]
    plan = plan_join_partitions(
        ls,
        lsch,
        partitions_table(ls, [(1, (i,)) for i in range(8)]),
        rs,
        rsch,
        partitions_table(rs, [(1, (i,)) for i in range(4)]),
        on,
        "inner",
    )
    assert len(plan.groups) == 4 and "multi_bucket[8] x multi_bucket[4]" in plan.regrouping


def test_multi_bucket_in_other_key_order_falls_back() -> None:
    lsch = schema(a=pa.int64(), b=pa.string(), lid=pa.int64())
    rsch = schema(x=pa.int64(), y=pa.string(), rid=pa.int64())
    ls = specs([field(lsch, ["a", "b"], "multi_bucket", 8)])
    rs = specs([field(rsch, ["y", "x"], "multi_bucket", 8)])
    plan = plan_join_partitions(
        ls,
        lsch,
        partitions_table(ls, [(1, (0,))]),
        rs,
        rsch,
        partitions_table(rs, [(1, (0,))]),
        [("a", "x"), ("b", "y")],
        "inner",
    )
    assert not plan.compatible and "right spec v1" in plan.reason


def test_identity_and_bucket_on_two_keys_make_a_tuple_key() -> None:
    lsch = schema(a=pa.int64(), b=pa.string(), lid=pa.int64())
    rsch = schema(x=pa.int64(), y=pa.string(), rid=pa.int64())
    ls = specs([field(lsch, "a", "bucket", 4), field(lsch, "b", "identity")])
    rs = specs([field(rsch, "x", "bucket", 2), field(rsch, "y", "identity")])
    lp = partitions_table(ls, [(1, (i, s)) for i in range(4) for s in ("u", "v")])
    rp = partitions_table(rs, [(1, (i, s)) for i in range(2) for s in ("u", "w")])
    plan = plan_join_partitions(ls, lsch, lp, rs, rsch, rp, [("a", "x"), ("b", "y")], "inner")
    assert [g.key for g in plan.groups] == [(0, "u"), (1, "u")]
    assert plan.key_names == ("bucket % 2(a)", "identity(b)")


# -- truncate -----------------------------------------------------------------------------


@pytest.mark.parametrize(("w1", "w2", "coarse"), [(5, 10, 10), (10, 5, 10), (4, 6, 12)])
def test_truncate_numbers_group_by_coarser_width_with_negatives(w1, w2, coarse) -> None:
    lsch = schema(k=pa.int64(), lid=pa.int64())
    rsch = schema(k=pa.int32(), rid=pa.int64())
    ls, rs = specs([field(lsch, "k", "truncate", w1)]), specs([field(rsch, "k", "truncate", w2)])
    keys = list(range(-25, 26))
    lrows = [{"k": k, "lid": i} for i, k in enumerate(keys)]
    rrows = [{"k": k, "rid": 100 + i} for i, k in enumerate(keys)]
    lp, lby = layout(lsch, ls, lrows, [1] * len(lrows))
    rp, rby = layout(rsch, rs, rrows, [1] * len(rrows))
    for how in ("inner", "full"):
        plan = plan_join_partitions(ls, lsch, lp, rs, rsch, rp, [("k", "k")], how)
        assert f"truncate[{coarse}]" in plan.regrouping
        assert grouped_join(plan, lby, rby) == reference_join(lrows, rrows, [("k", "k")], how)
    # -7 truncates toward zero: truncate[5] -> -5, and the group is truncate[10](-5) = 0
    keys_of = {
        v: g.key
        for g in plan.groups
        for r in g.left
        for v in [dict(r.values)["k_truncate" + str(w1)]]
    }
    assert keys_of[-5 if w1 == 5 else (-4 if w1 == 4 else 0)] == (0,)


def test_truncate_strings_group_by_shorter_prefix() -> None:
    lsch = schema(s=pa.string(), lid=pa.int64())
    rsch = schema(s=pa.large_string(), rid=pa.int64())
    ls, rs = specs([field(lsch, "s", "truncate", 3)]), specs([field(rsch, "s", "truncate", 1)])
    lp = partitions_table(ls, [(1, ("abc",)), (1, ("abd",)), (1, ("xy",))])
    rp = partitions_table(rs, [(1, ("a",)), (1, ("z",))])
    plan = plan_join_partitions(ls, lsch, lp, rs, rsch, rp, [("s", "s")], "left")
    assert [(g.key, len(g.left), len(g.right)) for g in plan.groups] == [
        (("a",), 2, 1),
        (("x",), 1, 0),
    ]


def test_truncate_widths_beyond_int64_fall_back() -> None:
    lsch = schema(k=pa.int64(), lid=pa.int64())
    big1, big2 = 2**31 - 1, 2**31 - 19  # two primes: lcm > 2**61 is fine, square them
    ls = specs([field(lsch, "k", "truncate", big1)], [field(lsch, "k", "truncate", big2)])
    rs = specs([field(lsch, "k", "truncate", 2**31 - 61)])
    lp = partitions_table(ls, [(1, (0,)), (2, (0,))])
    rp = partitions_table(rs, [(1, (0,))])
    plan = plan_join_partitions(ls, lsch, lp, rs, lsch, rp, [("k", "k")], "inner")
    assert not plan.compatible and "beyond int64" in plan.reason


# -- time hierarchies -----------------------------------------------------------------------


def test_time_parts_group_by_the_parts_both_sides_have() -> None:
    lsch = schema(d=pa.date32(), lid=pa.int64())
    rsch = schema(d=pa.date32(), rid=pa.int64())
    ls = specs([field(lsch, "d", "year"), field(lsch, "d", "month")])
    rs = specs([field(rsch, "d", "year"), field(rsch, "d", "month"), field(rsch, "d", "day")])
    dates = [dt.date(2024, 12, 31), dt.date(2025, 1, 1), dt.date(2025, 1, 2), None]
    lrows = [{"d": d, "lid": i} for i, d in enumerate(dates)]
    rrows = [{"d": d, "rid": 10 + i} for i, d in enumerate([*dates, dt.date(2025, 2, 1)])]
    lp, lby = layout(lsch, ls, lrows, [1] * 4)
    rp, rby = layout(rsch, rs, rrows, [1] * 5)
    plan = plan_join_partitions(ls, lsch, lp, rs, rsch, rp, [("d", "d")], "inner")
    assert plan.key_names == ("year(d)", "month(d)")
    assert [(g.key, len(g.left), len(g.right)) for g in plan.groups] == [
        ((2024, 12), 1, 1),
        ((2025, 1), 1, 2),
    ]
    for how in PRESERVED:
        plan = plan_join_partitions(ls, lsch, lp, rs, rsch, rp, [("d", "d")], how)
        assert grouped_join(plan, lby, rby) == reference_join(lrows, rrows, [("d", "d")], how)


def test_hour_alone_does_not_group_with_day() -> None:
    ts = pa.timestamp("us", "UTC")
    lsch, rsch = schema(t=ts, lid=pa.int64()), schema(t=ts, rid=pa.int64())
    ls, rs = specs([field(lsch, "t", "hour")]), specs([field(rsch, "t", "day")])
    plan = plan_join_partitions(
        ls,
        lsch,
        partitions_table(ls, [(1, (3,))]),
        rs,
        rsch,
        partitions_table(rs, [(1, (4,))]),
        [("t", "t")],
        "inner",
    )
    assert not plan.compatible
    assert "hour on t = t is missing from right spec v1" in plan.reason
    assert "day on t = t is missing from left spec v1" in plan.reason


def test_time_parts_need_identical_key_types() -> None:
    lsch = schema(t=pa.timestamp("us", "UTC"), lid=pa.int64())
    rsch = schema(t=pa.timestamp("us", "America/New_York"), rid=pa.int64())
    ls, rs = specs([field(lsch, "t", "year")]), specs([field(rsch, "t", "year")])
    plan = plan_join_partitions(
        ls,
        lsch,
        partitions_table(ls, [(1, (2025,))]),
        rs,
        rsch,
        partitions_table(rs, [(1, (2025,))]),
        [("t", "t")],
        "inner",
    )
    assert not plan.compatible


def test_expression_fields_must_match_exactly() -> None:
    lsch = schema(k=pa.int64(), lid=pa.int64())
    e1 = field(lsch, "k", "expression", expression="col0 % 3", result_type=pa.int64())
    e2 = field(lsch, "k", "expression", expression="col0  %  3", result_type=pa.int64())
    e3 = field(lsch, "k", "expression", expression="col0 % 4", result_type=pa.int64())
    lp = partitions_table(specs([e1]), [(1, (0,)), (1, (None,))])
    ok = plan_join_partitions(specs([e1]), lsch, lp, specs([e2]), lsch, lp, [("k", "k")], "inner")
    assert ok.compatible and [g.key for g in ok.groups] == [(0,), (None,)]  # NULL is a value
    bad = plan_join_partitions(specs([e1]), lsch, lp, specs([e3]), lsch, lp, [("k", "k")], "inner")
    assert not bad.compatible and "col0 % 4" in bad.reason


# -- spec evolution ------------------------------------------------------------------------


def test_two_spec_versions_identity_then_bucket() -> None:
    ls = specs(
        [field(ORDERS, "customer_id", "identity")], [field(ORDERS, "customer_id", "bucket", 8)]
    )
    lp = partitions_table(ls, [(1, (1,)), (1, (3,)), (2, (4,)), (2, (5,))])
    rs, rp = bucket_side(CUSTOMERS, "id", [16])
    plan = plan_of(ls, lp, rs, rp)
    assert "bucket % 8" in plan.regrouping and "bucket[8]/identity x bucket[16]" in plan.regrouping
    g4 = next(g for g in plan.groups if g.key == (4,))
    assert [r.object_id.split("$")[0] for r in g4.left] == ["v1", "v2"]  # id 1 -> bucket 4
    assert [dict(r.values)["id_bucket16"] for r in g4.right] == [4, 12]


def test_version_without_a_key_field_falls_back_naming_it() -> None:
    ls = specs(
        [field(ORDERS, "customer_id", "bucket", 8)], [field(ORDERS, "order_id", "bucket", 8)]
    )
    lp = partitions_table(ls, [(1, (0,)), (2, (0,))])
    rs, rp = bucket_side(CUSTOMERS, "id", [8])
    plan = plan_of(ls, lp, rs, rp)
    assert not plan.compatible
    assert "left spec v2 has no partition field on the join keys (customer_id)" in plan.reason
    assert "order_id_bucket8 (bucket[8])" in plan.reason


def test_versions_without_partitions_do_not_constrain() -> None:
    ls = specs(
        [field(ORDERS, "customer_id", "bucket", 8)], [field(ORDERS, "order_id", "bucket", 8)]
    )
    lp = partitions_table(ls, [(1, (0,))])  # nothing was written under v2 (or it was pruned)
    rs, rp = bucket_side(CUSTOMERS, "id", [8])
    assert plan_of(ls, lp, rs, rp).compatible


# -- NULL partitions and one-sided groups ---------------------------------------------------


@pytest.mark.parametrize("how", sorted(PRESERVED))
def test_null_partitions_per_join_type(how) -> None:
    ls = specs([field(ORDERS, "customer_id", "identity")])
    rs = specs([field(CUSTOMERS, "id", "bucket", 4)])
    lp = partitions_table(ls, [(1, (1,)), (1, (None,))])
    rp = partitions_table(rs, [(1, (0,)), (1, (None,))])
    plan = plan_of(ls, lp, rs, rp, how=how)
    nulls = [g for g in plan.groups if g.key is None]  # the NULL-key groups
    keep_left, keep_right = PRESERVED[how]
    assert [len(g.left) for g in nulls if g.left] == ([1] if keep_left else [])
    assert [len(g.right) for g in nulls if g.right] == ([1] if keep_right else [])
    assert all(not (g.left and g.right) for g in nulls)


def test_null_partitions_rows_differential() -> None:
    lsch = schema(k=pa.int64(), lid=pa.int64())
    rsch = schema(k=pa.int64(), rid=pa.int64())
    ls, rs = specs([field(lsch, "k", "identity")]), specs([field(rsch, "k", "bucket", 2)])
    lrows = [{"k": k, "lid": i} for i, k in enumerate([None, 1, 2, None, 7])]
    rrows = [{"k": k, "rid": 10 + i} for i, k in enumerate([None, 2, 3, 7])]
    lp, lby = layout(lsch, ls, lrows, [1] * 5)
    rp, rby = layout(rsch, rs, rrows, [1] * 4)
    for how in PRESERVED:
        plan = plan_join_partitions(ls, lsch, lp, rs, rsch, rp, [("k", "k")], how)
        assert grouped_join(plan, lby, rby) == reference_join(lrows, rrows, [("k", "k")], how)


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("inner", [(2,)]),
        ("semi", [(2,)]),
        ("right_semi", [(2,)]),
        ("left", [(1,), (2,)]),
        ("anti", [(1,), (2,)]),
        ("right", [(2,), (3,)]),
        ("right_anti", [(2,), (3,)]),
        ("full", [(1,), (2,), (3,)]),
        ("left_semi", [(2,)]),
    ],
)
def test_one_sided_groups(how, expected) -> None:
    ls = specs([field(ORDERS, "customer_id", "identity")])
    rs = specs([field(CUSTOMERS, "id", "identity")])
    plan = plan_of(
        ls,
        partitions_table(ls, [(1, (1,)), (1, (2,))]),
        rs,
        partitions_table(rs, [(1, (2,)), (1, (3,))]),
        how=how,
    )
    assert [g.key for g in plan.groups] == expected


# -- serialisation ----------------------------------------------------------------------------


def test_plan_round_trips_through_json() -> None:
    lsch = schema(k=pa.binary(), d=pa.date32(), lid=pa.int64())
    ls = specs([field(lsch, "k", "identity"), field(lsch, "d", "identity")])
    lp = partitions_table(
        ls, [(1, (b"\x00\xff", dt.date(2025, 1, 1))), (1, (None, None)), (1, (b"a", None))]
    )
    plan = plan_join_partitions(ls, lsch, lp, ls, lsch, lp, [("k", "k")], "full")
    assert len(plan.groups) == 4  # 2 keys + a NULL group per side
    assert JoinPlan.from_json(plan.to_json()) == plan
    fallback = plan_of(*bucket_side(ORDERS, "customer_id", [3]), *bucket_side(CUSTOMERS, "id", [5]))
    assert JoinPlan.from_json(fallback.to_json()) == fallback


def test_float_keys_canonicalise_nan_and_negative_zero() -> None:
    sch = schema(f=pa.float64(), lid=pa.int64())
    sp = specs([field(sch, "f", "identity")])
    lp = partitions_table(sp, [(1, (float("nan"),)), (1, (-0.0,))])
    rp = partitions_table(sp, [(1, (float("nan"),)), (1, (0.0,))])
    plan = plan_join_partitions(sp, sch, lp, sp, sch, rp, [("f", "f")], "inner")
    assert sorted(map(str, (g.key for g in plan.groups))) == ["('NaN',)", "(0.0,)"]
    text = plan.to_json()  # NaN != NaN, so compare the serialised forms
    assert JoinPlan.from_json(text).to_json() == text


# -- errors -------------------------------------------------------------------------------------


def test_errors_name_the_object_at_fault() -> None:
    ls, lp = bucket_side(ORDERS, "customer_id", [4])
    rs, rp = bucket_side(CUSTOMERS, "id", [4])
    with pytest.raises(PlanningError, match="'sideways'"):
        plan_of(ls, lp, rs, rp, how="sideways")
    with pytest.raises(PlanningError, match="right join key 'nope'"):
        plan_of(ls, lp, rs, rp, on=[("customer_id", "nope")])
    with pytest.raises(PlanningError, match="at least one"):
        plan_of(ls, lp, rs, rp, on=[])
    with pytest.raises(PlanningError, match=r"\(1, 2, 3\)"):
        plan_of(ls, lp, rs, rp, on=[(1, 2, 3)])
    bad = lp.set_column(2, "spec_version", pa.array([7] * lp.num_rows, pa.int32()))
    with pytest.raises(
        PlanningError, match=r"left partition 'v1\$p00000\$dataset' uses spec version 7"
    ):
        plan_of(ls, bad, rs, rp)
    missing = rp.drop_columns(["partition_field_id_bucket4"])
    with pytest.raises(PlanningError, match="right partitions table lacks column"):
        plan_of(ls, lp, rs, missing)
    with pytest.raises(PlanningError, match="expected format"):
        JoinPlan.from_json('{"format": "other"}')
    with pytest.raises(PlanningError, match="not valid JSON"):
        JoinPlan.from_json("{")


def test_spec_version_derived_from_object_id_when_absent() -> None:
    ls, lp = bucket_side(ORDERS, "customer_id", [4])
    rs, rp = bucket_side(CUSTOMERS, "id", [2])
    plan = plan_of(ls, lp.drop_columns(["spec_version"]), rs, rp)
    assert len(plan.groups) == 2


def test_truncate_uint64_beyond_int64() -> None:
    lsch = schema(k=pa.uint64(), lid=pa.int64())
    ls = specs([field(lsch, "k", "truncate", 10)])
    rs = specs([field(lsch, "k", "identity")])
    big = 2**64 - 5
    plan = plan_join_partitions(
        ls,
        lsch,
        partitions_table(ls, [(1, (big - big % 10,))]),
        rs,
        lsch,
        partitions_table(rs, [(1, (big,)), (1, (7,))]),
        [("k", "k")],
        "inner",
    )
    assert [g.key for g in plan.groups] == [(big - big % 10,)]
