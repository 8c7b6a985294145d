"""Queries of the differential corpus that fail on today's main, with why.

One dict for the lead's work list: delete an entry when its query passes.
Keys are corpus ids (``tests/differential/sql_corpus.py``); a key ending in
``[spj-off]`` or ``[spj-on]`` applies only to that setting, a bare id to both.
The tests apply each as ``pytest.mark.xfail(strict=False, reason=...)``.
"""

from __future__ import annotations

KNOWN_FAILURES: dict[str, str] = {
    # flaky: -0.0 rows lost under ORDER BY float key + LIMIT (TopK filter pushed into Lance
    # compares floats IEEE-style; DataFusion by total order, -0.0 < 0.0)
    "topk_neg_zero_ties": "TopK over 0.0/-0.0 ties loses -0.0 rows (flaky)",
    "topk_three_keys_neg_zero": "TopK over 0.0/-0.0 ties loses -0.0 rows (flaky)",
    # FormatError "cannot rebuild is_null with options" for u = 0 AND NOT coalesce(...)
    "and_not_coalesce_eq": "FormatError: cannot rebuild is_null with options",
}


#: error messages the generated tests (test_sql_generated, test_dataframe_programs) skip
#: with ``hypothesis.reject()`` so that they keep finding other failure classes; each one
#: has a regression query above. Delete an entry once its regression query passes.
KNOWN_ERRORS: dict[str, str] = {
    "cannot rebuild is_null with options": "and_not_coalesce_eq",
}


def is_known_error(exc: BaseException) -> bool:
    text = str(exc)
    return any(fragment in text for fragment in KNOWN_ERRORS)


def known_failure(query_id: str, spj: bool) -> str | None:
    """The recorded reason ``query_id`` fails with SPJ on/off, or None."""
    tag = "spj-on" if spj else "spj-off"
    return KNOWN_FAILURES.get(f"{query_id}[{tag}]") or KNOWN_FAILURES.get(query_id)
