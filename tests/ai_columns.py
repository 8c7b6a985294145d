"""AI-shaped columns for tests: an embedding vector, a struct, a list of structs, a map.

``add_ai_columns(table, width)`` appends them to any table (values derived from the
row number, some NULLs), so a test can compare a namespace with them against the
same namespace without them: every feature must behave the same for filters that
do not read them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa

PROFILE = pa.struct([("a", pa.int64()), ("tags", pa.list_(pa.string()))])
ITEMS = pa.list_(pa.struct([("k", pa.string()), ("w", pa.float32())]))
ATTRS = pa.map_(pa.string(), pa.string())
AI_NAMES = ("emb", "profile", "items", "attrs")


def ai_fields(width: int) -> list[pa.Field]:
    """``emb fixed_size_list<float32>[width]``, ``profile``, ``items``, ``attrs``."""
    return [
        pa.field("emb", pa.list_(pa.float32(), width)),
        pa.field("profile", PROFILE),
        pa.field("items", ITEMS),
        pa.field("attrs", ATTRS),
    ]


def ai_arrays(n: int, width: int, seed: int = 0) -> list[pa.Array]:
    """Values for :func:`ai_fields` over ``n`` rows (deterministic in ``seed``)."""
    rng = np.random.default_rng(seed)
    values = pa.array(rng.standard_normal(n * width).astype(np.float32))
    emb = pa.FixedSizeListArray.from_arrays(values, width)
    if n:  # a NULL vector every 17th row
        mask = pa.array([i % 17 == 16 for i in range(n)])
        emb = pa.FixedSizeListArray.from_arrays(values, width, mask=mask)
    profile = pa.array(
        [None if i % 13 == 12 else {"a": i, "tags": ["t", str(i % 4)]} for i in range(n)],
        PROFILE,
    )
    items = pa.array([[{"k": f"k{i % 3}", "w": float(i % 5)}] * (i % 3) for i in range(n)], ITEMS)
    attrs = pa.array([[("c", str(i % 3))] if i % 4 else None for i in range(n)], ATTRS)
    return [emb, profile, items, attrs]


#: A Blob V2 column (``lance.blob_field``), drawn where a test opts in (:func:`add_blob_column`).
BLOB = "payload"


def blob_field() -> pa.Field:
    import lance

    return lance.blob_field(BLOB)


def add_blob_column(table: pa.Table) -> pa.Table:
    """``table`` with :data:`BLOB` appended: small binary objects, a NULL every 11th row."""
    import lance

    data = [None if i % 11 == 10 else bytes([i % 251]) * (64 + i % 7) for i in range(len(table))]
    return table.append_column(blob_field(), lance.blob_array(data))


def add_ai_columns(table: pa.Table, width: int = 8, seed: int = 0) -> pa.Table:
    """``table`` with the four AI-shaped columns appended."""
    for f, arr in zip(ai_fields(width), ai_arrays(table.num_rows, width, seed), strict=True):
        table = table.append_column(f, arr)
    return table


def ai_schema(schema: pa.Schema, width: int = 8) -> pa.Schema:
    """``schema`` with the four AI-shaped columns appended."""
    for f in ai_fields(width):
        schema = schema.append(f)
    return schema


#: Tenants of :func:`tenant_rows` (``t00`` .. ``t63``), one partition table each.
TENANTS = 64


def tenant_rows(width: int, rows_per_tenant: int) -> pa.Table:
    """``id``, ``tenant`` (64 values), ``score`` and the four AI-shaped columns."""
    n = TENANTS * rows_per_tenant
    base = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "tenant": pa.array([f"t{i % TENANTS:02d}" for i in range(n)]),
            "score": pa.array([float(i % 97) for i in range(n)]),
        }
    )
    return add_ai_columns(base, width, seed=7)


#: a namespace scan's EXPLAIN detail: tables read / tables in the namespace
_READS = re.compile(r"partition_tables=(\d+)/(\d+)")


def partition_reads(records: Iterable[Any]) -> list[tuple[int, int]]:
    """(tables read, tables) of each namespace scan in ``capture_scans()`` records, in order."""
    return [
        tuple(map(int, m.groups()))  # type: ignore[misc]
        for r in records
        if (m := _READS.search(r.plan.description))
    ]


_TABLE = re.compile(r"table=([^,]+),")


def named_partition_reads(records: Iterable[Any]) -> list[tuple[str, int, int]]:
    """(table, tables read, tables) of each namespace scan, sorted: the order in which a
    plan's scans run follows its join order, which join statistics may change."""
    return sorted(
        (t.group(1) if (t := _TABLE.search(r.plan.description)) else "", *map(int, m.groups()))
        for r in records
        if (m := _READS.search(r.plan.description))
    )


