"""Shared builders for the planning tests: schemas with Lance field ids, one-field specs."""

from __future__ import annotations

import pyarrow as pa

from lance_sql.planning.projection import SpecProjector
from lance_sql.planning.sql_filter import parse_filter
from lance_sql.spec.partition_field import PartitionField, Transform
from lance_sql.spec.predicates import to_sql
from lance_sql.tables.namespace.spec import PartitionSpec


def field(name: str, t: pa.DataType, fid: int) -> pa.Field:
    return pa.field(name, t, metadata={b"lance:field_id": str(fid).encode()})


SCHEMA = pa.schema(
    [
        field("i", pa.int32(), 1),
        field("s", pa.string(), 2),
        field("d", pa.date32(), 3),
        field("ts", pa.timestamp("us"), 4),
        field("tz", pa.timestamp("us", "Europe/Paris"), 5),
        field("k", pa.int64(), 6),
        field("ny", pa.timestamp("us", "America/New_York"), 7),
        field("dec", pa.decimal128(9, 2), 8),
    ]
)
FID = {f.name: int(f.metadata[b"lance:field_id"]) for f in SCHEMA}


def pfield(
    source: str, kind: str, result: pa.DataType | None = None, name: str = "p", **kw
) -> PartitionField:
    t = result or (
        pa.int32() if kind not in ("identity", "truncate") else SCHEMA.field(source).type
    )
    return PartitionField(name, (FID[source],), t, Transform(kind, **kw))


def project(fields: list[PartitionField], sql: str) -> tuple[str, str]:
    """(inclusive SQL, strict SQL) of ``sql`` through a spec made of ``fields``."""
    proj = SpecProjector(PartitionSpec(1, tuple(fields)), SCHEMA)
    pred = parse_filter(sql, SCHEMA)
    return to_sql(proj.inclusive(pred)), to_sql(proj.strict(pred))
