"""Adversarial review (session 7, second pass): key filters never hide a row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import lance_sql
from lance_sql.tables.namespace import key_filters as kf

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("region", pa.string())])
SPEC = [{"field_id": "region", "source": "region", "transform": {"type": "identity"}}]


def _ids(root: Path, where: str) -> list[int]:
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", str(root))
    return sorted(ctx.sql(f"SELECT id FROM t WHERE {where}").to_arrow_table().column(0).to_pylist())


def test_another_tables_filter_file_of_the_same_size_never_skips(tmp_path: Path) -> None:
    """Fixed in tables/namespace/key_filters.py (the pointer holds the CRC-32 of the
    bits): two partitions with as many keys get filter files of the same size; a
    file copied over the other's (a table directory restored from elsewhere, a
    hand repair) passed every check (magic, size, its own checksum, bits/k/keys)
    and ``id = 2`` skipped the table holding 2: SELECT returned no row."""
    root = tmp_path / "ns"
    ns = lance_sql.PartitionedNamespace.create(root, SCHEMA, SPEC)
    ids = list(range(400))
    ns.append(pa.table({"id": ids, "region": [f"r{i % 8}" for i in ids]}, schema=SCHEMA))
    ns.create_scalar_index("id", "BTREE")
    location = {e.values["region"]: e.location for e in ns.tables()}
    files = sorted(root.rglob("*.bloom"))
    r1 = next(f for f in files if location["r1"] in str(f))
    r2 = next(f for f in files if location["r2"] in str(f))
    assert r1.stat().st_size == r2.stat().st_size
    r2.write_bytes(r1.read_bytes())
    assert _ids(root, "id = 2") == [2]
    assert _ids(root, "id IN (1, 10, 17)") == [1, 10, 17]


def test_pointer_checksum_round_trips_and_older_pointers_still_read() -> None:
    h = kf.hash_values(pa.array([1, 2, 3], pa.int64()))
    blob = kf.encode(kf.build(h, 1024), 1024, kf.K, 3)
    crc = kf._HEADER.unpack_from(blob)[6]
    ref = kf.KeyFilterRef("v1-f0-a.bloom", "int64", 1024, kf.K, 3, crc)
    assert kf.KeyFilterRef.from_json(ref.to_json()) == ref
    kf.decode(blob, ref)
    old = {k: v for k, v in ref.to_json().items() if k != "crc"}  # written before the CRC
    kf.decode(blob, kf.KeyFilterRef.from_json(old))
    for bad in (-1, 1 << 32, "1", True):
        assert kf.KeyFilterRef.from_json({**ref.to_json(), "crc": bad}) is None


def test_a_bank_of_filters_is_not_tied_to_the_row_positions_of_another_query(
    tmp_path: Path,
) -> None:
    """Fixed in planning/key_filter_skipping.py (banks are cached by filter files only; row
    positions come from each selection): the concatenated filters of a column
    were cached by their files *with the positions of the selection that built
    them*. Two queries selecting the same filtered tables at other positions
    (here ``c, a, b`` and ``c, b, e``, where ``a`` and ``e`` have no usable
    filter after a pylance-direct commit) shared the bank, and the second query
    tested ``e`` against ``b``'s filter: ``id = 4`` (in ``e``) returned nothing."""
    import lance

    from lance_sql.tables.namespace.layout import manifest_uri

    root = tmp_path / "ns"
    ns = lance_sql.PartitionedNamespace.create(root, SCHEMA, SPEC)
    ids = list(range(50))
    ns.append(pa.table({"id": ids, "region": ["abcde"[i % 5] for i in ids]}, schema=SCHEMA))
    ns.create_scalar_index("id", "BTREE")
    manifest = lance.dataset(manifest_uri(str(root)))
    tables = {e.values["region"]: e for e in ns.tables()}

    def pin(region: str, version: int) -> None:  # Lance's update moves the row to the end
        oid = tables[region].object_id
        manifest.update({"read_version": str(version)}, where=f"object_id = '{oid}'")

    def direct(region: str) -> None:  # a pylance-direct commit: no usable key filter
        row = pa.table({"id": [1000 + ord(region)], "region": [region]}, schema=SCHEMA)
        pin(region, lance.write_dataset(row, tables[region].uri, mode="append").version)

    direct("a")
    for region in "bc":
        pin(region, tables[region].read_version)
    direct("e")
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", str(root))

    def ids_where(where: str) -> list[int]:
        table = ctx.sql(f"SELECT id FROM t WHERE {where}").to_arrow_table()
        return sorted(table.column(0).to_pylist())

    assert ids_where("region IN ('a', 'b', 'c') AND id = 1") == [1]
    assert ids_where("region IN ('b', 'c', 'e') AND id = 4") == [4]
    assert ids_where("region IN ('b', 'c', 'e') AND id = 1101") == [1101]


