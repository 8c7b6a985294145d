"""Layer 3, planning: filters into the predicate IR, partition pruning, joins and search.

:func:`.namespace_scan.plan_scan` is the one scan planner every entry point calls;
docs/pruning.md describes the steps, one module each.
"""

# The namespace's row operations (delete, update, merge...) find their filter planner here.
from lance_sql.planning import mutation_plan as _mutation_plan  # noqa: F401
