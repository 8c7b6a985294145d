"""Fuzzing the namespace layer: mutated root-property JSON and mutated manifest files.

Every case must either work (the namespace opens and reads) or be refused with
a :class:`lance_sql.errors.LanceSqlError` subclass; any other exception (a raw
``KeyError``, ``RecursionError``, a pylance ``PanicException``...) fails the
test with the seed and mutation that produced it. Seeds are fixed, so a failure
reproduces exactly. Each case is timed: none may take more than a few seconds
(no hang).
"""

from __future__ import annotations

import copy
import glob
import json
import random
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lance_sql.errors import LanceSqlError
from lance_sql.tables.namespace.namespace import PartitionedNamespace, parse_properties

JSON_CASES = 2_000
MANIFEST_CASES = 2_000  # half on __manifest's own manifest, half on a partition table's
SLOWEST_CASE_SECONDS = 10.0

SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("country", pa.string()),
        pa.field("ts", pa.timestamp("us", "UTC")),
        pa.field("price", pa.decimal128(10, 2)),
        pa.field("tags", pa.list_(pa.string())),
        pa.field("loc", pa.struct([pa.field("lat", pa.float64()), pa.field("lon", pa.float64())])),
    ]
)
SPEC = [
    {"source": "id", "transform": "bucket", "num_buckets": 16},
    {"source": "country", "transform": "truncate", "width": 2},
    {"source": "ts", "transform": "day"},
    {"sources": ["id", "country"], "transform": "multi_bucket", "num_buckets": 8},
    {"sources": ["id"], "expression": "abs(col0) % 7", "result_type": pa.int64(),
     "field_id": "id_mod"},
]  # fmt: skip

JUNK: list[Any] = [None, True, -1, 0, 2**31, 2**70, -(2**63), 1.5, float("1e308"), "", "x",
                   "int64", "v2", [], [None], {}, {"name": "int64"}, {"type": None}, "é\u0000",
                   "a" * 5000, [[[[[]]]]], {"name": "struct", "children": "no"}]  # fmt: skip


def _paths(obj: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


def _set(obj: Any, path: tuple, value: Any, delete: bool = False) -> Any:
    if not path:
        return value
    parent = obj
    for p in path[:-1]:
        parent = parent[p]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return obj


def mutate_json(text: str, rng: random.Random) -> tuple[str, str]:
    """One mutated document and a description of the mutation."""
    kind = rng.randrange(6)
    if kind == 0:  # text-level: flip, insert or delete characters
        chars = list(text)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(chars))
            op = rng.randrange(3)
            if op == 0:
                chars[at] = chr(rng.choice([0, 34, 44, 58, 91, 93, 123, 125, rng.randrange(128)]))
            elif op == 1:
                del chars[at]
            else:
                chars.insert(at, rng.choice('{}[]",:0-e'))
        return "".join(chars), "text edit"
    if kind == 1:
        cut = rng.randrange(len(text))
        return text[:cut], f"truncated at {cut}"
    obj = json.loads(text)
    paths = list(_paths(obj))
    path = rng.choice(paths)
    if kind == 2 or not path:
        value = copy.deepcopy(rng.choice(JUNK))
        return json.dumps(_set(obj, path, value)), f"{path} = {value!r:.40}"
    if kind == 3:
        return json.dumps(_set(obj, path, None, delete=True)), f"del {path}"
    if kind == 4:  # swap the value with another part of the same document
        other = rng.choice(paths)
        value = obj
        for p in other:
            value = value[p]
        return json.dumps(_set(obj, path, copy.deepcopy(value))), f"{path} = copy of {other}"
    # numbers nudged: ids, buckets, widths, bit widths off by one or sign
    value = obj
    for p in path:
        value = value[p]
    if isinstance(value, int) and not isinstance(value, bool):
        new = rng.choice([value + 1, value - 1, -value, value * 1000, 0])
        return json.dumps(_set(obj, path, new)), f"{path}: {value} -> {new}"
    return json.dumps(_set(obj, path, str(value))), f"{path} stringified"


def _accept(case: str, action: Callable[[], object], timings: list[float]) -> str:
    """Run one case: ``ok`` or the typed error's name; anything else fails the test."""
    start = time.perf_counter()
    try:
        action()
        outcome = "ok"
    except LanceSqlError as exc:
        outcome = type(exc).__name__
    except BaseException as exc:
        raise AssertionError(f"{case}: untyped {type(exc).__name__}: {exc}"[:2000]) from exc
    timings.append(time.perf_counter() - start)
    assert timings[-1] < SLOWEST_CASE_SECONDS, f"{case}: took {timings[-1]:.1f}s"
    return outcome


@pytest.fixture(scope="module")
def fuzz_namespace(tmp_path_factory) -> str:
    root = str(tmp_path_factory.mktemp("fuzz") / "ns")
    ns = PartitionedNamespace.create(root, SCHEMA, SPEC)
    # one partition table: each manifest case then costs one pylance open and one scan
    ns.append(
        pa.table(
            {
                "id": [1, 1],
                "country": ["US", "US"],
                "ts": pa.array([0, 1], pa.timestamp("us", "UTC")),
            }
        )
    )
    return root


