"""A ``__manifest`` written by someone else cannot make lance-sql escape, run, or crash.

Each case tampers with a real namespace on disk the way a hostile or buggy
writer could, then checks that opening, reading, writing and cleaning refuse
it with a typed error naming the object at fault.
"""

from __future__ import annotations

import glob
import json
import struct
from datetime import timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from workers import batch_for

from lance_sql.errors import LanceSqlError, SpecError, UnsafeLocationError, UnsupportedFeatureError
from lance_sql.format.manifest import parse_manifest_bytes
from lance_sql.spec.arrow_json import MAX_JSON_BYTES
from lance_sql.tables.namespace.cleanup import cleanup_namespace
from lance_sql.tables.namespace.manifest_table import commit_rows, update_properties
from lance_sql.tables.namespace.namespace import PartitionedNamespace

BAD_LOCATIONS = [
    "../outside",
    "a/../../outside",
    "x/..",
    "/etc",
    "/tmp/elsewhere",
    "~/elsewhere",
    "s3://bucket/table",
    "file:///etc",
    "memory://t",
    "http://host/t",
    "C:\\data\\t",
    "c:/data",
    "a\\..\\b",
    "",
    ".",
    "./t",
    "a//b",
    "a/./b",
    "t\x00",
]


@pytest.fixture
def namespace(make_namespace):
    root = make_namespace()
    ns = PartitionedNamespace.open(root)
    ns.append(batch_for(1, 0))
    return root


def _tamper_location(root: str, location: str) -> str:
    ns = PartitionedNamespace.open(root)
    rows = ns.snapshot.rows
    is_table = pc.equal(rows.column("object_type"), "table").to_pylist()
    victim = rows.column("object_id").to_pylist()[is_table.index(True)]
    locs = [
        location if oid == victim else loc
        for oid, loc in zip(
            rows.column("object_id").to_pylist(), rows.column("location").to_pylist(), strict=True
        )
    ]
    idx = rows.schema.get_field_index("location")
    commit_rows(ns.snapshot, rows.set_column(idx, rows.schema.field(idx), pa.array(locs)))
    return victim


@pytest.mark.parametrize("location", BAD_LOCATIONS)
def test_unsafe_locations_refused_everywhere(namespace, location):
    root = namespace
    victim = _tamper_location(root, location)
    ns = PartitionedNamespace.open(root)
    for action in (ns.tables, ns.to_table, ns.partitions_read_all):
        with pytest.raises(UnsafeLocationError) as err:
            action()
        assert victim in str(err.value)
    with pytest.raises(UnsafeLocationError, match=r"\$dataset"):
        ns.append(batch_for(1, 1))
    # cleanup never follows a hostile location: it only looks inside the root
    report = cleanup_namespace(ns, older_than=timedelta(0))
    assert all(f.startswith(root) for f in report.files)


def _partitions_read_all(self: PartitionedNamespace) -> None:
    for unit in self.scan_units():
        unit.to_batches(None, None)


PartitionedNamespace.partitions_read_all = _partitions_read_all  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "expression",
    ["random()", "now()", "uuid()", "col0 + random()", "my_udf(col0)", "evil(col0, 'x')",
     "(SELECT 1)", "current_user()"],
)  # fmt: skip
def test_expression_outside_allow_list_refused(tmp_path, expression):
    schema = pa.schema([pa.field("a", pa.int64())])
    field = {"sources": ["a"], "expression": expression, "result_type": pa.int64(), "field_id": "e"}
    with pytest.raises(SpecError) as err:
        PartitionedNamespace.create(str(tmp_path / "ns"), schema, [field])
    assert "partition_spec_v1.fields[0].expression" in str(err.value)


def test_allowed_expression_accepted(tmp_path):
    schema = pa.schema([pa.field("a", pa.int64())])
    field = {"sources": ["a"], "expression": "abs(col0) % 3", "result_type": pa.int64(),
             "field_id": "e"}  # fmt: skip
    ns = PartitionedNamespace.create(str(tmp_path / "ns"), schema, [field])
    ns.append(pa.table({"a": [1, -2, 3]}))
    assert len(ns.tables()) == 3


