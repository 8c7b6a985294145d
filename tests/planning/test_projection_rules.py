"""Per transform x operator: the inclusive and strict projections, spelled out.

These tables are the documentation of docs/pruning.md made executable; the
differential property test checks the same rules on random data.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from planning_helpers import pfield, project

from lance_sql.spec.partition_field import PartitionField

P = "partition_field_p"

IDENTITY = [
    ("i = 5", f"{P} = 5", f"{P} = 5"),
    ("i != 5", f"{P} <> 5", f"{P} <> 5"),
    ("i < 5", f"{P} < 5", f"{P} < 5"),
    ("i >= 5", f"{P} >= 5", f"{P} >= 5"),
    ("i IN (1,2)", f"{P} IN (1, 2)", f"{P} IN (1, 2)"),
    ("i NOT IN (1,2)", f"{P} NOT IN (1, 2)", f"{P} NOT IN (1, 2)"),
    ("i IS NULL", f"{P} IS NULL", f"{P} IS NULL"),
    ("i IS NOT NULL", f"{P} IS NOT NULL", f"{P} IS NOT NULL"),
    ("i BETWEEN 1 AND 5", f"{P} >= 1 AND {P} <= 5", f"{P} >= 1 AND {P} <= 5"),
    ("NOT (i < 5)", f"{P} >= 5", f"{P} >= 5"),
    ("i = 1.5", "FALSE", "FALSE"),
    ("i < 1.5", f"{P} <= 1", f"{P} <= 1"),
    ("i > 3000000000", "FALSE", "FALSE"),
    ("i < 3000000000", f"{P} IS NOT NULL", f"{P} IS NOT NULL"),
    ("i + 1 = 2", "TRUE", "FALSE"),
]

TRUNCATE_INT = [  # W = 5: truncation toward zero, so 0 holds -4..4 and -5 holds -9..-5
    ("i = -7", f"{P} = -5", "FALSE"),
    ("i >= -7", f"{P} >= -5", f"{P} > -5"),
    ("i > -7", f"{P} >= -5", f"{P} > -5"),
    ("i < -7", f"{P} <= -5", f"{P} < -5"),
    ("i <= -7", f"{P} <= -5", f"{P} < -5"),
    ("i < 0", f"{P} <= 0", f"{P} < 0"),
    ("i >= 0", f"{P} >= 0", f"{P} > 0"),
    ("i > 4", f"{P} >= 5", f"{P} > 0"),
    ("i != 3", "TRUE", f"{P} <> 0"),
    ("i IN (-7, 7)", f"{P} IN (-5, 5)", "FALSE"),
    ("i BETWEEN -6 AND 6", f"{P} >= -5 AND {P} <= 5", f"{P} > -5 AND {P} < 5"),
    ("i - i % 5 = -5", f"{P} = -5", f"{P} = -5"),
    ("i >= -2147483648", f"{P} IS NOT NULL", f"{P} IS NOT NULL"),
    ("i >= -2147483647", f"{P} >= -2147483645", f"{P} > -2147483645"),
    ("i > 2147483647", "FALSE", "FALSE"),
]

TRUNCATE_STR = [  # W = 2
    ("s = 'abc'", f"{P} = 'ab'", "FALSE"),
    ("s = 'a'", f"{P} = 'a'", f"{P} = 'a'"),
    ("s LIKE 'abc%'", f"{P} = 'ab'", "FALSE"),
    ("s LIKE 'ab%'", f"{P} = 'ab'", f"starts_with({P}, 'ab')"),
    ("s LIKE 'a%'", f"starts_with({P}, 'a')", f"starts_with({P}, 'a')"),
    ("s NOT LIKE 'abc%'", "TRUE", f"NOT starts_with({P}, 'ab')"),
    ("s NOT LIKE 'a%'", f"NOT starts_with({P}, 'a')", f"NOT starts_with({P}, 'a')"),
    ("s >= 'abc'", f"{P} >= 'ab'", f"{P} > 'ab'"),
    ("s < 'abc'", f"{P} <= 'ab'", f"{P} < 'ab'"),
    ("left(s, 2) = 'ab'", f"{P} = 'ab'", f"{P} = 'ab'"),
    ("left(s, 3) = 'abc'", "TRUE", "FALSE"),
]

BUCKET = [  # N = 16; bucket[16] of int 1, 2, 3 = 4, 12, 13 (NOTES 2.1)
    ("i = 1", f"{P} = 4", "FALSE"),
    ("i IN (1, 2, 3)", f"{P} IN (4, 12, 13)", "FALSE"),
    ("i != 1", "TRUE", f"{P} <> 4"),
    ("i NOT IN (1, 2)", "TRUE", f"{P} NOT IN (4, 12)"),
    ("i > 1", "TRUE", "FALSE"),
    ("i IS NULL", f"{P} IS NULL", f"{P} IS NULL"),
    ("abs(murmur3(i)) % 16 = 3", f"{P} = 3", f"{P} = 3"),
    ("abs(murmur3(i)) % 8 = 3", f"{P} IN (3, 11)", f"{P} IN (3, 11)"),
    ("abs(murmur3(i)) % 32 = 19", f"{P} = 3", "FALSE"),
    ("abs(murmur3(i)) % 16 >= 14", f"{P} IN (14, 15)", f"{P} IN (14, 15)"),
    # murmur3(i) % 16 = 3 needs a hash >= 0 with abs % 16 = 3; = -3 a negative hash
    ("murmur3(i) % 16 = 3", f"{P} = 3", "FALSE"),
    ("murmur3(i) % 16 = -3", f"{P} = 3", "FALSE"),
    ("murmur3(i) % 16 = 16", "FALSE", "FALSE"),
    ("murmur3(i) % 4 = -3", f"{P} IN (3, 7, 11, 15)", "FALSE"),
    ("murmur3(i) % 16 = 0", f"{P} = 0", f"{P} = 0"),
    ("murmur3(i) = 1392991556", f"{P} = 4", "FALSE"),
    ("abs(murmur3(i)) % 16 IS NULL", f"{P} IS NULL", f"{P} IS NULL"),
    ("abs(murmur3(k)) % 16 = 3", "TRUE", "FALSE"),
]

YEAR_DATE = [
    ("d = DATE '2025-12-10'", f"{P} = 2025", "FALSE"),
    ("d = 20432", f"{P} = 2025", "FALSE"),
    ("d = '2025-12-10'", f"{P} = 2025", "FALSE"),
    ("d >= DATE '2025-01-01'", f"{P} >= 2025", f"{P} > 2024"),
    ("d > DATE '2024-12-31'", f"{P} >= 2025", f"{P} > 2024"),
    ("d < DATE '2025-01-01'", f"{P} <= 2024", f"{P} < 2025"),
    ("d <= DATE '1969-12-31'", f"{P} <= 1969", f"{P} < 1970"),
    ("d < DATE '1900-03-01'", f"{P} <= 1900", f"{P} < 1900"),
    ("d != DATE '2025-12-10'", "TRUE", f"{P} <> 2025"),
    ("year(d) = 2025", f"{P} = 2025", f"{P} = 2025"),
    ("date_part('year', d) >= 2025", f"{P} >= 2025", f"{P} >= 2025"),
    ("EXTRACT(year FROM d) IN (2024, 2025)", f"{P} IN (2024, 2025)", f"{P} IN (2024, 2025)"),
    ("d IN (DATE '1969-12-31', DATE '1970-01-01')", f"{P} IN (1969, 1970)", "FALSE"),
    ("d < TIMESTAMP '2025-01-01 00:00:01'", f"{P} <= 2025", f"{P} < 2025"),
    ("date_trunc('year', d) = TIMESTAMP '2025-01-01 00:00:00'", f"{P} = 2025", f"{P} = 2025"),
    ("date_trunc('year', d) = TIMESTAMP '2025-01-02 00:00:00'", "FALSE", "FALSE"),
    ("date_trunc('month', d) < TIMESTAMP '2025-03-01 00:00:00'", f"{P} <= 2025", f"{P} < 2025"),
]


def _check(fields: list[PartitionField], cases: list[tuple[str, str, str]]) -> None:
    for sql, inclusive, strict in cases:
        assert project(fields, sql) == (inclusive, strict), sql


def test_identity() -> None:
    _check([pfield("i", "identity")], IDENTITY)


def test_truncate_integers_rounds_toward_zero() -> None:
    _check([pfield("i", "truncate", width=5)], TRUNCATE_INT)


def test_truncate_strings() -> None:
    _check([pfield("s", "truncate", width=2)], TRUNCATE_STR)


def test_bucket_and_bucket_terms() -> None:
    _check([pfield("i", "bucket", num_buckets=16)], BUCKET)


def test_year_on_dates_including_before_1970() -> None:
    _check([pfield("d", "year")], YEAR_DATE)


@pytest.mark.parametrize(
    ("kind", "sql", "inclusive", "strict"),
    [
        ("month", "d = DATE '2025-12-10'", f"{P} = 12", "FALSE"),
        ("month", "d >= DATE '2025-12-10'", "TRUE", "FALSE"),  # month alone is not monotonic
        ("month", "date_part('month', d) IN (1, 2)", f"{P} IN (1, 2)", f"{P} IN (1, 2)"),
        ("day", "d != DATE '2025-12-10'", "TRUE", f"{P} <> 10"),
        ("day", "d NOT IN (DATE '2025-12-10', DATE '2025-12-11')", "TRUE", f"{P} NOT IN (10, 11)"),
        ("hour", "ts = TIMESTAMP '2025-12-10 05:30:00'", f"{P} = 5", "FALSE"),
        ("hour", "date_part('hour', ts) = 5", f"{P} = 5", f"{P} = 5"),
        ("hour", "ts IS NULL", f"{P} IS NULL", f"{P} IS NULL"),
    ],
)
def test_month_day_hour(kind: str, sql: str, inclusive: str, strict: str) -> None:
    source = "ts" if kind == "hour" else "d"
    assert project([pfield(source, kind)], sql) == (inclusive, strict)


def test_identity_on_strings_and_starts_with() -> None:
    f = [pfield("s", "identity")]
    assert project(f, "s LIKE 'ab%'") == (f"starts_with({P}, 'ab')",) * 2
    assert project(f, "s NOT LIKE 'ab%'") == (f"NOT starts_with({P}, 'ab')",) * 2
    assert project(f, "s LIKE 'ab'") == (f"{P} = 'ab'",) * 2
    assert project(f, "s LIKE 'a_b%'") == ("TRUE", "FALSE")  # not a prefix pattern


def test_multi_bucket_needs_every_source_bound() -> None:
    mb = PartitionField("p", (1, 2), pa.int32(), transform=None, expression=None)
    from lance_sql.spec.partition_field import Transform

    mb = PartitionField("p", (1, 2), pa.int32(), Transform("multi_bucket", num_buckets=8))
    assert project([mb], "i = 1") == ("TRUE", "FALSE")
    inclusive, strict = project([mb], "i = 1 AND s = 'US'")
    assert inclusive.startswith(f"{P} = ") and strict == "FALSE"
    inclusive, _ = project([mb], "i IN (1, 2) AND s IN ('US', 'FR') AND k = 3")
    assert inclusive.startswith(f"{P} IN (")
    # OR chains of equalities (DataFusion's IN lists) merge into IN lists first
    assert project([mb], "(i = 1 OR i = 2) AND (s = 'US' OR s = 'FR')")[0] == inclusive
    # a cross product above the cap prunes nothing rather than enumerating forever
    many = ", ".join(str(v) for v in range(100))
    assert (
        project([mb], f"i IN ({many}) AND s IN ({', '.join(repr(str(v)) for v in range(20))})")[0]
        == "TRUE"
    )


def test_expression_fields_substitute_literals() -> None:
    e = PartitionField("p", (1,), pa.int64(), expression="col0 % 3")
    assert project([e], "i = 7") == (f"{P} = 1", "FALSE")
    assert project([e], "i IN (7, 8, 10)") == (f"{P} IN (1, 2)", "FALSE")
    assert project([e], "i > 7") == ("TRUE", "FALSE")
    both = PartitionField("p", (1, 6), pa.int64(), expression="col0 + col1")
    assert project([both], "i = 1 AND k IN (2, 3)") == (f"{P} IN (3, 4)", "FALSE")
    assert project([both], "i = 1") == ("TRUE", "FALSE")


def test_appendix_d_year_of_date_expression() -> None:
    e = PartitionField("p", (3,), pa.int32(), expression="date_part('year', col0)")
    assert project([e], "d = '2025-12-10'") == (f"{P} = 2025", "FALSE")
    assert project([e], "d IS NULL") == (f"{P} IS NULL", "FALSE")


def test_year_terms_also_prune_identity_and_chains_on_the_source() -> None:
    assert (
        project([pfield("d", "identity")], "year(d) = 2025")
        == (f"{P} >= DATE '2025-01-01' AND {P} < DATE '2026-01-01'",) * 2
    )
    assert project([pfield("ts", "identity")], "year(ts) IN (1969, 2025)")[0] == (
        f"({P} >= TIMESTAMP '1969-01-01T00:00:00' AND {P} < TIMESTAMP '1970-01-01T00:00:00')"
        f" OR ({P} >= TIMESTAMP '2025-01-01T00:00:00' AND {P} < TIMESTAMP '2026-01-01T00:00:00')"
    )
    # zoned timestamps: a local year has no fixed start instant; only a year field prunes
    assert project([pfield("tz", "identity")], "year(tz) = 2025") == ("TRUE", "FALSE")


def test_identity_on_floats_prunes_equality_only() -> None:
    """DataFusion orders NaN above every number; pyarrow's comparisons with NaN are false."""
    from planning_helpers import field as schema_field

    from lance_sql.planning.projection import SpecProjector
    from lance_sql.planning.sql_filter import parse_filter
    from lance_sql.spec.partition_field import Transform
    from lance_sql.spec.predicates import to_sql
    from lance_sql.tables.namespace.spec import PartitionSpec

    schema = pa.schema([schema_field("f", pa.float64(), 1)])
    spec = PartitionSpec(1, (PartitionField("p", (1,), pa.float64(), Transform("identity")),))
    proj = SpecProjector(spec, schema)
    for sql, inclusive, strict in [
        ("f = 1.5", f"{P} = 1.5", f"{P} = 1.5"),
        ("f IN (1.5, 2.0)", f"{P} IN (1.5, 2.0)", f"{P} IN (1.5, 2.0)"),
        ("f > 1.5", "TRUE", "FALSE"),
        ("f != 1.5", "TRUE", "FALSE"),
    ]:
        pred = parse_filter(sql, schema)
        assert (to_sql(proj.inclusive(pred)), to_sql(proj.strict(pred))) == (inclusive, strict)
