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
    # SPJ on: an outer join whose ON also equates a preserved-side column with that side's
    # join key; the group query names a column of the other side: "Schema error: No field
    # named __spj_right.order_id ... Valid fields are __spj_left.id"
    "right_join_on_key_eq_right_col[spj-on]": "Schema error: No field named __spj_right.order_id",
    "full_join_on_key_eq_right_col[spj-on]": "Schema error: No field named __spj_right.order_id",
}


#: error messages the generated tests (test_sql_generated, test_dataframe_programs) skip
#: with ``hypothesis.reject()`` so that they keep finding other failure classes; each one
#: has a regression query above. Delete an entry once its regression query passes.
KNOWN_ERRORS: dict[str, str] = {
    "cannot access local variable 'spj'": "right_join_on_right_only_where_left",
    "No field named __spj_right.": "right_join_on_key_eq_right_col",
}


def is_known_error(exc: BaseException) -> bool:
    text = str(exc)
    return any(fragment in text for fragment in KNOWN_ERRORS)


def known_failure(query_id: str, spj: bool) -> str | None:
    """The recorded reason ``query_id`` fails with SPJ on/off, or None."""
    tag = "spj-on" if spj else "spj-off"
    return KNOWN_FAILURES.get(f"{query_id}[{tag}]") or KNOWN_FAILURES.get(query_id)
