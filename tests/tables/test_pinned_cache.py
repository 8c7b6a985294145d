"""Cached opens at a pinned version are checked against the version's manifest file."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import lance
import pyarrow as pa

from lance_sql.tables import dataset_cache
from lance_sql.tables.fragments_unit import split_fragments


def _unit_rows(uri: str, version: int) -> list[int]:
    ds = lance.dataset(uri, version=version)
    (unit,) = split_fragments(ds, 1)
    shipped = pickle.loads(pickle.dumps(unit))  # as a Spark task receives it
    return sorted(x for b in shipped.to_batches(["x"]) for x in b.column(0).to_pylist())


def test_restored_root_is_not_served_from_the_cache(tmp_path: Path) -> None:
    uri, backup = str(tmp_path / "t.lance"), str(tmp_path / "backup")
    lance.write_dataset(pa.table({"x": [1, 2]}), uri)
    shutil.copytree(uri, backup)
    lance.write_dataset(pa.table({"x": [100]}), uri, mode="append")
    assert _unit_rows(uri, 2) == [1, 2, 100]
    shutil.rmtree(uri)
    shutil.copytree(backup, uri)
    lance.write_dataset(pa.table({"x": [200]}), uri, mode="append")  # version 2 again
    assert _unit_rows(uri, 2) == [1, 2, 200]


def test_token_names_the_manifest_and_hits_are_reused(tmp_path: Path) -> None:
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(pa.table({"x": [1]}), uri)
    token = dataset_cache.version_token(uri, 1, None, None)
    assert token is not None and token[0].endswith(".manifest")
    assert dataset_cache.version_token(uri, 7, None, None) is None
    a = dataset_cache.open_pinned(uri, 1, None)
    assert dataset_cache.open_pinned(uri, 1, None) is a
