"""Mutated and truncated manifests: each one parses or is refused with a typed error, fast.

Accepted outcomes per case: a DatasetMetadata whose schema, fragments and row
count can be computed; FormatError (damaged bytes); UnsupportedFeatureError (a
flipped bit made an unknown reader feature flag); NotFoundError (a damaged
deletion file id now names a file that does not exist). Anything else, such as
a raw ``struct.error``, ``DecodeError``, ``IndexError`` or ``MemoryError``,
fails the test with the case that produced it.
"""

from __future__ import annotations

import random
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import fsspec
import pytest

from lance_sql.errors import FormatError, NotFoundError, UnsupportedFeatureError
from lance_sql.format.metadata import open_metadata

SEED = 20261121
CASES_PER_SEED_FILE = 2500
ACCEPTED = (FormatError, UnsupportedFeatureError, NotFoundError)


def _wrap(prefix: bytes, body: bytes, trailer: bytes) -> bytes:
    return prefix + struct.pack("<I", len(body)) + body + struct.pack("<Q", len(prefix)) + trailer


def mutations(data: bytes, other: bytes, rng: random.Random) -> Iterator[tuple[str, bytes]]:
    """Endless deterministic stream of (description, mutated file)."""
    size = len(data)
    (pos,) = struct.unpack_from("<Q", data, size - 16)
    (length,) = struct.unpack_from("<I", data, pos)
    prefix, body, trailer = data[:pos], data[pos + 4 : pos + 4 + length], data[-8:]
    kinds: list[Callable[[], tuple[str, bytes]]] = []

    def bit_flips() -> tuple[str, bytes]:
        out = bytearray(data)
        flips = [rng.randrange(size * 8) for _ in range(rng.randint(1, 8))]
        for bit in flips:
            out[bit // 8] ^= 1 << (bit % 8)
        return f"bit flips {flips}", bytes(out)

    def body_flips_rewrapped() -> tuple[str, bytes]:
        out = bytearray(body)
        flips = [rng.randrange(len(out) * 8) for _ in range(rng.randint(1, 4))]
        for bit in flips:
            out[bit // 8] ^= 1 << (bit % 8)
        return f"body bit flips {flips}", _wrap(prefix, bytes(out), trailer)

    def body_bytes_rewrapped() -> tuple[str, bytes]:
        out = bytearray(body)
        at = rng.randrange(len(out))
        value = rng.choice([0x00, 0xFF, 0x80, 0x7F, rng.randrange(256)])
        out[at] = value
        return f"body byte {at}={value}", _wrap(prefix, bytes(out), trailer)

    def truncation() -> tuple[str, bytes]:
        cut = rng.randrange(size)
        return f"truncated to {cut}", data[:cut]

    def body_truncation_rewrapped() -> tuple[str, bytes]:
        cut = rng.randrange(len(body))
        return f"body truncated to {cut}", _wrap(prefix, body[:cut], trailer)

    def splice() -> tuple[str, bytes]:
        a = rng.randrange(size)
        b = min(size, a + rng.randint(1, 64))
        c = rng.randrange(len(other))
        chunk = other[c : c + rng.randint(0, 64)] if rng.random() < 0.5 else rng.randbytes(b - a)
        return f"splice [{a}:{b}] <- {len(chunk)} bytes", data[:a] + chunk + data[b:]

    def body_splice_rewrapped() -> tuple[str, bytes]:
        a = rng.randrange(len(body))
        b = min(len(body), a + rng.randint(0, 32))
        c = rng.randrange(len(body))
        chunk = body[c : c + rng.randint(0, 32)]
        return f"body splice [{a}:{b}] <- body[{c}:]", _wrap(
            prefix, body[:a] + chunk + body[b:], trailer
        )

    def bogus_position() -> tuple[str, bytes]:
        value = rng.choice(
            [
                0,
                1,
                size - 20,
                size - 16,
                size,
                pos - 1,
                pos + 1,
                rng.getrandbits(64),
                rng.getrandbits(16),
            ]
        )
        value = max(0, min(value, (1 << 64) - 1))
        return f"footer position {value}", data[:-16] + struct.pack("<Q", value) + data[-8:]

    def bogus_length() -> tuple[str, bytes]:
        value = rng.choice([0, 1, length - 1, length + 1, 0xFFFFFFFF, rng.getrandbits(32)])
        value = max(0, min(value, 0xFFFFFFFF))
        return f"length prefix {value}", data[:pos] + struct.pack("<I", value) + data[pos + 4 :]

    def bogus_magic() -> tuple[str, bytes]:
        return "magic", data[:-4] + rng.randbytes(4)

    kinds = [
        bit_flips,
        body_flips_rewrapped,
        body_flips_rewrapped,
        body_bytes_rewrapped,
        truncation,
        body_truncation_rewrapped,
        splice,
        body_splice_rewrapped,
        bogus_position,
        bogus_length,
        bogus_magic,
    ]
    while True:
        yield rng.choice(kinds)()


def _copy_to_memory(local_uri: str, target: str) -> None:
    fs = fsspec.filesystem("memory")
    local = fsspec.filesystem("file")
    for path in local.find(local_uri):
        rel = Path(path).relative_to(local_uri).as_posix()
        if rel.startswith(("_versions/", "_deletions/")):
            fs.pipe(f"{target}/{rel}", local.cat_file(path))


def _exercise(uri: str) -> None:
    md = open_metadata(uri)
    md.count_rows()
    _ = (md.fragments, md.schema, md.primary_key)


@pytest.mark.timeout(120)
def test_fuzzed_manifests_parse_or_fail_cleanly(history_uri: str, all_types_uri: str) -> None:
    rng = random.Random(SEED)
    fs = fsspec.filesystem("memory")
    seeds = []
    for i, local in enumerate((history_uri, all_types_uri)):
        target = f"/lance_sql_fuzz/ds{i}"
        if fs.exists(target):
            fs.rm(target, recursive=True)
        _copy_to_memory(local, target)
        newest = sorted(fs.ls(f"{target}/_versions", detail=False))[0]
        for path in fs.ls(f"{target}/_versions", detail=False):
            if path != newest:
                fs.rm(path)
        seeds.append((f"memory:/{target}", newest, fs.cat_file(newest)))
    outcomes: dict[str, int] = {}
    slowest = 0.0
    start = time.perf_counter()
    try:
        for i, (uri, manifest_path, data) in enumerate(seeds):
            other = seeds[1 - i][2]
            stream = mutations(data, other, rng)
            for _ in range(CASES_PER_SEED_FILE):
                what, mutated = next(stream)
                fs.pipe(manifest_path, mutated)
                t0 = time.perf_counter()
                try:
                    _exercise(uri)
                    outcome = "parsed"
                except ACCEPTED as exc:
                    outcome = type(exc).__name__
                    assert str(exc), what
                except Exception as exc:  # pragma: no cover - the failure being tested for
                    pytest.fail(f"{what}: {type(exc).__name__}: {exc}")
                slowest = max(slowest, time.perf_counter() - t0)
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
    finally:
        fs.rm("/lance_sql_fuzz", recursive=True)
    elapsed = time.perf_counter() - start
    assert sum(outcomes.values()) >= 2000
    assert outcomes.get("FormatError", 0) > 500, outcomes
    assert outcomes.get("parsed", 0) > 50, outcomes
    # generous bounds: a case that reads a huge range or loops would take seconds
    assert slowest < 2.0, slowest
    assert elapsed < 60.0, elapsed


DELETION_CASES_PER_KIND = 1000


@pytest.mark.timeout(120)
def test_fuzzed_deletion_files_parse_or_fail_cleanly(history_uri: str) -> None:
    from lance_sql.format.deletions import read_deletion_file
    from lance_sql.format.storage import resolve

    rng = random.Random(SEED + 1)
    md = open_metadata(history_uri)
    fs = fsspec.filesystem("memory")
    outcomes: dict[str, int] = {}
    try:
        for kind in ("arrow", "bitmap"):
            frag = next(
                f for f in md.fragments if f.deletion_file and f.deletion_file.file_type == kind
            )
            data = Path(md.deletion_file_uri(frag.id)).read_bytes()
            loc = resolve(f"memory://lance_sql_fuzz_del/{kind}")
            for _ in range(DELETION_CASES_PER_KIND):
                choice = rng.randrange(3)
                if choice == 0:
                    out = bytearray(data)
                    for _ in range(rng.randint(1, 6)):
                        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
                    mutated, what = bytes(out), "bit flips"
                elif choice == 1:
                    cut = rng.randrange(len(data))
                    mutated, what = data[:cut], f"truncated to {cut}"
                else:
                    a = rng.randrange(len(data))
                    mutated, what = (
                        data[:a] + rng.randbytes(rng.randint(1, 16)) + data[a + 8 :],
                        "splice",
                    )
                fs.pipe(loc.path, mutated)
                try:
                    offsets = read_deletion_file(loc, kind)
                    assert offsets.dtype.name == "uint32"
                    outcome = "parsed"
                except FormatError as exc:
                    assert loc.url in str(exc)
                    outcome = "FormatError"
                except Exception as exc:  # pragma: no cover - the failure being tested for
                    pytest.fail(f"{kind} {what}: {type(exc).__name__}: {exc}")
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
    finally:
        fs.rm("/lance_sql_fuzz_del", recursive=True)
    assert outcomes.get("FormatError", 0) > 100, outcomes
