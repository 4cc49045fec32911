"""No code from data and no patches of code we don't own, anywhere in optimizer/.

Read from the source (ast): no import of pickle, marshal, dill or shelve; no exec/eval/compile;
no assignment (or setattr/delattr) to an attribute of an imported module that is not ours
(stdlib or third party); no write to sys.modules; no import of a private module of a library
(`typer._click`, `pydantic.plugin._loader`, ...).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "optimizer"
SOURCES = sorted(p for p in PACKAGE.rglob("*.py"))
CODE_FROM_DATA = {"pickle", "marshal", "dill", "shelve", "cloudpickle"}
RUNS_TEXT = {"exec", "eval", "compile"}


def _foreign_names(tree: ast.Module) -> dict[str, str]:
    """Local name -> module path, for every import of a module that is not ours."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not alias.name.startswith("optimizer"):
                    names[alias.asname or alias.name.split(".")[0]] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if not node.module.startswith("optimizer"):
                for alias in node.names:
                    names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _base_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _problems(source: str, where: str) -> list[str]:
    tree = ast.parse(source)
    foreign = _foreign_names(tree)
    found = []
    for node in ast.walk(tree):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for module in modules:
            parts = module.split(".")
            if parts[0] in CODE_FROM_DATA:
                found.append(f"{where}:{node.lineno}: imports {module}")
            if parts[0] != "optimizer" and any(p.startswith("_") and not p.startswith("__") for p in parts):
                found.append(f"{where}:{node.lineno}: imports the private {module}")
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Delete) else [node.target]
        for target in targets:
            base = _base_name(target)
            if isinstance(target, ast.Attribute | ast.Subscript) and base in foreign:
                found.append(f"{where}:{node.lineno}: assigns {ast.unparse(target)} ({foreign[base]})")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in RUNS_TEXT:
                found.append(f"{where}:{node.lineno}: calls {node.func.id}")
            if node.func.id in {"setattr", "delattr"} and node.args and _base_name(node.args[0]) in foreign:
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_code_from_data_and_no_patches(path: Path) -> None:
    assert _problems(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent))) == []


def test_the_checker_finds_what_it_looks_for() -> None:
    """Each kind of problem, planted, is found (so an empty answer above means something)."""
    source = (
        "import marshal\nimport sys\nimport dataclasses\nfrom typer import _click\n"
        "dataclasses.exec = print\nsys.modules['x'] = None\nsetattr(sys, 'stdout', None)\n"
        "eval('1')\n"
    )
    kinds = " ".join(_problems(source, "planted.py"))
    for needle in (
        "imports marshal",
        "private typer._click",
        "dataclasses.exec",
        "sys.modules",
        "setattr",
        "eval",
    ):
        assert needle in kinds, needle