def test_tampered_spec_expression_refused_on_open(namespace):
    root = namespace
    ns = PartitionedNamespace.open(root)
    spec = json.loads(ns.snapshot.properties["partition_spec_v1"])
    field = spec["fields"][0]
    field.pop("transform")
    field["expression"] = "my_udf(col0)"
    update_properties(ns.snapshot, {"partition_spec_v1": json.dumps(spec)})
    with pytest.raises(SpecError, match=r"partition_spec_v1\.fields\[0\]\.expression"):
        PartitionedNamespace.open(root)


@pytest.mark.parametrize("key", ["partition_spec_v1", "schema"])
@pytest.mark.parametrize(
    "document",
    [
        "x" * (MAX_JSON_BYTES + 1),
        '{"a": "' + "y" * MAX_JSON_BYTES + '"}',
        "[" * 100_000 + "]" * 100_000,
        "{not json",
        "null",
        "[]",
        '{"fields": 5}',
    ],
    ids=["huge", "huge-valid", "deep", "broken", "null", "array", "wrong-type"],
)
def test_root_property_json_limited_and_validated(namespace, key, document):
    root = namespace
    update_properties(PartitionedNamespace.open(root).snapshot, {key: document})
    with pytest.raises(SpecError) as err:
        PartitionedNamespace.open(root)
    assert key in str(err.value)


def test_deeply_nested_schema_type_refused(namespace):
    depth = 3_000  # JSON text built by hand: json.dumps itself would overflow the stack
    leaf = '{"name": "leaf", "type": {"name": "int64"}, "nullable": true}'
    head = '{"name": "s", "type": {"name": "struct"}, "nullable": true, "children": ['
    text = '{"fields": [' + head * depth + leaf + "]}" * depth + "]}"
    assert len(text) < MAX_JSON_BYTES
    root = namespace
    update_properties(PartitionedNamespace.open(root).snapshot, {"schema": text})
    with pytest.raises(LanceSqlError) as err:
        PartitionedNamespace.open(root)
    assert "schema" in str(err.value)


def set_reader_flag(manifest_path: str, bit: int) -> None:
    """Rewrite one manifest file with an extra reader feature flag (footer kept valid)."""
    data = Path(manifest_path).read_bytes()
    m = parse_manifest_bytes(data, path=manifest_path)
    m.reader_feature_flags |= 1 << bit
    (pos,) = struct.unpack_from("<Q", data, len(data) - 16)
    body = m.SerializeToString()
    out = data[:pos] + struct.pack("<I", len(body)) + body + struct.pack("<Q", pos) + data[-8:]
    Path(manifest_path).write_bytes(out)


def _latest_manifest(table_dir: str) -> str:
    return sorted(glob.glob(f"{glob.escape(table_dir)}/_versions/*.manifest"))[0]


# pylance opens partition tables and __manifest before this project's own parser
# sees their manifests; on its refusal the format parser diagnoses the manifest
# (lance_sql.tables.pylance_errors), so unknown reader flags are
# UnsupportedFeatureError naming the table.
def test_unknown_reader_flag_in_partition_table_refused(namespace):
    root = namespace
    entry = PartitionedNamespace.open(root).tables()[0]
    set_reader_flag(_latest_manifest(entry.uri), 40)
    with pytest.raises(LanceSqlError) as err:
        PartitionedNamespace.open(root).to_table()
    assert entry.object_id in str(err.value)
    with pytest.raises(LanceSqlError):
        PartitionedNamespace.open(root).append(batch_for(1, 1))


def test_unknown_reader_flag_in_manifest_table_refused(namespace):
    root = namespace
    set_reader_flag(_latest_manifest(f"{root}/__manifest"), 40)
    with pytest.raises(LanceSqlError) as err:
        PartitionedNamespace.open(root)
    assert "__manifest" in str(err.value)


def test_unknown_reader_flag_is_unsupported_feature_partition_table(namespace):
    root = namespace
    entry = PartitionedNamespace.open(root).tables()[0]
    set_reader_flag(_latest_manifest(entry.uri), 40)
    with pytest.raises(UnsupportedFeatureError):
        PartitionedNamespace.open(root).to_table()


def test_unknown_reader_flag_is_unsupported_feature_manifest_table(namespace):
    root = namespace
    set_reader_flag(_latest_manifest(f"{root}/__manifest"), 40)
    with pytest.raises(UnsupportedFeatureError):
        PartitionedNamespace.open(root)
