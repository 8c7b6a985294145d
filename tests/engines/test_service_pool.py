"""``lance_sql.ServicePool`` answers exactly as one in-process ``SessionContext`` does.

Real worker processes (spawned), a namespace and a Lance dataset written by
pylance; every answer compared with the in-process answer (names, types,
rows), writes between queries seen, errors raised with their lance-sql class.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator
from pathlib import Path

import lance
import pytest

import lance_sql
from lance_sql.tables.namespace.namespace import PartitionedNamespace
from tests.engines.test_service_caches import QUERIES, make_namespace, rows


@pytest.fixture(scope="module")
def pool() -> Iterator[lance_sql.ServicePool]:
    with lance_sql.ServicePool(2) as service:
        yield service


def in_process(root: str, one: str, sql: str) -> object:
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    ctx.register_lance("one", one)
    return ctx.sql(sql).to_arrow_table()


def test_answers_equal_the_in_process_answers(pool: lance_sql.ServicePool, tmp_path: Path) -> None:
    root = make_namespace(tmp_path)
    one = str(tmp_path / "one.lance")
    lance.write_dataset(rows(0, 60), one)
    pool.register_namespace("t", root)
    pool.register_lance("one", one)
    work = [
        *QUERIES,
        "SELECT t.id, one.x FROM t JOIN one ON t.id = one.id WHERE t.id < 5 ORDER BY t.id",
        "SELECT * FROM one WHERE id BETWEEN 10 AND 12 ORDER BY id",
    ]
    with concurrent.futures.ThreadPoolExecutor(4) as threads:
        got = list(threads.map(pool.sql, work * 3))
    for sql, table in zip(work * 3, got, strict=True):
        want = in_process(root, one, sql)
        assert table.schema.equals(want.schema), sql  # names, types, nullability
        assert table.equals(want), sql


def test_a_write_between_two_queries_is_seen(pool: lance_sql.ServicePool, tmp_path: Path) -> None:
    root = make_namespace(tmp_path)
    pool.register_namespace("t", root)
    sql = "SELECT count(*) AS n, sum(x) AS s FROM t WHERE day = DATE '2024-01-03'"
    before = [pool.sql(sql).to_pylist() for _ in range(4)]  # both workers, warm
    assert before == [before[0]] * 4
    PartitionedNamespace.open(root).append(rows(60, 40))
    after = [pool.sql(sql).to_pylist() for _ in range(4)]
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    assert after == [ctx.sql(sql).to_arrow_table().to_pylist()] * 4
    assert after != before


def test_errors_keep_their_class(pool: lance_sql.ServicePool, tmp_path: Path) -> None:
    pool.register_namespace("missing", str(tmp_path / "no_such_namespace"))
    with pytest.raises(lance_sql.NotFoundError) as raised:
        pool.sql("SELECT 1")
    ctx = lance_sql.SessionContext()
    with pytest.raises(lance_sql.NotFoundError) as local:
        ctx.register_namespace("missing", str(tmp_path / "no_such_namespace"))
    assert str(raised.value) == str(local.value)


def test_bad_sql_raises_as_in_process(tmp_path: Path) -> None:
    root = make_namespace(tmp_path)
    with lance_sql.ServicePool(1) as service:
        service.register_namespace("t", root)
        with pytest.raises(Exception) as raised:
            service.sql("SELECT no_such_column FROM t")
    ctx = lance_sql.SessionContext()
    ctx.register_namespace("t", root)
    with pytest.raises(Exception) as local:
        ctx.sql("SELECT no_such_column FROM t").to_arrow_table()
    assert type(raised.value) is type(local.value)
    assert str(raised.value) == str(local.value)


def test_unsendable_options_are_refused_at_registration(tmp_path: Path) -> None:
    service = lance_sql.ServicePool(1)
    with pytest.raises(lance_sql.PlanningError, match="cannot be sent to a worker"):
        service.register_namespace("t", str(tmp_path), prune=lambda f, ns: None)
    service.close()


def test_a_dead_worker_is_replaced(tmp_path: Path) -> None:
    import os
    import signal
    import time

    root = make_namespace(tmp_path)
    sql = "SELECT count(*) AS n FROM t WHERE day = DATE '2024-01-03'"
    with lance_sql.ServicePool(1) as service:
        service.register_namespace("t", root)
        want = service.sql(sql)
        executor = service._executor
        assert executor is not None
        for pid in list(executor._processes):  # type: ignore[attr-defined]
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while not executor._broken and time.monotonic() < deadline:  # type: ignore[attr-defined]
            time.sleep(0.05)
        assert service.sql(sql).equals(want)
