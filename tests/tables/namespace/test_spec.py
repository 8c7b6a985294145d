"""Partition spec model: JSON parsing, serialization and every validation rule of the spec."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import lance
import pyarrow as pa
import pytest

from lance_sql.errors import SpecError
from lance_sql.spec.arrow_json import (
    assign_field_ids,
    data_type_from_json,
    data_type_to_json,
    field_ids,
    loads_limited,
    schema_from_json,
    schema_to_json,
)
from lance_sql.spec.partition_field import PartitionField, Transform
from lance_sql.tables.namespace.spec import PartitionSpec, validate_evolution
from lance_sql.tables.namespace.spec_build import build_spec

from .conftest import APPENDIX_SCHEMA, APPENDIX_SPEC_V1, APPENDIX_SPEC_V2

SCHEMA = schema_from_json(APPENDIX_SCHEMA)

# A wider schema for transform applicability: every interesting source type.
WIDE = assign_field_ids(
    pa.schema(
        [
            pa.field("i64", pa.int64()),  # 0
            pa.field("s", pa.utf8()),  # 1
            pa.field("d", pa.date32()),  # 2
            pa.field("ts", pa.timestamp("us", "UTC")),  # 3
            pa.field("f", pa.float64()),  # 4
            pa.field("dec", pa.decimal128(10, 2)),  # 5
            pa.field("lst", pa.list_(pa.int32())),  # 6, item 7
            pa.field("st", pa.struct([("a", pa.int32())])),  # 8, a 9
            pa.field("b", pa.binary()),  # 10
        ]
    )
)


def _spec(fields: list[dict[str, Any]], spec_id: int = 2) -> dict[str, Any]:
    return {"id": spec_id, "fields": fields}


def _field(**kw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"field_id": "f", "source_ids": [0], "result_type": {"type": "int32"}}
    out.update(kw)
    return {k: v for k, v in out.items() if v is not None}


# -- appendix A ------------------------------------------------------------------------------


def test_appendix_a_specs_parse_and_round_trip_exactly() -> None:
    v1 = PartitionSpec.from_json(APPENDIX_SPEC_V1, schema=SCHEMA)
    v2 = PartitionSpec.from_json(json.dumps(APPENDIX_SPEC_V2), schema=SCHEMA)
    assert v1.to_json() == APPENDIX_SPEC_V1
    assert v2.to_json() == APPENDIX_SPEC_V2
    assert v1.fields[0].result_type == pa.date32()
    assert v2.fields[0].transform == Transform("year")
    assert [f.column_name for f in v2.fields] == [
        "partition_field_event_year",
        "partition_field_country",
    ]
    assert v2.namespace_name == "v2" and v2.key == "partition_spec_v2"
    validate_evolution({1: v1, 2: v2})
    # The appendix E form: compact JSON of the spec.
    assert json.loads(v1.to_json_string()) == APPENDIX_SPEC_V1


def test_appendix_schema_round_trips_and_carries_field_ids() -> None:
    assert schema_to_json(SCHEMA) == APPENDIX_SCHEMA
    assert field_ids(SCHEMA) == {0: "id", 1: "event_date", 2: "country"}
    assert not SCHEMA.field("id").nullable


# -- transform objects -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("transform", "key_suffix", "message"),
    [
        ({"type": "weird"}, "transform.type", "unknown transform type 'weird'"),
        ({}, "transform.type", "missing"),
        ({"type": "bucket"}, "transform.num_buckets", "requires 'num_buckets'"),
        ({"type": "bucket", "num_buckets": 0}, "transform.num_buckets", "must be an integer"),
        ({"type": "bucket", "num_buckets": -3}, "transform.num_buckets", "must be an integer"),
        ({"type": "bucket", "num_buckets": "8"}, "transform.num_buckets", "must be an integer"),
        ({"type": "bucket", "num_buckets": True}, "transform.num_buckets", "must be an integer"),
        ({"type": "truncate"}, "transform.width", "requires 'width'"),
        ({"type": "truncate", "width": 0}, "transform.width", "must be an integer"),
        ({"type": "identity", "width": 3}, "transform.width", "not a parameter"),
        ({"type": "year", "num_buckets": 3}, "transform.num_buckets", "not a parameter"),
        ("year", "transform", "expected a transform object"),
    ],
)
def test_bad_transform_objects_name_the_key(transform: Any, key_suffix: str, message: str) -> None:
    doc = _spec([_field(), _field(field_id="g", source_ids=[1], transform=transform)])
    doc["fields"][0] = {
        "field_id": "e",
        "source_ids": [1],
        "transform": {"type": "identity"},
        "result_type": {"type": "date32"},
    }
    with pytest.raises(SpecError, match=message) as err:
        PartitionSpec.from_json(doc, schema=SCHEMA)
    assert err.value.key == f"partition_spec_v2.fields[1].{key_suffix}"
    assert f"partition_spec_v2.fields[1].{key_suffix}" in str(err.value)


# -- field structure -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "key", "message"),
    [
        (
            _field(transform={"type": "identity"}, expression="col0"),
            "partition_spec_v2.fields[0].transform",
            "exactly one of",
        ),
        (_field(), "partition_spec_v2.fields[0]", "exactly one of"),
        (
            _field(field_id="", transform={"type": "year"}),
            "partition_spec_v2.fields[0].field_id",
            "non-empty",
        ),
        (
            _field(field_id=7, transform={"type": "year"}),
            "partition_spec_v2.fields[0].field_id",
            "non-empty string",
        ),
        (
            _field(field_id="a.b", transform={"type": "year"}),
            "partition_spec_v2.fields[0].field_id",
            "disallowed",
        ),
        (
            _field(source_ids=[], transform={"type": "year"}),
            "partition_spec_v2.fields[0].source_ids",
            "must not be empty",
        ),
        (
            _field(source_ids="1", transform={"type": "year"}),
            "partition_spec_v2.fields[0].source_ids",
            "array of integers",
        ),
        (
            {"field_id": "f", "source_ids": [1], "transform": {"type": "year"}},
            "partition_spec_v2.fields[0].result_type",
            "required",
        ),
        (
            _field(transform={"type": "year"}, result_type={"type": "nope"}),
            "partition_spec_v2.fields[0].result_type.type",
            "unknown Arrow type",
        ),
        (
            _field(source_ids=[1], transform={"type": "year"}, result_type={"type": "int64"}),
            "partition_spec_v2.fields[0].result_type",
            "yields int32",
        ),
        (
            _field(source_ids=[2], transform={"type": "identity"}, result_type={"type": "int32"}),
            "partition_spec_v2.fields[0].result_type",
            "yields string",
        ),
        (
            _field(source_ids=[9], transform={"type": "identity"}),
            "partition_spec_v2.fields[0].source_ids[0]",
            "not a field id",
        ),
        (
            _field(source_ids=[2], transform={"type": "year"}),
            "partition_spec_v2.fields[0].transform.type",
            "cannot apply to source 'country' of type string",
        ),
        (
            _field(source_ids=[1, 2], transform={"type": "bucket", "num_buckets": 4}),
            "partition_spec_v2.fields[0].source_ids",
            "exactly one source",
        ),
    ],
)
def test_bad_fields_name_the_key(field: dict[str, Any], key: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as err:
        PartitionSpec.from_json(_spec([field]), schema=SCHEMA)
    assert err.value.key == key


@pytest.mark.parametrize(
    ("source", "transform", "ok"),
    [
        ("d", {"type": "year"}, True),
        ("ts", {"type": "hour"}, True),
        ("d", {"type": "hour"}, False),  # hour needs a timestamp
        ("s", {"type": "month"}, False),
        ("i64", {"type": "day"}, False),
        ("f", {"type": "bucket", "num_buckets": 4}, True),
        ("dec", {"type": "bucket", "num_buckets": 4}, True),
        ("b", {"type": "bucket", "num_buckets": 4}, True),
        ("lst", {"type": "bucket", "num_buckets": 4}, False),
        ("st", {"type": "bucket", "num_buckets": 4}, False),
        ("s", {"type": "truncate", "width": 2}, True),
        ("i64", {"type": "truncate", "width": 2}, True),
        ("dec", {"type": "truncate", "width": 2}, True),
        ("f", {"type": "truncate", "width": 2}, False),
        ("lst", {"type": "identity"}, False),
        ("st.a", {"type": "identity"}, True),  # a struct child has one value per row
        ("lst.item", {"type": "identity"}, False),  # a list item has not
    ],
)
def test_transform_applicability(source: str, transform: dict[str, Any], ok: bool) -> None:
    fields = [{"source": source, "transform": transform, "field_id": "p"}]
    if ok:
        spec = build_spec(fields, spec_id=1, schema=WIDE)
        pf = spec.fields[0]
        expected = (
            pa.int32()
            if transform["type"] not in ("identity", "truncate")
            else WIDE.field(source.split(".")[0]).type
            if "." not in source
            else pa.int32()
        )
        assert pf.result_type == expected
    else:
        with pytest.raises(SpecError) as err:
            build_spec(fields, spec_id=1, schema=WIDE)
        assert err.value.key is not None and err.value.key.startswith("partition_spec_v1.fields[0]")


def test_field_ids_unique_within_a_spec() -> None:
    doc = _spec(
        [
            _field(field_id="x", source_ids=[1], transform={"type": "year"}),
            _field(field_id="x", source_ids=[1], transform={"type": "month"}),
        ]
    )
    with pytest.raises(SpecError, match="already used by fields\\[0\\]") as err:
        PartitionSpec.from_json(doc, schema=SCHEMA)
    assert err.value.key == "partition_spec_v2.fields[1].field_id"


def test_spec_id_must_match_its_key() -> None:
    with pytest.raises(SpecError, match="stored as version 3") as err:
        PartitionSpec.from_json(
            APPENDIX_SPEC_V2, schema=SCHEMA, key="partition_spec_v3", expected_id=3
        )
    assert err.value.key == "partition_spec_v3.id"
    with pytest.raises(SpecError, match="positive integer"):
        PartitionSpec.from_json({"id": 0, "fields": []}, schema=SCHEMA)


def test_invalid_json_and_size_limit() -> None:
    with pytest.raises(SpecError, match="invalid JSON") as err:
        PartitionSpec.from_json('{"id": 1, "fields": [', schema=SCHEMA, key="partition_spec_v1")
    assert err.value.key == "partition_spec_v1"
    huge = json.dumps({"id": 1, "fields": [], "pad": "x" * (1 << 20)})
    with pytest.raises(SpecError, match="exceeds"):
        PartitionSpec.from_json(huge, schema=SCHEMA)
    with pytest.raises(SpecError, match="exceeds"):
        loads_limited("[1]", key="k", limit=2)


# -- expressions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("random() * col0", "not deterministic"),
        ("now()", "not deterministic"),
        ("current_date", "not deterministic"),
        ("col1 + 1", "col1 has no source"),
        ("t.col0", "is not one of col0"),
        ("event_date", "is not one of col0"),
        ("(select 1)", "subqueries"),
        ("col0 +* 2", "cannot parse"),
        ("   ", "non-empty"),
    ],
)
def test_bad_expressions(expression: str, message: str) -> None:
    doc = _spec([_field(source_ids=[0], expression=expression, result_type={"type": "int64"})])
    with pytest.raises(SpecError, match=message) as err:
        PartitionSpec.from_json(doc, schema=SCHEMA)
    assert err.value.key == "partition_spec_v2.fields[0].expression"


def test_good_expression_field() -> None:
    doc = _spec(
        [
            _field(
                field_id="id_mod",
                source_ids=[0, 2],
                expression="abs(col0) % 10 + length(col1)",
                result_type={"type": "int64"},
            )
        ]
    )
    spec = PartitionSpec.from_json(doc, schema=SCHEMA)
    assert spec.fields[0].expression is not None
    assert spec.to_json() == doc


# -- evolution ---------------------------------------------------------------------------------


def test_evolution_field_id_reuse_rules() -> None:
    v1 = PartitionSpec.from_json(APPENDIX_SPEC_V1, schema=SCHEMA)
    # Same definition under a new id: must reuse "event_date".
    bad = copy.deepcopy(APPENDIX_SPEC_V1)
    bad["id"] = 2
    bad["fields"][0]["field_id"] = "the_date"
    v2 = PartitionSpec.from_json(bad, schema=SCHEMA)
    with pytest.raises(SpecError, match="must reuse field_id 'event_date'") as err:
        validate_evolution({1: v1, 2: v2})
    assert err.value.key == "partition_spec_v2.fields[0].field_id"
    # Old id reused for a different definition.
    bad = _spec([_field(field_id="event_date", source_ids=[1], transform={"type": "year"})])
    v2 = PartitionSpec.from_json(bad, schema=SCHEMA)
    with pytest.raises(SpecError, match="defined differently") as err:
        validate_evolution({1: v1, 2: v2})
    assert err.value.key == "partition_spec_v2.fields[0].field_id"


def test_build_spec_names_sources_and_reuses_ids() -> None:
    v1 = PartitionSpec.from_json(APPENDIX_SPEC_V1, schema=SCHEMA)
    spec = build_spec(
        [
            {"source": "event_date", "transform": "identity"},
            {"source": "id", "transform": "bucket", "num_buckets": 16},
            {"sources": ["id", "country"], "transform": {"type": "multi_bucket", "num_buckets": 8}},
            {"source": "country", "transform": "truncate", "width": 2},
            {"source": "event_date", "transform": "month"},
        ],
        spec_id=2,
        schema=SCHEMA,
        previous={1: v1},
    )
    assert [f.field_id for f in spec.fields] == [
        "event_date",
        "id_bucket_16",
        "id_country_bucket_8",
        "country_trunc_2",
        "event_date_month",
    ]
    assert spec.fields[3].result_type == pa.utf8()
    with pytest.raises(SpecError, match="no column named 'nope'") as err:
        build_spec([{"source": "nope", "transform": "identity"}], spec_id=1, schema=SCHEMA)
    assert err.value.key == "partition_spec_v1.fields[0].sources[0]"
    with pytest.raises(SpecError, match="explicit 'field_id'"):
        build_spec(
            [{"source": "id", "expression": "col0 % 3", "result_type": pa.int64()}],
            spec_id=1,
            schema=SCHEMA,
        )


def test_partition_field_dataclass_is_frozen_and_comparable() -> None:
    f = PartitionField("x", (1,), pa.int32(), Transform("year"))
    assert f == PartitionField("x", (1,), pa.int32(), Transform("year"))
    with pytest.raises(AttributeError):
        f.field_id = "y"  # type: ignore[misc]


# -- JsonArrowDataType -------------------------------------------------------------------------

ALL_TYPES = [
    pa.null(),
    pa.bool_(),
    pa.int8(),
    pa.uint8(),
    pa.int16(),
    pa.uint16(),
    pa.int32(),
    pa.uint32(),
    pa.int64(),
    pa.uint64(),
    pa.float16(),
    pa.float32(),
    pa.float64(),
    pa.date32(),
    pa.date64(),
    pa.utf8(),
    pa.large_utf8(),
    pa.string_view(),
    pa.binary(),
    pa.large_binary(),
    pa.binary_view(),
    pa.binary(16),
    pa.decimal128(38, 10),
    pa.decimal256(50, 3),
    pa.timestamp("s"),
    pa.timestamp("ms", "UTC"),
    pa.timestamp("us", "Europe/Paris"),
    pa.timestamp("ns"),
    pa.time32("s"),
    pa.time32("ms"),
    pa.time64("us"),
    pa.time64("ns"),
    pa.duration("s"),
    pa.duration("ns"),
    pa.month_day_nano_interval(),
    pa.list_(pa.int32()),
    pa.list_(pa.field("element", pa.utf8(), nullable=False)),
    pa.large_list(pa.float64()),
    pa.list_(pa.float32(), 128),
    pa.struct([("a", pa.int64()), pa.field("b", pa.list_(pa.utf8()), nullable=False)]),
    pa.map_(pa.utf8(), pa.int64()),
    pa.map_(pa.int32(), pa.struct([("x", pa.bool_())]), keys_sorted=True),
]


@pytest.mark.parametrize("data_type", ALL_TYPES, ids=str)
def test_arrow_types_round_trip(data_type: pa.DataType) -> None:
    obj = json.loads(json.dumps(data_type_to_json(data_type)))
    assert data_type_from_json(obj) == data_type


def test_json_matches_lance_namespace_models() -> None:
    """Our documents validate as lance-namespace's JsonArrowSchema and keep its names."""
    from lance_namespace_urllib3_client.models.json_arrow_schema import JsonArrowSchema

    schema = assign_field_ids(pa.schema([pa.field(f"c{i}", t) for i, t in enumerate(ALL_TYPES)]))
    doc = schema_to_json(schema)
    model = JsonArrowSchema.from_dict(doc)
    assert [f.name for f in model.fields] == schema.names
    types = {f.name: f.type.type for f in model.fields}
    assert types["c1"] == "bool" and types["c15"] == "utf8" and types["c21"] == "fixed_size_binary"
    assert model.fields[22].type.length == 38010  # decimal: precision * 1000 + scale
    assert schema_from_json(json.loads(json.dumps(doc))) == schema


