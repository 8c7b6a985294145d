"""Row-by-row comparison of query results from two engines (lance-sql vs DuckDB, DataFusion).

Values are compared by kind, never by Arrow type: the engines type the same
answer differently (DuckDB sums decimals as decimal(38, s) and averages them as
double; DataFusion averages them as decimal(19, 6)).

- two decimals (or a decimal and an integer): exactly equal as numbers;
- a float and a decimal: equal within one unit of the decimal's last digit
  (DataFusion rounds a decimal average to 6 digits, DuckDB keeps a double);
- two floats: relative tolerance 1e-9;
- anything else (strings, dates, integers, NULL): ``==``.

Rows are compared in order: every TPC-H query orders its output completely or
returns one row.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

import pyarrow as pa

FLOAT_REL_TOL = 1e-9


def values_equal(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are the same answer (see the module docstring)."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float, Decimal)) or not isinstance(b, (int, float, Decimal)):
            return False
        fa, fb = float(a), float(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        tol = FLOAT_REL_TOL * max(abs(fa), abs(fb))
        for v in (a, b):
            if isinstance(v, Decimal):
                tol = max(tol, 10.0 ** v.as_tuple().exponent)  # one unit of its last digit
        return abs(fa - fb) <= tol
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def first_difference(got: pa.Table, want: pa.Table) -> str | None:
    """A description of the first row where ``got`` and ``want`` differ, or None."""
    g, w = got.to_pylist(), want.to_pylist()
    for i, (rg, rw) in enumerate(zip(g, w, strict=False)):
        vg, vw = list(rg.values()), list(rw.values())
        if len(vg) != len(vw) or not all(values_equal(a, b) for a, b in zip(vg, vw, strict=True)):
            return f"row {i}: got {tuple(vg)!r}, want {tuple(vw)!r}"
    if len(g) != len(w):
        return f"got {len(g)} rows, want {len(w)}"
    return None


def unqualified(name: str) -> str:
    """A column name without table qualifiers: ``sum(lineitem.l_quantity)`` -> ``sum(l_quantity)``.

    DataFusion names an unaliased expression with qualified columns, DuckDB without.
    """
    return re.sub(r"\b[A-Za-z_][A-Za-z0-9_]*\.(?=[A-Za-z_])", "", name)


def plain_type(t: pa.DataType) -> pa.DataType:
    """``t`` with view types as their plain forms (tpchgen-cli writes ``string_view``)."""
    return {pa.string_view(): pa.string(), pa.binary_view(): pa.binary()}.get(t, t)
