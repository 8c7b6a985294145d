"""Per-snapshot memos of the write path (namespace layout, table entries) against a fresh
derivation from the ``__manifest`` rows after random appends, overwrites and deletes.

A stale memo would put a new table under a wrong or duplicate partition namespace, or
make an overwrite miss a partition: the namespace's rows are checked against a model too.
"""

from __future__ import annotations

import datetime as dt
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

import lance_sql
from lance_sql.tables.namespace import write_layout
from lance_sql.tables.namespace.manifest_table import snapshot_entries
from lance_sql.tables.namespace.reader import table_entries

SCHEMA = pa.schema(
    [pa.field("id", pa.int64(), nullable=False), ("a", pa.string()), ("d", pa.date32())]
)
SPEC = [
    {"field_id": "a", "source": "a", "transform": {"type": "identity"}},
    {"field_id": "d", "source": "d", "transform": {"type": "identity"}},
]
A = st.sampled_from([None, "x", "y", "z\u00e9"])
D = st.sampled_from([None, dt.date(2025, 1, 1), dt.date(2025, 1, 2)])
ROWS = st.lists(st.tuples(A, D), min_size=1, max_size=6)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), ROWS),
        st.tuples(st.just("overwrite"), ROWS),
        st.tuples(st.just("delete"), A),
        st.tuples(st.just("update"), st.tuples(A, A)),
        st.tuples(st.just("add_spec"), st.just(None)),
    ),
    min_size=1,
    max_size=7,
)


def _where(a: Any) -> str:
    return "a IS NULL" if a is None else f"a = '{a}'"


def _replaced(row: tuple[int, Any, Any], written: list[Any], current: set[int] | None) -> bool:
    """Whether a dynamic overwrite of ``written`` replaces ``row``: it lies in a partition
    of the current spec that ``written`` has rows for (``current``: ids of rows in tables
    of the current spec v2, partitioned by ``d``; None while spec v1 (a, d) is current)."""
    if current is None:
        return (row[1], row[2]) in {(r[1], r[2]) for r in written}
    return row[0] in current and row[2] in {r[2] for r in written}


def _ids_in_current_spec(ns: Any) -> set[int]:
    out: set[int] = set()
    for e in ns.tables():
        if e.spec_version == ns.current_spec.id:
            out.update(ns._open(e)[0].to_table(columns=["id"]).column("id").to_pylist())
    return out


def _check_memos(ns: Any) -> None:
    snap = ns.snapshot
    spec = ns.current_spec
    fids = [f.field_id for f in spec.fields]
    memo = snap.derived.get(write_layout._memo_key(spec.namespace_name, fids))
    fresh = write_layout._derive(snap.rows, spec.namespace_name, fids)
    if memo is not None:
        assert memo == fresh
    assert write_layout.namespace_layout(snap, spec.namespace_name, fids) == fresh
    all_fids = [f.field_id for f in ns.all_fields()]
    for ids in (fids, all_fids):
        want = table_entries(snap.rows, snap.root, ids)
        assert snapshot_entries(snap, ids) == want
        assert snapshot_entries(snap, ids) == want  # memoized


