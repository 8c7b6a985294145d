"""The plain-Python hash of one key-filter literal gives the bits of the Arrow route."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

from lance_sql.planning import key_filter_skipping as kfs
from lance_sql.tables.namespace import key_filters as kf

EDGES = [0, 1, -1, 2, 255, 256, -256, 2**31 - 1, -(2**31), 2**31, 2**32, 2**53 + 1]
EDGES += [2**63 - 1, -(2**63), 2**63, 2**64 - 1, 2**64, -(2**63) - 1]

TYPES = [
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint32(),
    pa.uint64(),
    pa.date32(),
    pa.timestamp("s"),
    pa.timestamp("ms"),
    pa.timestamp("us"),
    pa.timestamp("us", tz="Europe/Paris"),
    pa.timestamp("ns", tz="UTC"),
    pa.string(),
    pa.large_string(),
    pa.float64(),
    pa.bool_(),
]


def _values(rng: random.Random) -> list[object]:
    words = [
        "",
        "a",
        "abc",
        "abcd",
        "abcde",
        "héllo wörld",
        "日本語のテキスト",
        "\x00",
        "x" * 64,
        "y" * 65,
    ]
    ints = EDGES + [rng.randrange(-(2**64), 2**64) for _ in range(200)]
    ints += [rng.randrange(-(2**20), 2**20) for _ in range(200)]
    strs = words + [
        "".join(chr(rng.randrange(32, 0x2FFF)) for _ in range(rng.randrange(0, 20)))
        for _ in range(200)
    ]
    return [*ints, *strs, True, False, 1.5, None, "\ud800"]


@pytest.mark.parametrize("t", TYPES, ids=str)
def test_literal_hash_equals_the_arrow_route(t: pa.DataType) -> None:
    for value in _values(random.Random(str(t))):
        try:
            want = kf.literal_hash(value, t)
        except Exception as e:  # the Arrow route raising: the fast route must raise too
            with pytest.raises(type(e)):
                kfs.literal_hash(value, t)
            continue
        got = kfs.literal_hash(value, t)
        assert got == want, (value, t, got, want)
        assert (got is None) == (want is None)
