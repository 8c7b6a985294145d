"""The package's layers only import downwards, without cycles, in modules of one job.

format -> spec -> tables -> planning -> engines -> cli; ``errors`` is below everything; the
package root (``lance_sql/__init__.py``, ``lance_sql/spark.py``) is the public facade
above every layer. ``udfs`` is a separate package below format: it never imports
``lance_sql`` or DataFusion.

The import graph is read from the source (AST): every ``import`` statement,
including those inside functions, ``from . import x`` relative imports, and the
module names a file hands to ``importlib.import_module`` as string literals (the
package root's lazy attribute table). Imports of the package root itself
(``import lance_sql``) are edges to the root, which sits above every layer.

Some checks carry an allow-list of today's offenders. An allow-list may only
shrink: a new offender fails, a listed one that grew fails, and an entry that no
longer applies fails until it is removed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("lance_sql", "udfs")
LAYERS = ["udfs", "errors", "format", "spec", "tables", "planning", "engines", "cli", "root"]
MAX_LINES = 450

# --- allow-lists (may only shrink) -------------------------------------------------

# Import cycles (strongly connected components of the import graph) left to remove.
ALLOWED_CYCLES: list[set[str]] = []

# Imports of a higher layer from a lower one (importer, imported).
ALLOWED_UPWARD: set[tuple[str, str]] = set()

# Modules importing ``datafusion`` outside ``lance_sql/engines/datafusion/``.
ALLOWED_DATAFUSION: set[str] = set()

# Modules over MAX_LINES lines, with the size each may not exceed.
ALLOWED_LONG: dict[str, int] = {}

# Module names used in more than one folder (one name per idea): name -> folders.
ALLOWED_SAME_NAMES: dict[str, int] = {
    "dml.py": 2,  # the DataFusion and the Spark engine's SQL DML
    "dml_merge.py": 2,
    "errors.py": 3,
}

# Arrow type lists (TYPE_LIST_MIN or more ``pa.types.is_*`` tests in one boolean
# expression) outside ARROW_TYPES, which decides which types each feature supports.
ARROW_TYPES = "lance_sql/spec/arrow_types.py"
TYPE_LIST_MIN = 4
ALLOWED_TYPE_LISTS: dict[str, int] = {}

# Transform-name comparisons outside the transform tree: file -> most matches allowed.
TRANSFORM_TREE = "lance_sql/spec/transforms/"
ALLOWED_TRANSFORM_NAME_COMPARISONS: dict[str, int] = {}

# A transform or query-term name compared as a string literal: ``x == "bucket"``,
# ``"day" != x``, ``x in ("year", ...)``, ``case "hour":``.
_NAMES = (
    "identity|year|month|day|hour|bucket|multi_bucket|truncate|expression"
    "|hash_mod|murmur3|date_trunc"
)
TRANSFORM_NAME_COMPARISON = re.compile(
    rf"""(==|!=|\bin\b)\s*[({{\[]?\s*["']({_NAMES})["']"""
    rf"""|["']({_NAMES})["']\s*(==|!=|\bin\b)"""
    rf"""|\bcase\s+["']({_NAMES})["']"""
)


# --- the import graph ----------------------------------------------------------------


def _files() -> Iterator[Path]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "_pb" not in path.relative_to(ROOT).parts:
                yield path


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in _files()}


def _resolve(name: str) -> str | None:
    """The project module ``name`` is, or the package it is an attribute of."""
    modules = _modules()
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _raw_imports(path: Path) -> Iterator[str]:
    """Every module name the file imports, anywhere in it, absolute."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(), filename=str(path))
    uses_import_module = "import_module" in path.read_text()
    # imports under ``if TYPE_CHECKING:`` never run: annotations only, not dependencies
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for stmt in node.body
        for inner in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            for alias in node.names:
                yield f"{prefix}.{alias.name}"  # a submodule, or an attribute of prefix
        elif (
            uses_import_module
            and isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value in _modules()
            and node.value not in PACKAGES  # the package's own name, not an import
        ):
            yield node.value


@cache
def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in _modules().items():
        edges = {_resolve(raw) for raw in _raw_imports(path)}
        graph[name] = {e for e in edges if e is not None and e != name}
    return graph


def _external_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        out.append(component)
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return out


def _layer_of(module: str) -> int:
    parts = module.split(".")
    if parts[0] == "udfs":
        return LAYERS.index("udfs")
    if len(parts) == 1 or parts[1] == "spark":
        return LAYERS.index("root")  # the public facade
    return LAYERS.index(parts[1])


# --- the checks ---------------------------------------------------------------------


def test_the_graph_sees_imports_inside_functions_importlib_strings_and_the_root() -> None:
    graph = _graph()
    assert "lance_sql.planning.mutation_plan" in graph["lance_sql"]  # importlib string
    assert "lance_sql.engines.datafusion.context" in graph["lance_sql"]  # lazy table
    cycles = _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    assert cycles == [{"a", "b", "c"}]


def test_no_import_cycles() -> None:
    found = _cycles(_graph())
    new = [sorted(c) for c in found if c not in ALLOWED_CYCLES]
    stale = [sorted(c) for c in ALLOWED_CYCLES if c not in found]
    assert not new, f"import cycles (break them; never add to ALLOWED_CYCLES): {new}"
    assert not stale, f"cycles gone or changed: update ALLOWED_CYCLES to {found}: {stale}"


def test_lance_sql_layers_import_only_downwards() -> None:
    violations = set()
    for module, targets in _graph().items():
        own = _layer_of(module)
        for target in targets:
            if _layer_of(target) > own:
                violations.add((module, target))
    assert not violations - ALLOWED_UPWARD, sorted(violations - ALLOWED_UPWARD)
    assert not ALLOWED_UPWARD - violations, (
        f"remove from ALLOWED_UPWARD: {ALLOWED_UPWARD - violations}"
    )


def test_udfs_never_import_lance_sql() -> None:
    violations = [
        (module, target)
        for module, targets in _graph().items()
        if module.startswith("udfs")
        for target in targets
        if not target.startswith("udfs")
    ]
    assert not violations, violations


def test_udfs_do_not_import_lance_sql_or_datafusion_at_module_level() -> None:
    violations = []
    for path in (ROOT / "udfs").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:  # module level
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0] in {"lance_sql", "datafusion"}:
                    violations.append(f"{path.relative_to(ROOT)}: imports {name}")
    assert not violations, "\n".join(violations)


def test_datafusion_is_imported_only_by_its_engine_adapter() -> None:
    found = {
        name
        for name, path in _modules().items()
        if "datafusion" in _external_imports(path)
        and not name.startswith("lance_sql.engines.datafusion")
    }
    assert not found - ALLOWED_DATAFUSION, sorted(found - ALLOWED_DATAFUSION)
    assert not ALLOWED_DATAFUSION - found, f"remove: {sorted(ALLOWED_DATAFUSION - found)}"


def test_modules_stay_under_the_size_limit() -> None:
    sizes = {str(path.relative_to(ROOT)): len(path.read_text().splitlines()) for path in _files()}
    long = {p: n for p, n in sizes.items() if n > MAX_LINES}
    new = {p: n for p, n in long.items() if p not in ALLOWED_LONG}
    grown = {p: n for p, n in long.items() if p in ALLOWED_LONG and n > ALLOWED_LONG[p]}
    stale = sorted(p for p in ALLOWED_LONG if sizes.get(p, 0) <= MAX_LINES)
    assert not new, f"modules over {MAX_LINES} lines: split them by job: {new}"
    assert not grown, f"allow-listed long modules may only shrink: {grown}"
    assert not stale, f"now short (or gone): remove from ALLOWED_LONG: {stale}"


def test_transform_names_are_compared_only_in_the_transform_tree() -> None:
    counts = {}
    for path in _files():
        rel = str(path.relative_to(ROOT))
        if rel.startswith(TRANSFORM_TREE):
            continue
        n = sum(
            1 for line in path.read_text().splitlines() if TRANSFORM_NAME_COMPARISON.search(line)
        )
        if n:
            counts[rel] = n
    new = {p: n for p, n in counts.items() if n > ALLOWED_TRANSFORM_NAME_COMPARISONS.get(p, 0)}
    stale = sorted(set(ALLOWED_TRANSFORM_NAME_COMPARISONS) - set(counts))
    assert not new, f"transform names compared outside {TRANSFORM_TREE}: {new}"
    assert not stale, f"remove from ALLOWED_TRANSFORM_NAME_COMPARISONS: {stale}"


def test_planning_and_tables_import_and_evaluate_without_datafusion() -> None:
    """The lower layers reach DataFusion only through the SQL engine service."""
    import subprocess
    import sys

    code = """
import sys
import pyarrow as pa
import lance_sql.planning.arrow_expr, lance_sql.spec.literals, lance_sql.planning.scan_filter
import lance_sql.planning.mutation_plan, lance_sql.tables.namespace.sql_eval
assert "datafusion" not in sys.modules
from udfs import sql_engine
class Echo:  # a stand-in engine: planning and tables are testable without DataFusion
    def run_plan(self, plan, rows):
        return pa.table({"n": [rows.num_rows]})
sql_engine.register_sql_engine(Echo())
from lance_sql.tables.namespace.sql_eval import EnginePlan
plan = EnginePlan(None, ("a",), ("n",), "x")
assert plan.run(pa.table({"a": [1]}), what="x").column(0).to_pylist() == [1]
assert "datafusion" not in sys.modules
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]


def test_udfs_alone_name_the_missing_sql_engine() -> None:
    import subprocess
    import sys

    code = """
import sys, udfs, pyarrow as pa
from udfs.sql_engine import NoSqlEngineError
try:
    udfs.evaluate_expression("col0 + 1", [pa.array([1])])
except NoSqlEngineError as exc:
    print("import lance_sql" in str(exc), "datafusion" in sys.modules, "lance_sql" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.split() == ["True", "False", "False"], out.stderr[-2000:]


def test_one_module_name_per_idea() -> None:
    folders: dict[str, int] = {}
    for path in _files():
        if path.name != "__init__.py":
            folders[path.name] = folders.get(path.name, 0) + 1
    shared = {name: n for name, n in folders.items() if n > 1}
    new = {n: c for n, c in shared.items() if c > ALLOWED_SAME_NAMES.get(n, 1)}
    stale = sorted(set(ALLOWED_SAME_NAMES) - set(shared))
    assert not new, f"modules of one name in several folders: name them by what they do: {new}"
    assert not stale, f"remove from ALLOWED_SAME_NAMES: {stale}"


def test_supported_arrow_types_are_decided_in_one_place() -> None:
    counts = {}
    for path in _files():
        rel = str(path.relative_to(ROOT))
        if rel == ARROW_TYPES:
            continue
        n = 0
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.BoolOp):
                tests = [
                    v
                    for v in node.values
                    if isinstance(v, ast.Call) and ast.unparse(v.func).startswith("pa.types.is_")
                ]
                n += len(tests) >= TYPE_LIST_MIN
        if n:
            counts[rel] = n
    new = {p: n for p, n in counts.items() if n > ALLOWED_TYPE_LISTS.get(p, 0)}
    stale = sorted(p for p, n in ALLOWED_TYPE_LISTS.items() if counts.get(p, 0) < n)
    assert not new, f"Arrow type lists outside {ARROW_TYPES} (use its supports()): {new}"
    assert not stale, f"lower or remove in ALLOWED_TYPE_LISTS: {stale}"
