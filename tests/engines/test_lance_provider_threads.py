"""One SessionContext, many threads: registration, planning and scans run concurrently."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import lance
import pytest

import lance_sql

QUERIES = [
    "SELECT count(*) AS n FROM a WHERE x > 3",
    "SELECT sum(id) AS n FROM a WHERE s = 'w2' OR x IS NULL",
    "SELECT count(*) AS n FROM (SELECT id FROM a LIMIT 7)",
    "SELECT count(*) AS n FROM a JOIN b ON a.id = b.id WHERE b.x IN (1, 2)",
    "SELECT max(a.y) AS n FROM a JOIN b ON a.x = b.x AND a.id = b.id",
    "SELECT count(DISTINCT s) AS n FROM b WHERE id BETWEEN 100 AND 400",
    "SELECT count(*) AS n FROM a WHERE s LIKE 'w1%' AND NOT (x = 2)",
    "SELECT sum(x) AS n FROM b",
]


@pytest.mark.timeout(120)
def test_eight_threads_of_mixed_queries(write_lance, numbers_table) -> None:
    uri_a = write_lance(numbers_table(3000), "a", max_rows_per_file=300)
    uri_b = write_lance(numbers_table(1000), "b", max_rows_per_file=250)
    ctx = lance_sql.SessionContext()
    ctx.register_lance("a", uri_a)
    ctx.register_lance("b", uri_b)
    expected = {q: ctx.sql(q).to_pylist()[0]["n"] for q in QUERIES}
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def worker(k: int) -> int:
        barrier.wait()
        done = 0
        for i in range(12):
            q = QUERIES[(k + i) % len(QUERIES)]
            got = ctx.sql(q).to_pylist()[0]["n"]
            assert got == expected[q], (q, got, expected[q])
            done += 1
            if k == 0 and i % 4 == 0:
                # registration while other threads plan and scan
                ctx.register_lance(f"extra{i}", uri_b, version=1)
                assert ctx.sql(f"SELECT count(*) AS n FROM extra{i}").to_pylist()[0]["n"] == 1000
        return done

    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(worker, k) for k in range(8)]
        for f in futures:
            try:
                assert f.result() == 12
            except BaseException as exc:  # collect, then fail with the first
                errors.append(exc)
    assert not errors, errors[0]


@pytest.mark.timeout(120)
def test_concurrent_appends_each_query_sees_one_version(write_lance, numbers_table) -> None:
    uri = write_lance(numbers_table(1000), "grow", max_rows_per_file=100)
    ctx = lance_sql.SessionContext()
    ctx.register_lance("g", uri)
    stop = threading.Event()

    def appender() -> None:
        offset = 1000
        while not stop.is_set() and offset < 1500:
            lance.write_dataset(numbers_table(50, offset=offset), uri, mode="append")
            offset += 50

    thread = threading.Thread(target=appender)
    thread.start()
    try:
        seen = []
        for _ in range(30):
            # count and max over the same scan: a mixed version would break the relation
            row = ctx.sql("SELECT count(*) AS n, max(id) AS m FROM g").to_pylist()[0]
            assert row["m"] == row["n"] - 1
            seen.append(row["n"])
        assert seen == sorted(seen)  # never goes back in time
    finally:
        stop.set()
        thread.join()
    assert ctx.sql("SELECT count(*) AS n FROM g").to_pylist()[0]["n"] == 1500
