"""URI resolution and byte reads through fsspec."""

from __future__ import annotations

from pathlib import Path

import fsspec
import pytest

from lance_sql.errors import NotFoundError
from lance_sql.format.storage import exists, file_size, list_dir, read_file, read_range, resolve


def test_local_path_and_file_url_resolve_alike(tmp_path: Path) -> None:
    (tmp_path / "f.bin").write_bytes(b"0123456789")
    a = resolve(tmp_path)
    b = resolve(f"file://{tmp_path}")
    assert a.path == b.path
    f = a.join("f.bin")
    assert file_size(f) == 10
    assert read_file(f) == b"0123456789"
    assert read_range(f, 2, 5) == b"234"
    assert read_range(f, 5, 5) == b""
    assert read_range(f, 8, 100) == b"89"
    assert exists(f) and not exists(a.join("nope"))


def test_relative_path_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    loc = resolve("sub/dir")
    assert loc.url == str(tmp_path / "sub" / "dir")


def test_memory_filesystem() -> None:
    fs = fsspec.filesystem("memory")
    fs.pipe("/lance_sql_storage_test/a/x.txt", b"xyz")
    fs.pipe("/lance_sql_storage_test/a/y.txt", b"y")
    fs.mkdir("/lance_sql_storage_test/a/sub")
    try:
        loc = resolve("memory://lance_sql_storage_test/a")
        entries = list_dir(loc)
        names = [e.name for e in entries if not e.is_dir]
        assert names == ["x.txt", "y.txt"]
        assert entries[0].location.url == "memory://lance_sql_storage_test/a/sub" or any(
            e.is_dir and e.name == "sub" for e in entries
        )
        x = next(e for e in entries if e.name == "x.txt")
        assert x.size == 3
        assert read_file(x.location) == b"xyz"
    finally:
        fs.rm("/lance_sql_storage_test", recursive=True)


def test_missing_file_and_dir_raise_not_found_naming_the_url(tmp_path: Path) -> None:
    loc = resolve(tmp_path).join("missing.bin")
    for call in (read_file, file_size, list_dir, lambda loc: read_range(loc, 0, 4)):
        with pytest.raises(NotFoundError) as info:
            call(loc)
        assert str(tmp_path / "missing.bin") in str(info.value)
        assert info.value.path == loc.url
    mem = resolve("memory://lance_sql_storage_test_missing/x")
    with pytest.raises(NotFoundError, match="memory://lance_sql_storage_test_missing/x"):
        read_file(mem)


def test_not_found_error_is_a_file_not_found_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_file(resolve(tmp_path).join("x"))


def test_invalid_range(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"abc")
    with pytest.raises(ValueError, match="invalid byte range"):
        read_range(resolve(tmp_path).join("f"), 3, 1)


def test_storage_options_reach_the_filesystem(tmp_path: Path) -> None:
    loc = resolve(tmp_path, {"auto_mkdir": True})
    assert loc.fs.auto_mkdir is True
    assert resolve(tmp_path, {"auto_mkdir": False}).fs.auto_mkdir is False
