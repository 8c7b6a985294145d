"""The lifecycle model (``test_lifecycle_model.py``) on a namespace with scalar indexes.

Every random sequence of append / dynamic overwrite / overwrite-where / delete /
update / merge / compact / expire / rename / add_spec / drop and re-create of an
index runs on a namespace with a BTREE on ``id`` and a BITMAP on ``region``.
After every step: the rows equal the model (the parent's invariant), point
lookups and region filters (answered through the indexes) equal the model, and
every partition table holds every namespace index covering all its fragments.
"""

from __future__ import annotations

import pyarrow.compute as pc
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import invariant, rule

from .test_lifecycle_model import COLS, HEALTH, LifecycleMachine, _sorted


class IndexedLifecycle(LifecycleMachine):
    def __init__(self) -> None:
        super().__init__()
        self.ns.create_scalar_index("id", "BTREE")
        self.ns.create_scalar_index("region", "BITMAP")

    @rule(which=st.sampled_from(["id_idx", "region_idx"]))
    def drop_and_recreate_index(self, which: str) -> None:
        self.ns.drop_index(which)
        assert which not in {i.name for i in self.ns.list_indexes()}
        column, kind = ("id", "BTREE") if which == "id_idx" else ("region", "BITMAP")
        self.ns.create_scalar_index(column, kind)

    @invariant()
    def indexed_filters_match_the_model(self) -> None:
        for k in (0, 7, 15):
            want = _sorted([r for r in self.model if r["id"] == k])
            got = self.ns.to_table(filter=pc.field("id") == k).rename_columns(COLS)
            assert _sorted(got.to_pylist()) == want, k
        want = _sorted([r for r in self.model if r["region"] == "b"])
        got = self.ns.to_table(filter=pc.field("region") == "b").rename_columns(COLS)
        assert _sorted(got.to_pylist()) == want
        cols = ", ".join(self._n(c) for c in COLS)
        sql = self.ctx.sql(f"SELECT {cols} FROM t WHERE id = 3").to_arrow_table()
        want = _sorted([r for r in self.model if r["id"] == 3])
        assert _sorted(sql.rename_columns(COLS).to_pylist()) == want

    @invariant()
    def every_table_is_indexed(self) -> None:
        assert {i.name for i in self.ns.list_indexes()} == {"id_idx", "region_idx"}
        cov = self.ns.index_coverage().to_pylist()
        assert len(cov) == 2 * len(self.ns.tables())
        for r in cov:
            assert r["present"] and r["unindexed_fragments"] == 0, r


TestIndexedLifecycle = IndexedLifecycle.TestCase
TestIndexedLifecycle.settings = settings(
    max_examples=40, stateful_step_count=6, deadline=None, suppress_health_check=HEALTH
)


class _SlowIndexed(IndexedLifecycle):
    pass


TestIndexedLifecycleSlow = pytest.mark.slow(_SlowIndexed.TestCase)
TestIndexedLifecycleSlow.settings = settings(
    max_examples=1000, stateful_step_count=10, deadline=None, suppress_health_check=HEALTH
)
