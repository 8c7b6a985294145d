"""open_metadata against pylance's own view of the same datasets."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import fsspec
import lance
import numpy as np
import pyarrow as pa
import pytest

from lance_sql.errors import NotFoundError
from lance_sql.format.metadata import (
    FragmentMetadata,
    list_tags,
    list_versions,
    open_metadata,
)
from lance_sql.format.schema import FIELD_ID_KEY


def deleted_offsets_per_pylance(ds: lance.LanceDataset) -> dict[int, np.ndarray]:
    """Deleted offsets derived from the row addresses pylance still returns."""
    addrs = ds.to_table(columns=["a"], with_row_address=True)["_rowaddr"].to_numpy()
    result = {}
    for frag in ds.get_fragments():
        fid = frag.fragment_id
        live = addrs[(addrs >> 32) == fid] & 0xFFFFFFFF
        everything = np.arange(frag.metadata.physical_rows, dtype=np.uint64)
        result[fid] = np.setdiff1d(everything, live).astype(np.uint32)
    return result


def test_every_version_matches_pylance(history_uri: str) -> None:
    versions = [v["version"] for v in lance.dataset(history_uri).versions()]
    assert versions == list(range(1, 8))
    for version in versions:
        ds = lance.dataset(history_uri, version=version)
        md = open_metadata(history_uri, version)
        assert md.version == version
        assert md.count_rows() == ds.count_rows()
        assert [f.id for f in md.fragments] == [f.fragment_id for f in ds.get_fragments()]
        for ours, theirs in zip(md.fragments, ds.get_fragments(), strict=True):
            meta = theirs.metadata
            assert ours.physical_rows == meta.physical_rows
            assert [f.path for f in ours.files] == [f.path for f in meta.files]
            assert [list(f.fields) for f in ours.files] == [f.fields for f in meta.files]
            assert [list(f.column_indices) for f in ours.files] == [
                f.column_indices for f in meta.files
            ]
            assert [f.file_size_bytes for f in ours.files] == [
                f.file_size_bytes for f in meta.files
            ]
            their_deletion = theirs.deletion_file()
            if their_deletion is None:
                assert ours.deletion_file is None
                assert ours.num_deleted_rows == 0
            else:
                assert ours.deletion_file is not None
                assert ours.deletion_file.path == their_deletion
                assert ours.num_deleted_rows == meta.deletion_file.num_deleted_rows
        assert strip_ids(md.schema).equals(ds.schema, check_metadata=True)
        assert md.table_metadata == ds.metadata
        assert md.config == ds.config()


def test_deleted_offsets_match_pylance_row_addresses(history_uri: str) -> None:
    md = open_metadata(history_uri)
    expected = deleted_offsets_per_pylance(lance.dataset(history_uri))
    kinds = set()
    for frag in md.fragments:
        offsets = md.deleted_row_offsets(frag.id)
        assert offsets.dtype == np.uint32
        assert np.all(np.diff(offsets.astype(np.int64)) > 0)  # sorted, no duplicates
        np.testing.assert_array_equal(offsets, expected[frag.id])
        assert offsets.size == frag.num_deleted_rows
        if frag.deletion_file is not None:
            kinds.add(frag.deletion_file.file_type)
    # sparse deletes give Arrow IPC files, the dense one (> 5000 rows) a roaring bitmap
    assert kinds == {"arrow", "bitmap"}
    dense = next(
        f for f in md.fragments if f.deletion_file and f.deletion_file.file_type == "bitmap"
    )
    assert dense.num_deleted_rows > 5000
    assert md.deletion_file_uri(dense.id).endswith(".bin")
    assert Path(md.deletion_file_uri(dense.id)).is_file()


def test_deletion_file_layout_on_disk(history_uri: str) -> None:
    md = open_metadata(history_uri)
    on_disk = {p.name for p in (Path(history_uri) / "_deletions").iterdir()}
    named = {Path(f.deletion_file.path).name for f in md.fragments if f.deletion_file}
    assert named <= on_disk
    for frag in md.fragments:
        d = frag.deletion_file
        if d is not None:
            ext = "arrow" if d.file_type == "arrow" else "bin"
            assert d.path == f"_deletions/{frag.id}-{d.read_version}-{d.id}.{ext}"


def test_count_rows_does_not_read_deletion_files(history_uri: str, copy_dataset) -> None:
    uri = copy_dataset(history_uri)
    shutil.rmtree(Path(uri) / "_deletions")
    md = open_metadata(uri)
    assert md.count_rows() == lance.dataset(history_uri).count_rows()
    frag = next(f for f in md.fragments if f.deletion_file)
    with pytest.raises(NotFoundError, match=r"_deletions/"):
        md.deleted_row_offsets(frag.id)


def test_added_columns_give_several_data_files(history_uri: str) -> None:
    md = open_metadata(history_uri)
    b_id = next(f.id for f in md.lance_fields if f.name == "b")
    for frag in md.fragments:
        assert len(frag.files) == 2
        assert frag.files[1].fields == (b_id,)
        assert Path(md.data_file_uri(frag.files[1])).is_file()


def test_schema_carries_field_ids_everywhere(all_types_uri: str) -> None:
    md = open_metadata(all_types_uri)
    seen = [
        int(meta[FIELD_ID_KEY]) for _, _, _, meta in fields_deep(md.schema) if FIELD_ID_KEY in meta
    ]
    by_id = {f.id: f for f in md.lance_fields}
    # pyarrow builds a map's "entries" struct itself, so that one field has no id on
    # the Arrow side (documented in docs/format.md); every other Lance field has one.
    entries = {
        f.id
        for f in md.lance_fields
        if f.parent_id in by_id and by_id[f.parent_id].logical_type == "map"
    }
    assert len(entries) == 1
    assert sorted(seen) == sorted(set(md.field_ids()) - entries)
    assert len(seen) == len(set(seen))


def test_map_children_keep_their_ids(all_types_uri: str) -> None:
    md = open_metadata(all_types_uri)
    t = md.schema.field("map").type
    ids = {f.name: f.id for f in md.lance_fields}
    assert t.key_field.metadata[FIELD_ID_KEY] == str(ids["key"]).encode()
    assert t.item_field.metadata[FIELD_ID_KEY] == str(ids["value"]).encode()


def strip_ids(schema: pa.Schema) -> pa.Schema:
    """The schema without lance:field_id keys, nested fields included."""

    def strip_field(field: pa.Field) -> pa.Field:
        meta = {k: v for k, v in (field.metadata or {}).items() if k != FIELD_ID_KEY}
        return pa.field(field.name, strip_type(field.type), field.nullable, metadata=meta or None)

    def strip_type(t: pa.DataType) -> pa.DataType:
        if pa.types.is_struct(t):
            return pa.struct([strip_field(t.field(i)) for i in range(t.num_fields)])
        if pa.types.is_map(t):
            return pa.map_(strip_field(t.key_field), strip_field(t.item_field), t.keys_sorted)
        if isinstance(t, pa.FixedSizeListType):
            return pa.list_(strip_field(t.value_field), t.list_size)
        if isinstance(t, pa.LargeListType):
            return pa.large_list(strip_field(t.value_field))
        if isinstance(t, pa.ListType):
            return pa.list_(strip_field(t.value_field))
        return t

    return pa.schema([strip_field(f) for f in schema], metadata=schema.metadata)


def fields_deep(schema: pa.Schema) -> list[tuple[str, pa.DataType, bool, dict]]:
    """Every field, nested included, as (path, type, nullable, metadata)."""
    out = []

    def walk(prefix: str, field: pa.Field) -> None:
        path = f"{prefix}{field.name}"
        out.append((path, field.type, field.nullable, dict(field.metadata or {})))
        t = field.type
        if isinstance(t, pa.BaseExtensionType):
            t = t.storage_type
        if pa.types.is_struct(t):
            children = [t.field(i) for i in range(t.num_fields)]
        elif pa.types.is_map(t):
            children = [t.key_field, t.item_field]
        elif isinstance(t, (pa.ListType, pa.LargeListType, pa.FixedSizeListType)):
            children = [t.value_field]
        else:
            children = []
        for child in children:
            walk(path + ".", child)

    for field in schema:
        walk("", field)
    return out


def test_all_types_schema_equals_pylance(all_types_uri: str) -> None:
    md = open_metadata(all_types_uri)
    theirs = lance.dataset(all_types_uri).schema
    ours = strip_ids(md.schema)
    assert ours.equals(theirs, check_metadata=True)
    # Schema.equals ignores nested metadata: compare every nested field explicitly.
    without_ids = [
        (path, t, nullable, {k: v for k, v in meta.items() if k != FIELD_ID_KEY})
        for path, t, nullable, meta in fields_deep(md.schema)
    ]
    assert without_ids == fields_deep(theirs)
    assert md.schema.metadata == theirs.metadata
    assert md.schema_metadata == {"owner": b"tests", "k": b"v"}
    # the logical types pylance wrote cover the whole list of the spec
    logical = {f.logical_type.split(":")[0] for f in md.lance_fields}
    assert {
        "null", "bool", "halffloat", "decimal", "date32", "date64", "time32", "time64",
        "timestamp", "duration", "fixed_size_binary", "fixed_size_list", "struct", "list",
        "large_list", "list.struct", "large_list.struct", "map", "dict", "large_string",
        "large_binary", "json",
    } <= logical  # fmt: skip


def test_bfloat16_is_lance_extension_type(all_types_uri: str) -> None:
    from lance.arrow import BFloat16Type

    t = open_metadata(all_types_uri).schema.field("fsl_bf16").type
    assert isinstance(t.value_type, BFloat16Type)
    assert t.list_size == 4


def test_extension_types_match_pylance(all_types_uri: str) -> None:
    schema = open_metadata(all_types_uri).schema
    theirs = lance.dataset(all_types_uri).schema
    for name in ("json", "uuid", "blob"):
        assert isinstance(schema.field(name).type, pa.BaseExtensionType), name
        assert schema.field(name).type == theirs.field(name).type, name
    assert schema.field("json").type == pa.json_(pa.string())
    assert schema.field("fsl_struct").type.value_type == pa.struct([("x", pa.int64())])


def test_versions_and_timestamps_match_pylance(history_uri: str) -> None:
    ours = list_versions(history_uri)
    theirs = lance.dataset(history_uri).versions()
    assert [v.version for v in ours] == [v["version"] for v in theirs]
    for o, t in zip(ours, theirs, strict=True):
        ts = t["timestamp"]
        their_utc = ts.astimezone() if ts.tzinfo is None else ts
        assert abs(o.timestamp.timestamp() - their_utc.timestamp()) < 0.001
    assert [v.tag for v in ours][:2] == [None, "before_deletes"]
    assert open_metadata(history_uri).timestamp == ours[-1].timestamp


def test_tags(history_uri: str) -> None:
    tags = list_tags(history_uri)
    assert set(tags) == set(lance.dataset(history_uri).tags.list())
    assert tags["before_deletes"].version == 2
    assert tags["before_deletes"].branch is None
    md = open_metadata(history_uri, tag="before_deletes")
    assert md.version == 2 and md.tag == "before_deletes"
    assert md.count_rows() == lance.dataset(history_uri, version="before_deletes").count_rows()
    assert open_metadata(history_uri, "before_deletes").version == 2  # pylance-style
    raw = json.loads((Path(history_uri) / "_refs/tags/before_deletes.json").read_text())
    assert raw["version"] == 2


def test_tag_on_branch(tmp_path: Path) -> None:
    uri = str(tmp_path / "ds")
    lance.write_dataset(pa.table({"a": [1, 2, 3]}), uri)
    ds = lance.write_dataset(pa.table({"a": [4]}), uri, mode="append")
    branch = ds.create_branch("dev", 1)
    lance.write_dataset(pa.table({"a": [5, 6]}), branch.uri, mode="append")
    branch = lance.dataset(uri + "/tree/dev")
    branch.tags.create("dev_tip", branch.version)
    md = open_metadata(uri, tag="dev_tip")
    assert md.branch == "dev"
    assert md.count_rows() == 5
    assert open_metadata(uri, branch="dev").count_rows() == 5
    # the branch reuses the main dataset's files through a base path
    assert md.base_paths and md.reader_feature_flags & 16
    uris = [md.data_file_uri(f) for frag in md.fragments for f in frag.files]
    assert any(f.base_id is not None for frag in md.fragments for f in frag.files)
    assert all(Path(u).is_file() for u in uris), uris
    assert open_metadata(uri).count_rows() == 4
    with pytest.raises(NotFoundError, match="nope"):
        open_metadata(uri, branch="nope")


def test_table_metadata_config_and_flags(history_uri: str) -> None:
    md = open_metadata(history_uri)
    assert md.table_metadata == {"description": "history", "team": "format"}
    assert md.config == {"custom.setting": "on"}
    assert md.reader_feature_flags & 1  # deletion files
    assert md.writer_feature_flags & 8  # config present
    assert md.writer_version.library == "lance"
    assert md.writer_version.version == lance.__version__.split("+")[0] or md.writer_version.version
    assert md.data_storage_format.file_format == "lance"
    assert md.max_fragment_id == max(f.id for f in md.fragments)
    assert md.base_paths == ()


def test_primary_key(tmp_path: Path) -> None:
    def pk(position: int) -> dict[str, str]:
        return {
            "lance-schema:unenforced-primary-key": "true",
            "lance-schema:unenforced-primary-key:position": str(position),
        }

    schema = pa.schema(
        [
            pa.field("a", pa.int64(), False, metadata=pk(2)),
            pa.field("b", pa.int32(), False, metadata=pk(1)),
            pa.field("c", pa.int32()),
        ]
    )
    uri = str(tmp_path / "pk")
    lance.write_dataset(pa.table({"a": [1], "b": [2], "c": [3]}, schema=schema), uri)
    keys = open_metadata(uri).primary_key
    assert [(k.path, k.position) for k in keys] == [(("b",), 1), (("a",), 2)]
    uri2 = str(tmp_path / "nopk")
    lance.write_dataset(pa.table({"c": [3]}), uri2)
    assert open_metadata(uri2).primary_key == ()


def test_fragment_lookup(history_uri: str) -> None:
    md = open_metadata(history_uri)
    frag = md.fragment(md.fragments[0].id)
    assert isinstance(frag, FragmentMetadata)
    assert frag.num_rows == frag.physical_rows - frag.num_deleted_rows
    with pytest.raises(NotFoundError, match="fragment 999"):
        md.deleted_row_offsets(999)


def test_dataset_in_fsspec_memory(history_uri: str) -> None:
    fs = fsspec.filesystem("memory")
    target = "/lance_sql_format_test/ds"
    if fs.exists(target):
        fs.rm(target, recursive=True)
    local = fsspec.filesystem("file")
    for path in local.find(history_uri):
        rel = Path(path).relative_to(history_uri).as_posix()
        fs.pipe(f"{target}/{rel}", local.cat_file(path))
    try:
        md = open_metadata("memory://lance_sql_format_test/ds")
        local_md = open_metadata(history_uri)
        assert md.count_rows() == local_md.count_rows()
        assert md.schema.equals(local_md.schema, check_metadata=True)
        for frag in md.fragments:
            np.testing.assert_array_equal(
                md.deleted_row_offsets(frag.id), local_md.deleted_row_offsets(frag.id)
            )
        assert [v.version for v in list_versions("memory://lance_sql_format_test/ds")] == list(
            range(1, 8)
        )
        assert md.deletion_file_uri(md.fragments[0].id).startswith("memory://")
    finally:
        fs.rm(target, recursive=True)


def test_file_url_and_path_like(history_uri: str) -> None:
    a = open_metadata(Path(history_uri))
    b = open_metadata("file://" + history_uri)
    assert a.count_rows() == b.count_rows()
    assert a.version == b.version


def test_v1_naming_scheme_and_untrusted_hint(history_uri: str, copy_dataset) -> None:
    uri = copy_dataset(history_uri)
    versions_dir = Path(uri) / "_versions"
    for path in versions_dir.glob("*.manifest"):
        version = (1 << 64) - 1 - int(path.stem)
        path.rename(versions_dir / f"{version}.manifest")
    (versions_dir / "latest_version_hint.json").write_text('{"version": 2}')
    md = open_metadata(uri)
    assert md.version == 7
    assert md.count_rows() == lance.dataset(history_uri).count_rows()
    assert open_metadata(uri, 3).version == 3
    assert [v.version for v in list_versions(uri)] == list(range(1, 8))
    # 10.manifest must sort after 9.manifest numerically, not lexically
    (versions_dir / "7.manifest").rename(versions_dir / "x7.manifest.tmp")
    assert open_metadata(uri).version == 6


def test_v2_names_ignore_detached_and_stray_files(history_uri: str, copy_dataset) -> None:
    uri = copy_dataset(history_uri)
    versions_dir = Path(uri) / "_versions"
    latest = sorted(versions_dir.glob("*.manifest"))[0]
    # a detached version (top bit set) has a 19-digit V2 name: not part of the history
    detached = (1 << 63) | 100
    shutil.copy(latest, versions_dir / f"{(1 << 64) - 1 - detached}.manifest")
    (versions_dir / "garbage.manifest").write_bytes(b"junk")
    (versions_dir / "latest_version_hint.json").write_text('{"version": 1}')
    assert open_metadata(uri).version == 7
    assert len(list_versions(uri)) == 7


def test_large_manifest_read_in_two_ranges(history_uri: str, monkeypatch) -> None:
    """A manifest longer than the tail read is completed with a second range read."""
    from lance_sql.format import manifest

    expected = open_metadata(history_uri)
    monkeypatch.setattr(manifest, "TAIL_READ", 64)
    md = open_metadata(history_uri)
    assert md.count_rows() == expected.count_rows()
    assert md.schema.equals(expected.schema, check_metadata=True)
