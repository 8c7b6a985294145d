"""Residual predicates per partition row: the packed-pattern grouping against numpy's row unique."""

from __future__ import annotations

import numpy as np
import pytest

from lance_sql.planning import pruning
from lance_sql.planning.pruning import ManifestFilter, residuals_from_proofs
from lance_sql.spec.predicates import Column, Compare, Literal, and_


def _reference(proven: np.ndarray, mf: ManifestFilter) -> list:
    """The grouping as it was written first: numpy's unique over matrix rows."""
    n, k = proven.shape
    if n == 0 or k == 0:
        return [mf.filter] * n
    out = []
    for row in proven:
        if not row.any():
            out.append(mf.filter)
        else:
            out.append(and_(*(c for c, done in zip(mf.conjuncts, row, strict=True) if not done)))
    return out


def _filter(k: int) -> ManifestFilter:
    import pyarrow as pa

    conjuncts = tuple(
        Compare(Column(f"c{i}", i + 1, pa.int64()), ">", Literal(i, pa.int64())) for i in range(k)
    )
    return ManifestFilter(and_(*conjuncts), conjuncts, {})


@pytest.mark.parametrize("k", [1, 2, 5, 62, 63, 70])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 731])
def test_residuals_equal_row_by_row_reference(n: int, k: int) -> None:
    rng = np.random.default_rng(n * 100 + k)
    mf = _filter(k)
    for density in (0.0, 0.2, 0.5, 0.95, 1.0):
        proven = rng.random((n, k)) < density
        got = residuals_from_proofs(proven, mf)
        assert got == _reference(proven, mf)


def test_distinct_rows_inverse_rebuilds_the_matrix() -> None:
    rng = np.random.default_rng(3)
    for k in (1, 3, 62, 64):
        proven = rng.random((50, k)) < 0.3
        proven[10:20] = proven[0]
        patterns, inverse = pruning._distinct_rows(proven)
        assert np.array_equal(patterns[inverse], proven)
        assert len({bytes(p) for p in patterns.astype(np.uint8)}) == len(patterns)