def used_plan_pass(records: Iterable[Any]) -> bool:
    """True when lance-sql's plan passes changed the plan: a scan pruned through the
    transform-term pass, or a storage-partitioned join replaced a join."""
    return any(
        "prune_filter=" in r.plan.description
        or (
            r.plan.description.startswith("StoragePartitionedJoin")
            and "not applied" not in r.plan.description
        )
        for r in records
    )


def plan_passes_applied(ctx: Any, df: Any) -> bool:
    """Whether lance-sql's plan passes edit ``df``'s plan before it runs in ``ctx``.

    Any pass counts, including those no scan record shows: join statistics (which may
    swap a join's inputs), the ``NOT IN`` expansion (which reads the subquery's table
    again, at most one row), outer-join elimination, partition-wise aggregates.
    """
    from datafusion import DataFrame

    from lance_sql.engines.datafusion.plan_rewrite import rewrite

    inner = DataFrame(df.df)
    return rewrite(ctx, inner).dataframe is not inner


def vector_stops_passes(ctx: Any, df: Any) -> bool:
    """Whether ``df``'s plan cannot enter the plan passes because it reads a vector column.

    DataFusion 55's Substrait producer refuses a fixed-size list in a plan's output
    ("Unsupported cast type ... FixedSizeList"), and lance-sql refuses a read that
    projects or filters one (``substrait_stand_ins``); other refusals are not this case.
    """
    from lance_sql.engines.datafusion import substrait_plan as sp

    try:
        sp.to_substrait(ctx, df.optimized_logical_plan())
    except Exception as exc:
        return "FixedSizeList" in str(exc) or "fixed-size list column" in str(exc)
    return False


def assert_reads_like_scalar(
    ai_reads: list[tuple[Any, ...]],
    scalar_reads: list[tuple[Any, ...]],
    *,
    vector_read: bool,
    plan_pass: bool,
    what: str,
) -> bool:
    """The scans with AI columns in the schema read the tables the scalar-only schema reads.

    One allowed difference: lance-sql's plan passes (transform-term pruning,
    storage-partitioned joins) edit the plan through a Substrait round trip, which
    DataFusion 55 cannot make for a plan reading a fixed-size list. A plan reading
    the vector (``vector_read``) runs as DataFusion built it (EXPLAIN says why), so
    where the scalar plan used a pass (``plan_pass``) it may read more tables, or scan
    where the scalar plan joined partition-wise. Returns True when it did.
    """
    if vector_read and plan_pass:
        # scans pair one by one only when both plans scan the same tables in the same
        # order; a pass that changed the plan's shape (a partition-wise join, a NOT IN
        # expansion) leaves different scans, and the rows are compared after this
        if [a[:-2] for a in ai_reads] == [s[:-2] for s in scalar_reads]:
            assert all(
                a[:-2] == s[:-2] and a[-2] >= s[-2] and a[-1] == s[-1]
                for a, s in zip(ai_reads, scalar_reads, strict=True)
            ), what
        return ai_reads != scalar_reads
    assert ai_reads == scalar_reads, f"AI columns changed the tables read: {what}"
    return False


__all__ = [
    "AI_NAMES",
    "BLOB",
    "TENANTS",
    "add_ai_columns",
    "add_blob_column",
    "ai_arrays",
    "ai_fields",
    "ai_schema",
    "assert_reads_like_scalar",
    "blob_field",
    "named_partition_reads",
    "partition_reads",
    "plan_passes_applied",
    "tenant_rows",
    "used_plan_pass",
    "vector_stops_passes",
]
