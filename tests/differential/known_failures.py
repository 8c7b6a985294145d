"""Queries of the differential corpus that fail on today's main, with why.

One dict for the lead's work list: delete an entry when its query passes.
Keys are corpus ids (``tests/differential/sql_corpus.py``); a key ending in
``[spj-off]`` or ``[spj-on]`` applies only to that setting, a bare id to both.
The tests apply each as ``pytest.mark.xfail(strict=False, reason=...)``.
"""

from __future__ import annotations

KNOWN_FAILURES: dict[str, str] = {
    # flaky: under ORDER BY a float key + LIMIT, DataFusion 55's per-partition TopK returns
    # rows that depend on batch arrival order when -0.0 and 0.0 tie (several partitions:
    # lance-sql's scans; one memory partition in plain DataFusion); see docs/sql.md
    "topk_neg_zero_ties": "TopK over 0.0/-0.0 ties loses -0.0 rows (flaky)",
    "topk_three_keys_neg_zero": "TopK over 0.0/-0.0 ties loses -0.0 rows (flaky)",
}


#: error messages the generated tests (test_sql_generated, test_dataframe_programs) skip
#: with ``hypothesis.reject()`` so that they keep finding other failure classes; each one
#: has a regression query above. Delete an entry once its regression query passes.
KNOWN_ERRORS: dict[str, str] = {}


def is_known_error(exc: BaseException) -> bool:
    text = str(exc)
    return any(fragment in text for fragment in KNOWN_ERRORS)


def known_failure(query_id: str, spj: bool) -> str | None:
    """The recorded reason ``query_id`` fails with SPJ on/off, or None."""
    tag = "spj-on" if spj else "spj-off"
    return KNOWN_FAILURES.get(f"{query_id}[{tag}]") or KNOWN_FAILURES.get(query_id)