def test_fuzz_root_property_json(fuzz_namespace):
    props = PartitionedNamespace.open(fuzz_namespace).snapshot.properties
    base = {k: v for k, v in props.items() if k == "schema" or k.startswith("partition_spec_v")}
    parse_properties(base)  # the unmutated documents are valid
    rng = random.Random(20261121)
    outcomes: dict[str, int] = {}
    timings: list[float] = []
    for case in range(JSON_CASES):
        key = rng.choice(sorted(base))
        text, how = mutate_json(base[key], rng)
        mutated = {**base, key: text}
        outcome = _accept(
            f"case {case} {key}: {how}", lambda m=mutated: parse_properties(m), timings
        )
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    print("json fuzz:", JSON_CASES, "cases", outcomes, f"slowest {max(timings):.3f}s")
    assert sum(outcomes.values()) == JSON_CASES
    assert outcomes.get("SpecError", 0) > JSON_CASES // 4  # the mutations really bite


def mutate_manifest(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A damaged manifest file: bit flips, truncation, junk, or a damaged message body."""
    size = len(data)
    (pos,) = struct.unpack_from("<Q", data, size - 16)
    (length,) = struct.unpack_from("<I", data, pos)
    body = data[pos + 4 : pos + 4 + length]
    kind = rng.randrange(6)
    if kind == 0:
        out = bytearray(data)
        flips = [rng.randrange(size * 8) for _ in range(rng.randint(1, 8))]
        for bit in flips:
            out[bit // 8] ^= 1 << (bit % 8)
        return bytes(out), f"bit flips {flips}"
    if kind == 1:
        cut = rng.randrange(size)
        return data[:cut], f"truncated to {cut}"
    if kind == 2:
        at = rng.randrange(size)
        n = rng.randint(1, 64)
        return data[:at] + bytes(rng.randrange(256) for _ in range(n)) + data[at + n :], "junk"
    # the message body damaged but re-wrapped, so the protobuf decoder sees it
    out = bytearray(body)
    if kind == 3:
        for _ in range(rng.randint(1, 4)):
            bit = rng.randrange(len(out) * 8)
            out[bit // 8] ^= 1 << (bit % 8)
        how = "body bits"
    elif kind == 4:
        at = rng.randrange(len(out))
        out[at] = rng.choice([0x00, 0xFF, 0x80, 0x7F, rng.randrange(256)])
        how = f"body byte {at}"
    else:
        cut = rng.randrange(len(out))
        out = out[:cut]
        how = f"body cut at {cut}"
    prefix = data[:pos]
    wrapped = prefix + struct.pack("<I", len(out)) + bytes(out) + struct.pack("<Q", pos)
    return wrapped + data[-8:], how


def _latest_manifest(table_dir: str) -> Path:
    return Path(sorted(glob.glob(f"{glob.escape(table_dir)}/_versions/*.manifest"))[0])


def _read_everything(root: str) -> None:
    ns = PartitionedNamespace.open(root)
    ns.to_table()
    ns.partitions()


@pytest.fixture(scope="module")
def manifest_fuzz(fuzz_namespace) -> dict[str, Any]:
    """Run every manifest case once; the tests below check different promises about it."""
    root = fuzz_namespace
    ns = PartitionedNamespace.open(root)
    expected = ns.count_rows()
    targets = [
        ("__manifest", _latest_manifest(f"{root}/__manifest")),
        ("partition table", _latest_manifest(ns.tables()[0].uri)),
    ]
    rng = random.Random(10)
    outcomes: dict[str, int] = {}
    untyped: dict[str, str] = {}
    slowest = 0.0
    originals = {path: path.read_bytes() for _, path in targets}
    try:
        for case in range(MANIFEST_CASES):
            what, path = targets[case % 2]
            data, how = mutate_manifest(originals[path], rng)
            path.write_bytes(data)
            start = time.perf_counter()
            try:
                _read_everything(root)
                outcome = "ok"
            except LanceSqlError as exc:
                outcome = type(exc).__name__
            except BaseException as exc:  # pylance panics are BaseExceptions
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                outcome = f"UNTYPED {type(exc).__name__}"
                untyped.setdefault(f"{what}: {outcome}", f"case {case} ({how}): {exc}"[:300])
            slowest = max(slowest, time.perf_counter() - start)
            key = f"{what}: {outcome}"
            outcomes[key] = outcomes.get(key, 0) + 1
            path.write_bytes(originals[path])
    finally:
        for path, data in originals.items():
            path.write_bytes(data)
    print("manifest fuzz:", MANIFEST_CASES, "cases", outcomes, f"slowest {slowest:.3f}s")
    return {
        "outcomes": outcomes,
        "untyped": untyped,
        "slowest": slowest,
        "intact": PartitionedNamespace.open(root).count_rows() == expected,
    }


def test_fuzz_manifest_files_no_crash_no_hang(manifest_fuzz):
    """The process survives every case, no case hangs, most damage is refused."""
    outcomes = manifest_fuzz["outcomes"]
    assert sum(outcomes.values()) == MANIFEST_CASES
    assert manifest_fuzz["slowest"] < SLOWEST_CASE_SECONDS
    assert manifest_fuzz["intact"]  # files restored, the namespace reads as before
    refused = sum(n for k, n in outcomes.items() if not k.endswith(": ok"))
    assert refused > MANIFEST_CASES // 4


def test_fuzz_manifest_files_typed_errors(manifest_fuzz):
    assert manifest_fuzz["untyped"] == {}


def test_mutated_namespace_still_appendable(fuzz_namespace):
    """After the fuzzing (files restored), the namespace still takes writes."""
    ns = PartitionedNamespace.open(fuzz_namespace)
    before = ns.count_rows()
    ns.append(pa.table({"id": [9], "country": ["NL"]}))
    assert ns.count_rows() == before + 1
