"""Every refusal of the format layer: type of error, and the object it names."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from lance_sql.errors import FormatError, NotFoundError, UnsupportedFeatureError
from lance_sql.format.feature_flags import KNOWN_READER_FLAGS, unknown_bits
from lance_sql.format.manifest import parse_manifest_bytes
from lance_sql.format.metadata import list_tags, list_versions, open_metadata


def newest(uri: str) -> Path:
    return sorted((Path(uri) / "_versions").glob("*.manifest"))[0]


def test_missing_dataset(tmp_path: Path) -> None:
    missing = tmp_path / "nothing_here"
    for call in (open_metadata, list_versions, list_tags):
        with pytest.raises(NotFoundError, match="no Lance dataset") as info:
            call(missing)
        assert str(missing) in str(info.value)


def test_empty_versions_dir(tmp_path: Path) -> None:
    (tmp_path / "ds" / "_versions").mkdir(parents=True)
    (tmp_path / "ds" / "_versions" / "latest_version_hint.json").write_text('{"version":1}')
    with pytest.raises(NotFoundError, match="no manifests") as info:
        open_metadata(tmp_path / "ds")
    assert str(tmp_path / "ds") in str(info.value)


def test_missing_version_tag_branch(history_uri: str) -> None:
    with pytest.raises(NotFoundError, match=r"version 99 does not exist \(versions 1..7\)") as info:
        open_metadata(history_uri, 99)
    assert history_uri in str(info.value)
    with pytest.raises(NotFoundError, match="tag 'nope' does not exist"):
        open_metadata(history_uri, tag="nope")
    with pytest.raises(NotFoundError, match="tag 'nope'"):
        open_metadata(history_uri, "nope")
    with pytest.raises(NotFoundError, match="invalid tag name"):
        open_metadata(history_uri, tag="../../etc/passwd")
    with pytest.raises(NotFoundError, match="branch 'nope'"):
        open_metadata(history_uri, branch="nope")
    for bad in ("../x", "a/../../b", "a\\b"):
        with pytest.raises(NotFoundError, match="invalid branch name"):
            open_metadata(history_uri, branch=bad)
    for bad in ("", "a/..", "x\x00"):
        with pytest.raises(NotFoundError, match="invalid tag name"):
            open_metadata(history_uri, tag=bad)


def test_version_and_tag_together_is_a_usage_error(history_uri: str) -> None:
    with pytest.raises(ValueError, match="either a tag or a version"):
        open_metadata(history_uri, 2, tag="before_deletes")
    with pytest.raises(ValueError, match="invalid version"):
        open_metadata(history_uri, -1)


def test_truncated_manifest(history_uri: str, copy_dataset) -> None:
    uri = copy_dataset(history_uri)
    path = newest(uri)
    data = path.read_bytes()
    for cut in (len(data) - 1, len(data) - 16, 30, 10, 0):
        path.write_bytes(data[:cut])
        with pytest.raises(FormatError) as info:
            open_metadata(uri)
        assert str(path) in str(info.value)
        assert info.value.path == str(path)


def test_not_a_lance_file(history_uri: str, copy_dataset) -> None:
    uri = copy_dataset(history_uri)
    path = newest(uri)
    path.write_bytes(b"PAR1" + b"\0" * 100 + b"PAR1")
    with pytest.raises(FormatError, match="not a Lance manifest: footer magic") as info:
        open_metadata(uri)
    assert str(path) in str(info.value)


def test_bogus_position_and_length(history_uri: str, copy_dataset) -> None:
    uri = copy_dataset(history_uri)
    path = newest(uri)
    data = path.read_bytes()
    (pos,) = struct.unpack_from("<Q", data, len(data) - 16)
    for bogus in (len(data), 1 << 63, (1 << 64) - 1):
        path.write_bytes(data[:-16] + struct.pack("<Q", bogus) + data[-8:])
        with pytest.raises(FormatError, match="outside the file") as info:
            open_metadata(uri)
        assert str(path) in str(info.value)
    huge_length = data[:pos] + struct.pack("<I", 0xFFFFFFF0) + data[pos + 4 :]
    path.write_bytes(huge_length)
    with pytest.raises(FormatError, match="runs past the footer"):
        open_metadata(uri)


def test_corrupted_message(history_uri: str, copy_dataset) -> None:
    uri = copy_dataset(history_uri)
    path = newest(uri)
    data = bytearray(path.read_bytes())
    (pos,) = struct.unpack_from("<Q", data, len(data) - 16)
    data[pos + 4 : pos + 12] = b"\xff" * 8  # an invalid tag / varint
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="corrupted manifest message") as info:
        open_metadata(uri)
    assert str(path) in str(info.value)


def test_parse_manifest_bytes_names_the_given_path() -> None:
    with pytest.raises(FormatError, match=r"^somewhere/x\.manifest: "):
        parse_manifest_bytes(b"abc", path="somewhere/x.manifest")


def test_unknown_reader_flags_are_refused(history_uri: str, copy_dataset, edit_manifest) -> None:
    uri = copy_dataset(history_uri)
    path = newest(uri)

    def set_flags(m) -> None:
        m.reader_feature_flags |= 64 | 4096

    edit_manifest(path, set_flags)
    with pytest.raises(UnsupportedFeatureError) as info:
        open_metadata(uri)
    message = str(info.value)
    assert "64, 4096" in message and str(path) in message
    assert open_metadata(uri, 6).version == 6  # older versions stay readable


def test_known_flags() -> None:
    assert unknown_bits(KNOWN_READER_FLAGS) == []
    assert unknown_bits(1 | 2 | 8 | 2048 | (1 << 63)) == [2048, 1 << 63]


def test_version_mismatch_between_name_and_message(history_uri, copy_dataset, edit_manifest):
    uri = copy_dataset(history_uri)
    path = newest(uri)
    edit_manifest(path, lambda m: setattr(m, "version", 42))
    with pytest.raises(FormatError, match="says version 42 but its file name says 7"):
        open_metadata(uri)


def test_unknown_logical_type_names_field_and_file(history_uri, copy_dataset, edit_manifest):
    uri = copy_dataset(history_uri)
    path = newest(uri)

    def damage(m) -> None:
        m.fields[0].logical_type = "int999"

    edit_manifest(path, damage)
    md = open_metadata(uri)  # the schema is converted on first use
    assert md.count_rows() > 0
    with pytest.raises(FormatError, match=r"field 'a'.*int999") as info:
        _ = md.schema
    assert str(path) in str(info.value)


def test_more_deleted_than_physical_rows(history_uri, copy_dataset, edit_manifest):
    uri = copy_dataset(history_uri)
    path = newest(uri)

    def damage(m) -> None:
        frag = next(f for f in m.fragments if f.HasField("deletion_file"))
        frag.deletion_file.num_deleted_rows = frag.physical_rows + 1

    edit_manifest(path, damage)
    md = open_metadata(uri)
    with pytest.raises(FormatError, match="deleted rows but only") as info:
        md.count_rows()
    assert str(path) in str(info.value)


def test_unknown_base_path_id(history_uri, copy_dataset, edit_manifest):
    uri = copy_dataset(history_uri)
    edit_manifest(newest(uri), lambda m: m.fragments[0].files[0].__setattr__("base_id", 5))
    md = open_metadata(uri)
    with pytest.raises(FormatError, match="unknown base path id 5"):
        md.data_file_uri(md.fragments[0].files[0])


def test_corrupted_deletion_files(history_uri: str, copy_dataset) -> None:
    uri = copy_dataset(history_uri)
    md = open_metadata(uri)
    for kind in ("arrow", "bitmap"):
        frag = next(
            f for f in md.fragments if f.deletion_file and f.deletion_file.file_type == kind
        )
        path = Path(md.deletion_file_uri(frag.id))
        good = path.read_bytes()
        for bad in (b"", b"garbage" * 10, good[: len(good) // 2]):
            path.write_bytes(bad)
            with pytest.raises(FormatError) as info:
                md.deleted_row_offsets(frag.id)
            assert str(path) in str(info.value)
        path.write_bytes(good)
        path.unlink()
        with pytest.raises(NotFoundError) as info:
            md.deleted_row_offsets(frag.id)
        assert str(path) in str(info.value)


def test_deletion_count_mismatch(history_uri, copy_dataset, edit_manifest):
    uri = copy_dataset(history_uri)

    def damage(m) -> None:
        frag = next(f for f in m.fragments if f.HasField("deletion_file"))
        frag.deletion_file.num_deleted_rows += 1

    edit_manifest(newest(uri), damage)
    md = open_metadata(uri)
    frag = next(f for f in md.fragments if f.deletion_file)
    with pytest.raises(FormatError, match="the manifest says"):
        md.deleted_row_offsets(frag.id)


def test_missing_deletion_count_is_read_from_the_file(history_uri, copy_dataset, edit_manifest):
    uri = copy_dataset(history_uri)
    expected = open_metadata(uri).count_rows()

    def drop_counts(m) -> None:
        for f in m.fragments:
            if f.HasField("deletion_file"):
                f.deletion_file.num_deleted_rows = 0

    edit_manifest(newest(uri), drop_counts)
    assert open_metadata(uri).count_rows() == expected


def test_bad_tag_files(history_uri: str, copy_dataset) -> None:
    uri = copy_dataset(history_uri)
    tag = Path(uri) / "_refs" / "tags" / "before_deletes.json"
    for bad in (b"{not json", b"[1, 2]", b'{"version": "two"}', b'{"version": 2, "branch": 3}'):
        tag.write_bytes(bad)
        with pytest.raises(FormatError, match="tag 'before_deletes'") as info:
            open_metadata(uri, tag="before_deletes")
        assert str(tag) in str(info.value)
        with pytest.raises(FormatError):
            list_tags(uri)
