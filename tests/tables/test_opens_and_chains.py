"""Open caches (tables/dataset_cache.py) and chained units with prefetch (tables/chain.py)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator

import pyarrow as pa
import pytest

from lance_sql.tables.chain import ChainedUnit, chain_units, prefetched
from lance_sql.tables.dataset_cache import OpenCache, PerProcess, open_all, read_session
from lance_sql.tables.fragments_unit import split_fragments


def test_open_cache_is_a_bounded_lru() -> None:
    cache: OpenCache[str] = OpenCache(capacity=2)
    opened: list[str] = []

    def opener(k: str) -> str:
        opened.append(k)
        return k.upper()

    assert cache.get_or_open("a", lambda: opener("a")) == "A"
    assert cache.get_or_open("b", lambda: opener("b")) == "B"
    assert cache.get_or_open("a", lambda: opener("a")) == "A"  # hit; "a" is now newest
    assert cache.get_or_open("c", lambda: opener("c")) == "C"  # evicts "b"
    assert cache.get("b") is None and cache.get("a") == "A"
    assert opened == ["a", "b", "c"]
    assert len(cache) == 2
    assert cache.put("a", "other") == "A"  # the first stored value wins


def test_open_cache_bounded_by_weight_keeps_the_newest() -> None:
    cache: OpenCache[str] = OpenCache(10, weight=len, max_weight=5)
    cache.put("a", "xx")
    cache.put("b", "xxx")
    assert len(cache) == 2  # weight 5
    cache.put("c", "x")  # weight 6: "a" goes
    assert cache.get("a") is None and cache.get("b") == "xxx" and len(cache) == 2
    cache.put("d", "x" * 9)  # heavier than the bound alone: kept, the rest go
    assert cache.get("d") == "x" * 9 and len(cache) == 1
    cache.discard("d")
    cache.put("e", "xx")
    cache.put("f", "xx")
    assert len(cache) == 2  # the discarded weight was given back


def test_per_process_value_is_made_once_and_again_in_a_forked_child() -> None:
    made: list[int] = []
    value = PerProcess(lambda: made.append(os.getpid()) or len(made))
    got = open_all(range(8), lambda _: value())
    assert got == [1] * 8 and made == [os.getpid()]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its own value, made by itself
        os.write(write, bytes([value(), made[-1] == os.getpid()]))
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 2) == bytes([2, True])
    assert value() == 1 and len(made) == 1  # the parent keeps its own


def test_open_cache_concurrent_misses_return_one_value() -> None:
    cache: OpenCache[object] = OpenCache()
    barrier = threading.Barrier(4)

    def opener() -> object:
        time.sleep(0.01)
        return object()

    def worker() -> object:
        barrier.wait()
        return cache.get_or_open("k", opener)

    got = open_all(range(4), lambda _: worker())
    assert all(g is got[0] for g in got)


def test_open_all_keeps_order_and_raises_the_first_error() -> None:
    assert open_all(range(20), lambda i: i * i) == [i * i for i in range(20)]
    assert open_all([], lambda i: i) == []

    def boom(i: int) -> int:
        if i == 3:
            raise ValueError("three")
        return i

    with pytest.raises(ValueError, match="three"):
        open_all(range(6), boom)


def test_read_session_is_one_lance_session() -> None:
    assert read_session() is read_session()


def _numbers(n: int, start: int = 0) -> Iterator[int]:
    yield from range(start, start + n)


def test_prefetched_yields_every_item_in_order() -> None:
    sources = [_numbers(n, 100 * i) for i, n in enumerate([3, 0, 5, 1, 0, 40])]
    expected = [x for i, n in enumerate([3, 0, 5, 1, 0, 40]) for x in range(100 * i, 100 * i + n)]
    for ahead in (0, 1, 2, 8):
        sources = [_numbers(n, 100 * i) for i, n in enumerate([3, 0, 5, 1, 0, 40])]
        assert list(prefetched(sources, ahead)) == expected


def test_prefetched_starts_the_next_sources_early() -> None:
    started: list[int] = []
    release = threading.Event()

    def source(i: int) -> Iterator[int]:
        started.append(i)
        if i == 0:
            assert release.wait(5)
        yield i

    out = prefetched((source(i) for i in range(4)), ahead=2)
    # the consumer blocks on source 0; sources 1 and 2 are started meanwhile
    t = threading.Thread(target=lambda: started.append(next(out) + 100))
    t.start()
    deadline = time.monotonic() + 5
    while not {1, 2} <= set(started) and time.monotonic() < deadline:
        time.sleep(0.005)
    assert {1, 2} <= set(started)
    assert 3 not in started  # never more than `ahead` in flight
    release.set()
    t.join(5)
    assert list(out) == [1, 2, 3]


def test_prefetched_closes_started_sources_when_the_consumer_stops() -> None:
    started: list[int] = []
    closed: list[int] = []

    def source(i: int) -> Iterator[int]:
        started.append(i)
        try:
            yield from range(10)
        finally:
            closed.append(i)

    out = prefetched((source(i) for i in range(5)), ahead=2)
    assert next(out) == 0
    out.close()
    deadline = time.monotonic() + 5
    while sorted(closed) != sorted(started) and time.monotonic() < deadline:
        time.sleep(0.005)
    # every started source is closed, the one being read at once (a prefetch the pool
    # had not begun is simply dropped)
    assert 0 in closed
    assert sorted(closed) == sorted(started)
    assert set(started) <= {0, 1, 2}


def test_prefetched_raises_a_source_error_when_reached() -> None:
    def bad() -> Iterator[int]:
        raise OSError("damaged")
        yield 0  # pragma: no cover

    out = prefetched([_numbers(2), bad(), _numbers(2)], ahead=2)
    assert next(out) == 0 and next(out) == 1
    with pytest.raises(OSError, match="damaged"):
        next(out)


@pytest.fixture
def fragmented(tmp_path) -> str:
    import lance

    table = pa.table({"x": list(range(1000)), "y": [float(i) for i in range(1000)]})
    uri = str(tmp_path / "t.lance")
    lance.write_dataset(table, uri, max_rows_per_file=100)
    return uri


def test_chained_count_without_filter_comes_from_metadata_and_sees_deletions(
    fragmented: str,
) -> None:
    import lance

    ds = lance.dataset(fragmented)
    ds.delete("x < 50 OR x = 777")
    ds = lance.dataset(fragmented)
    units = split_fragments(ds, 4)
    (chain,) = chain_units(units, 1, ds.schema)
    assert isinstance(chain, ChainedUnit)
    metrics = units[0].metrics
    for u in units:
        u.metrics = metrics
    metrics.reset()
    batches = list(chain.to_batches([], None, 300))
    assert sum(b.num_rows for b in batches) == 949
    assert all(b.num_columns == 0 for b in batches)
    assert max(b.num_rows for b in batches) <= 300
    assert metrics.rows_read == 0  # no page was read
    assert chain.count_rows() == 949


def test_chained_scan_equals_the_units_read_one_by_one(fragmented: str) -> None:
    import lance
    import pyarrow.compute as pc

    ds = lance.dataset(fragmented)
    units = split_fragments(ds, 7)
    chains = chain_units(units, 2, ds.schema)
    flt = pc.field("x").isin([3, 140, 555, 999]) | (pc.field("y") > 990.0)
    for columns in (None, ["y"], []):
        got = [b for c in chains for b in c.to_batches(columns, flt, 64)]
        want = [b for u in units for b in u.to_batches(columns, flt, 64)]
        assert sum(b.num_rows for b in got) == sum(b.num_rows for b in want) > 0
        if columns != []:
            key = "y" if columns else "x"
            assert sorted(v for b in got for v in b.column(key).to_pylist()) == sorted(
                v for b in want for v in b.column(key).to_pylist()
            )
