"""Layer 3, planning: one predicate IR, partition pruning and storage-partitioned joins.

Partition pruning (docs/pruning.md), one step per module:

- :mod:`.predicates` — the IR; :mod:`.sql_filter`, :mod:`.substrait_filter` and
  :mod:`.arrow_expr` convert SQL text / pyarrow expressions in and out
  (:mod:`.arrow_expr` also evaluates the IR on Arrow rows);
- :mod:`.passes` — push NOT down, bind names and coerce literals exactly
  (:mod:`.literals`), simplify;
- :mod:`.transforms` / :mod:`.time_ranges` — each transform's
  inclusive and strict projections, time chains and zones;
- :mod:`.projection` — a predicate through one spec version;
- :mod:`.pruning` / :mod:`.planner` — the ``__manifest`` filter, selected
  partitions, residuals and the report: ``plan_partitions(filter, specs,
  schema, manifest_rows)``;
- :mod:`.namespace_scan` — the one scan planner every entry point calls:
  ``plan_scan(namespace or root, filter)`` -> :class:`.scan_plan.ScanPlan`.

Nothing here does I/O: tables in, tables out.
"""

# The namespace's row operations (delete, update, merge...) find their filter planner here.
from lance_sql.planning import mutation_plan as _mutation_plan  # noqa: F401
