"""The package's layers only import downwards (DEVELOPERS.md: arrows only point down).

format -> tables -> planning -> engines -> cli; ``errors`` is below everything and
``udfs`` is a separate package that never imports ``lance_sql`` or DataFusion at
import time.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ["errors", "format", "tables", "planning", "engines", "cli"]


def _layer_of(module: str) -> int | None:
    parts = module.split(".")
    if parts[0] != "lance_sql" or len(parts) < 2:
        return None
    name = parts[1]
    return LAYERS.index(name) if name in LAYERS else None


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return found


def test_lance_sql_layers_import_only_downwards() -> None:
    violations = []
    for path in (ROOT / "lance_sql").rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        own = _layer_of(".".join(rel.parts))
        if own is None:
            continue
        for module in _imports(path):
            target = _layer_of(module)
            if target is not None and target > own:
                violations.append(f"{rel}: imports {module}")
    assert not violations, "\n".join(violations)


def test_udfs_do_not_import_lance_sql_or_datafusion_at_module_level() -> None:
    violations = []
    for path in (ROOT / "udfs").rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:  # module level only; lazy imports inside functions are fine
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0] in {"lance_sql", "datafusion"}:
                    violations.append(f"{path.relative_to(ROOT)}: imports {name}")
    assert not violations, "\n".join(violations)
