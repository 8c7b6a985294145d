"""Queries of the differential corpus that fail on today's main, with why.

One dict for the lead's work list: delete an entry when its query passes.
Keys are corpus ids (``tests/differential/sql_corpus.py``); a key ending in
``[spj-off]`` or ``[spj-on]`` applies only to that setting, a bare id to both.
The tests apply each as ``pytest.mark.xfail(strict=False, reason=...)``.
"""

from __future__ import annotations

KNOWN_FAILURES: dict[str, str] = {
    # contradictory equalities on a partition column (identity ``kind``) fold to a
    # pyarrow BooleanScalar that is then AND-ed with an Expression: TypeError
    # "unsupported operand type(s) for &: 'pyarrow.lib.BooleanScalar' and
    # 'pyarrow._compute.Expression'"; plain DataFusion returns 0 rows
    "contradiction_kind": "TypeError: BooleanScalar & Expression (contradiction on partition col)",
    # EXPLAIN of one Lance table scanned twice with different filters:
    # provider.py ExplainAnnotation.annotate compares pyarrow Expressions with ==
    "explain_scanned_twice_t": "ValueError: Expression cannot be evaluated to True or False",
    "explain_scanned_twice_orders": "ValueError: Expression cannot be evaluated to True or False",
    # SPJ off: UnboundLocalError "cannot access local variable 'spj'" in
    # engines/datafusion/plan_rewrite.py rewrite() when only pruning changed the plan
    "right_join_on_right_only_where_left[spj-off]": "UnboundLocalError in plan_rewrite.rewrite",
    "df_right_join_right_filter_then_filter[spj-off]": "UnboundLocalError in plan_rewrite.rewrite",
}


def known_failure(query_id: str, spj: bool) -> str | None:
    """The recorded reason ``query_id`` fails with SPJ on/off, or None."""
    tag = "spj-on" if spj else "spj-off"
    return KNOWN_FAILURES.get(f"{query_id}[{tag}]") or KNOWN_FAILURES.get(query_id)
