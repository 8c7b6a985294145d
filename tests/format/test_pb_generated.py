"""The committed protobuf modules are exactly what protos/generate.py produces."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from google.protobuf.unknown_fields import UnknownFieldSet

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "lance_sql" / "format" / "_pb"


def load_generator():
    spec = importlib.util.spec_from_file_location(
        "lance_sql_protos_generate", ROOT / "protos" / "generate.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_modules_are_up_to_date(tmp_path: Path) -> None:
    written = load_generator().generate(tmp_path)
    stamp = "# Protobuf Python Version: "
    ours = next(ln for ln in (tmp_path / "table_pb2.py").read_text().splitlines() if stamp in ln)
    committed = next(
        ln for ln in (COMMITTED / "table_pb2.py").read_text().splitlines() if stamp in ln
    )
    assert ours == committed, (
        f"installed grpcio-tools emits {ours!r}, the committed modules have {committed!r}: "
        "install the grpcio-tools version pinned in pyproject's dev extra"
    )
    names = sorted(p.name for p in written)
    assert names == sorted(p.name for p in COMMITTED.glob("*.py"))
    for name in names:
        assert (tmp_path / name).read_text() == (COMMITTED / name).read_text(), (
            f"lance_sql/format/_pb/{name} is stale: run python protos/generate.py"
        )


def test_generated_modules_import_as_package_modules() -> None:
    from lance_sql.format._pb import file_pb2, table_pb2

    assert table_pb2.Manifest.DESCRIPTOR.full_name == "lance.table.Manifest"
    assert file_pb2.Field.DESCRIPTOR.full_name == "lance.file.Field"
    text = (COMMITTED / "table_pb2.py").read_text()
    assert "\nimport file_pb2" not in text
    assert "from lance_sql.format._pb import file_pb2" in text


def test_unknown_manifest_fields_parse_and_are_kept_aside() -> None:
    from lance_sql.format._pb import table_pb2

    m = table_pb2.Manifest(version=5)
    # field 23 (varint) and field 99 (length-delimited), as newer writers may add
    data = m.SerializeToString() + bytes([0xB8, 0x01, 0x07]) + bytes([0x9A, 0x06, 0x02]) + b"hi"
    parsed = table_pb2.Manifest.FromString(data)
    assert parsed.version == 5
    assert sorted(f.field_number for f in UnknownFieldSet(parsed)) == [23, 99]


def test_pylance_manifests_carry_field_23_and_parse(history_uri: str) -> None:
    import struct

    from lance_sql.format._pb import table_pb2

    path = sorted((Path(history_uri) / "_versions").glob("*.manifest"))[0]
    data = path.read_bytes()
    (pos,) = struct.unpack_from("<Q", data, len(data) - 16)
    (length,) = struct.unpack_from("<I", data, pos)
    manifest = table_pb2.Manifest.FromString(data[pos + 4 : pos + 4 + length])
    assert manifest.version == 7
    assert 23 in {f.field_number for f in UnknownFieldSet(manifest)}
    # every field pylance 14 writes in Field / DataFragment / DataFile is declared
    for fragment in manifest.fragments:
        assert not list(UnknownFieldSet(fragment))
        for data_file in fragment.files:
            assert not list(UnknownFieldSet(data_file))
    for field in manifest.fields:
        assert not list(UnknownFieldSet(field))
