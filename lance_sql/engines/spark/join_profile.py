"""Opt-in profile of ``partitioned_join`` tasks: ``LANCE_SQL_JOIN_PROFILE=<folder>`` in the
workers writes a cProfile ``.prof`` and a ``.json`` of times, rows and peak RSS per task."""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from typing import Any

ENV = "LANCE_SQL_JOIN_PROFILE"


def profiled(batches: Iterator[Any]) -> Iterator[Any]:
    """``batches`` unchanged; profiled and reported when :data:`ENV` names a folder."""
    folder = os.environ.get(ENV)
    if not folder:
        yield from batches
        return
    import cProfile

    os.makedirs(folder, exist_ok=True)
    prof = cProfile.Profile()
    start = time.perf_counter()
    ours = 0.0
    rows = 0
    it = iter(batches)
    while True:
        t = time.perf_counter()
        prof.enable()
        try:
            batch = next(it)
        except StopIteration:
            break
        finally:
            prof.disable()
            ours += time.perf_counter() - t
        rows += batch.num_rows
        yield batch
    wall = time.perf_counter() - start
    stem = os.path.join(folder, f"join-task-{os.getpid()}-{time.time_ns()}")
    prof.dump_stats(stem + ".prof")
    with open(stem + ".json", "w", encoding="utf-8") as f:
        json.dump(
            {
                "wall_s": wall,
                "ours_s": ours,
                "spark_consumer_s": wall - ours,
                "rows": rows,
                "vm_hwm_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,  # Linux: KiB
            },
            f,
        )