@settings(max_examples=20, deadline=None)
@given(ops=OPS)
def test_memos_match_the_rows_after_random_writes(ops: list[tuple[str, Any]]) -> None:
    root = Path(tempfile.mkdtemp(prefix="write_layout_"))
    try:
        ns = lance_sql.PartitionedNamespace.create(root / "ns", SCHEMA, SPEC)
        model: list[tuple[int, Any, Any]] = []
        next_id = 0
        for op, arg in ops:
            if op == "delete":
                ns.delete(_where(arg))
                model = [r for r in model if r[1] != arg]
            elif op == "update":  # rows move between partitions (deletes + inserts)
                old, new = arg
                value = "NULL" if new is None else f"'{new}'"
                ns.update(set={"a": value}, where=_where(old))
                model = [(i, new if a == old else a, d) for i, a, d in model]
            elif op == "add_spec":  # later writes go to partitions of spec v2 (d only)
                if len(ns.specs) == 1:
                    ns.add_spec(
                        [{"field_id": "d", "source": "d", "transform": {"type": "identity"}}]
                    )
            else:
                rows = [(next_id + i, a, d) for i, (a, d) in enumerate(arg)]
                next_id += len(rows)
                data = pa.table(
                    {
                        "id": [r[0] for r in rows],
                        "a": [r[1] for r in rows],
                        "d": [r[2] for r in rows],
                    },
                    schema=SCHEMA,
                )
                if op == "append":
                    ns.append(data)
                else:
                    current = _ids_in_current_spec(ns) if len(ns.specs) > 1 else None
                    ns.overwrite(data, partitions="dynamic")
                    model = [r for r in model if not _replaced(r, rows, current)]
                model.extend(rows)
            _check_memos(ns)
            got = ns.to_table().sort_by("id")
            assert got.column("id").to_pylist() == [r[0] for r in sorted(model)]
            assert got.column("a").to_pylist() == [r[1] for r in sorted(model)]
        # no partition namespace is duplicated: one row per (spec, level, values)
        snap = ns.snapshot
        ns_rows = snap.rows.filter(pc.equal(snap.rows.column("object_type"), "namespace"))
        keys = list(
            zip(
                [(o.split("$")[0], o.count("$")) for o in ns_rows.column("object_id").to_pylist()],
                ns_rows.column("partition_field_a").to_pylist(),
                ns_rows.column("partition_field_d").to_pylist(),
                strict=True,
            )
        )
        assert len(keys) == len(set(keys))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_new_table_written_in_one_call_matches_the_staged_path(tmp_path: Path) -> None:
    """A new partition table made by one ``write_dataset`` (a plain write) has the schema,
    field metadata and version of one made from staged files and a creating commit."""
    import lance

    data = pa.table(
        {"id": [1, 2, 3], "a": ["x", None, "x"], "d": [dt.date(2025, 1, 1), None, None]},
        schema=SCHEMA,
    )
    direct = lance_sql.PartitionedNamespace.create(tmp_path / "direct", SCHEMA, SPEC)
    direct.append(data)
    staged = lance_sql.PartitionedNamespace.create(tmp_path / "staged", SCHEMA, SPEC)
    staged.commit_staged([staged.stage(data, write_id="w1")])

    def tables(ns: Any) -> dict[Any, Any]:
        return {tuple(sorted(e.values.items(), key=str)): e for e in ns.tables()}

    a, b = tables(direct), tables(staged)
    assert a.keys() == b.keys() and len(a) == 3
    for key, e in a.items():
        da, db = lance.dataset(e.uri), lance.dataset(b[key].uri)
        assert da.schema.equals(db.schema, check_metadata=True)
        assert (da.version, e.read_version) == (db.version, b[key].read_version) == (1, 1)
        assert da.to_table().equals(db.to_table())
    assert direct.to_table().sort_by("id").equals(staged.to_table().sort_by("id"))


def test_overlap_runs_beside_the_caller_and_reraises() -> None:
    import os
    import threading

    from lance_sql.tables.namespace.overlap import Overlap

    seen: list[str] = []
    job = Overlap(lambda: seen.append(threading.current_thread().name))
    job.join()
    assert seen and seen[0] != threading.current_thread().name
    inline = Overlap(lambda: seen.append(threading.current_thread().name), inline=True)
    inline.join()
    assert seen[1] == threading.current_thread().name

    def boom() -> None:
        raise ValueError("bounds failed")

    failing = Overlap(boom)
    try:
        failing.join()
    except ValueError as exc:
        assert "bounds failed" in str(exc)
    else:
        raise AssertionError("the helper's error was lost")
    Overlap(boom).join(quiet=True)  # the caller is raising its own error

    if hasattr(os, "fork"):  # a forked child gets its own helper thread
        pid = os.fork()
        if pid == 0:
            try:
                out: list[int] = []
                Overlap(lambda: out.append(1)).join()
                os._exit(0 if out == [1] else 1)
            except BaseException:
                os._exit(2)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