def test_tables_without_the_indexed_column_between_filtered_ones(tmp_path: Path) -> None:
    """The same bank bug without any pylance-direct commit: tables written before
    the indexed column was added have no key filter, so selections of the same
    filtered tables differ in positions; depending on ``__manifest``'s row order
    the second query raised a raw IndexError from numpy or skipped the wrong
    table."""
    from itertools import combinations

    root = tmp_path / "ns"
    ns = lance_sql.PartitionedNamespace.create(root, SCHEMA, SPEC)
    ns.append(pa.table({"id": [1, 2], "region": ["x", "y"]}, schema=SCHEMA))
    ns.add_columns([pa.field("k", pa.int64())])
    ns.create_scalar_index("k", "BTREE")
    wide = pa.schema([*SCHEMA, pa.field("k", pa.int64())])
    ns.append(pa.table({"id": [3, 4, 5], "region": ["b", "c", "y"], "k": [30, 40, 50]}, wide))
    where = {"b": 30, "c": 40, "y": 50}
    for n in (2, 3):
        for regions in combinations("bcxy", n):
            listed = ", ".join(f"'{r}'" for r in regions)
            for region, k in where.items():
                want = [{"b": 3, "c": 4, "y": 5}[region]] if region in regions else []
                assert _ids(root, f"region IN ({listed}) AND k = {k}") == want


# ------------------------------------------------- random namespaces vs DataFusion


def _random_namespace(root: Path, rng: Any) -> Any:
    """Tables before and after the indexed columns existed, dynamic overwrites, a second
    spec version, pylance-direct commits pinned by hand, deletes."""
    import lance

    from lance_sql.tables.namespace.layout import manifest_uri

    ns = lance_sql.PartitionedNamespace.create(root, SCHEMA, SPEC)
    counter = [0]

    def rows(n: int, schema: pa.Schema) -> pa.Table:
        ids = list(range(counter[0], counter[0] + n))
        counter[0] += n
        data: dict[str, Any] = {"id": ids, "region": [rng.choice(REGIONS) for _ in ids]}
        if "k" in schema.names:
            data["k"] = [rng.choice(KEYS) for _ in ids]
            data["s"] = [rng.choice([None, "x", "y", "é", ""]) for _ in ids]
        return pa.table(data, schema=schema)

    ns.append(rows(20, SCHEMA))
    ns.add_columns([pa.field("k", pa.int64()), pa.field("s", pa.string())])
    ns.create_scalar_index("k", "BTREE")
    ns.create_scalar_index("s", "BITMAP")
    wide = ns.schema
    for _ in range(6):
        op = rng.choice(["append", "append", "dynamic", "spec", "direct", "delete"])
        if op == "append":
            ns.append(rows(rng.randint(1, 15), wide))
        elif op == "dynamic":
            ns.overwrite(rows(rng.randint(1, 6), wide), partitions="dynamic")
        elif op == "spec" and len(ns.specs) < 2:
            bucket = {"source": "id", "transform": {"type": "bucket", "num_buckets": 3}}
            ns.add_spec([{"source": "region", "transform": {"type": "identity"}}, bucket])
        elif op == "direct":
            entry = rng.choice(ns.tables())
            ds = lance.dataset(entry.uri, version=entry.read_version)
            extra = rows(2, wide)
            region = next(iter(entry.values.values())) or "a"
            extra = extra.set_column(1, "region", pa.array([region] * 2))
            names = [c for c in ds.schema.names if c in extra.column_names]
            target = pa.schema([ds.schema.field(c) for c in names])
            new = lance.write_dataset(extra.select(names).cast(target), entry.uri, mode="append")
            lance.dataset(manifest_uri(str(root))).update(
                {"read_version": str(new.version)}, where=f"object_id = '{entry.object_id}'"
            )
            ns = lance_sql.PartitionedNamespace.open(root)
        elif op == "delete":
            ns.delete(f"k = {rng.choice([1, 2, 3])}")
    return ns


REGIONS = "abcdefgh"
KEYS = [None, 1, 2, 3, 5, 8, 13, 2**40, -7]


def _where(rng: Any) -> str:
    regions = ", ".join(repr(r) for r in rng.sample(REGIONS, rng.randint(1, 5)))
    keys = rng.sample([1, 2, 3, 5, 8, 13, 2**40, -7, 99, "NULL"], rng.randint(1, 3))
    parts = [
        f"region IN ({regions})" if rng.random() < 0.7 else "TRUE",
        f"k IN ({', '.join(map(str, keys))})"
        if rng.random() < 0.7
        else f"k = {rng.choice(KEYS[1:])}",
    ]
    if rng.random() < 0.3:
        parts.append(f"s = '{rng.choice(['x', 'y', 'é', '', 'z'])}'")
    return (" AND " if rng.random() < 0.8 else " OR ").join(parts)


@pytest.mark.parametrize("seed", [110, 111, 112])
def test_random_namespaces_and_selections_vs_datafusion(tmp_path: Path, seed: int) -> None:
    """Many queries per namespace, so banks are shared between selections. These
    seeds fail without the bank fix above (as did 16 of the first 30 slow seeds)."""
    _check_random_namespace(tmp_path, seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(100, 140))
def test_random_namespaces_and_selections_vs_datafusion_long(tmp_path: Path, seed: int) -> None:
    _check_random_namespace(tmp_path, seed)


def _check_random_namespace(tmp_path: Path, seed: int) -> None:
    import random

    import datafusion

    rng = random.Random(seed)
    root = tmp_path / "ns"
    _random_namespace(root, rng)
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", str(root))
    memory = datafusion.SessionContext()
    memory.register_record_batches("t", [ctx.sql("SELECT * FROM t").to_arrow_table().to_batches()])
    for _ in range(150):
        sql = f"SELECT id FROM t WHERE {_where(rng)}"
        want = sorted(memory.sql(sql).to_arrow_table().column(0).to_pylist())
        assert sorted(ctx.sql(sql).to_arrow_table().column(0).to_pylist()) == want, sql
