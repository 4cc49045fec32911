"""Architecture rules that a test can check: layer contracts, no hidden imports, small modules."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "optimizer"
# 400 lines before `ruff format` (which lays long calls one argument per line: +33% lines
# over the tree); the same budget in formatted lines
MAX_MODULE_LINES = 520


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_import_linter_contracts_hold() -> None:
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(exe).exists():
        pytest.fail("lint-imports not installed: pip install -e '.[test]'")
    out = subprocess.run(
        [exe, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]


def _function_imports(path: Path) -> list[tuple[int, str]]:
    """(line, text) of imports inside functions that carry no 'lazy' comment (same or previous line)."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Import | ast.ImportFrom):
                here = lines[inner.lineno - 1]
                above = lines[inner.lineno - 2] if inner.lineno > 1 else ""
                if "lazy" not in here and "lazy" not in above:
                    found.append((inner.lineno, here.strip()))
    return found


def test_no_imports_inside_functions_except_commented_lazy_ones() -> None:
    offenders = [
        f"{p.relative_to(ROOT)}:{line}: {text}" for p in _modules() for line, text in _function_imports(p)
    ]
    assert not offenders, "\n".join(offenders)


def test_no_module_over_the_size_limit() -> None:
    big = [
        f"{p.relative_to(ROOT)}: {n} lines"
        for p in _modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert not big, "\n".join(big)


def test_the_batch_planner_loads_no_files() -> None:
    """Reading batch files and price tables belongs to optimizer/api (batch_jobs.py): no
    module of solve/batch imports a loader."""
    loaders = {"load_batch", "batch_from_dict", "coerce_document", "load_catalog_rows", "load_offering_rows"}
    for path in sorted((PACKAGE / "solve" / "batch").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert not names & loaders, (path.name, sorted(names & loaders))