def test_reads_pylance_style_documents_without_units() -> None:
    """pylance writes bare {"type": "timestamp"}; read Arrow's defaults."""
    assert data_type_from_json({"type": "timestamp"}) == pa.timestamp("us")
    assert data_type_from_json({"type": "time32"}) == pa.time32("ms")
    assert data_type_from_json({"type": "boolean"}) == pa.bool_()
    assert data_type_from_json({"type": "decimal128", "length": 10002}) == pa.decimal128(10, 2)
    with pytest.raises(SpecError, match="invalid timestamp unit") as err:
        data_type_from_json({"type": "timestamp", "unit": "fortnight"}, key="result_type")
    assert err.value.key == "result_type.unit"


def test_schema_json_errors_name_the_key() -> None:
    with pytest.raises(SpecError) as err:
        schema_from_json({"fields": [{"name": "a", "type": {"type": "int64"}}, {"name": 3}]})
    assert err.value.key == "schema.fields[1].name"
    with pytest.raises(SpecError, match="duplicate column name"):
        schema_from_json(
            {
                "fields": [
                    {"name": "a", "type": {"type": "int64"}},
                    {"name": "a", "type": {"type": "utf8"}},
                ]
            }
        )
    dup = schema_from_json(
        {
            "fields": [
                {"name": "a", "type": {"type": "int64"}, "metadata": {"lance:field_id": "0"}},
                {"name": "b", "type": {"type": "int64"}, "metadata": {"lance:field_id": "0"}},
            ]
        }
    )
    with pytest.raises(SpecError, match="share lance:field_id 0"):
        field_ids(dup)


def test_assigned_field_ids_match_the_ids_lance_assigns(tmp_path: Path) -> None:
    from lance_sql.format.metadata import open_metadata

    arrow = pa.schema(
        [
            ("a", pa.int64()),
            ("s", pa.struct([("x", pa.int32()), ("y", pa.list_(pa.int8()))])),
            ("m", pa.map_(pa.utf8(), pa.int64())),
            ("z", pa.utf8()),
        ]
    )
    ours = assign_field_ids(arrow)
    uri = str(tmp_path / "t")
    lance.write_dataset(arrow.empty_table(), uri, schema=arrow)
    theirs = open_metadata(uri).schema
    assert field_ids(ours) == field_ids(theirs)
