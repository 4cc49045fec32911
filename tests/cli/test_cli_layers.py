"""The CLI goes through optimizer.api: what the import-linter contract "cli goes through the
api" enforces, read off the source, with no exception left in the contract."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "optimizer" / "cli"
#: optimizer.files (writing a named output file) and optimizer.vocabulary (allowed values and
#: their words) are foundation like errors and units, as the contract's comment in pyproject.toml says
ALLOWED = (
    "optimizer.api",
    "optimizer.errors",
    "optimizer.units",
    "optimizer.files",
    "optimizer.vocabulary",
    "optimizer.cli",
)


def _optimizer_imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names]
    return [n for n in names if n == "optimizer" or n.startswith("optimizer.")]


def test_cli_modules_import_only_the_api_errors_units_and_each_other() -> None:
    below = [
        f"{path.name}: {name}"
        for path in sorted(CLI.glob("*.py"))
        for name in _optimizer_imports(path)
        if name != "optimizer" and not name.startswith(ALLOWED)
    ]
    assert not below, below


def _contract(name: str) -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (found,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["name"] == name]
    return found


def test_cli_contract_forbids_every_layer_below_the_api() -> None:
    c = _contract("cli goes through the api")
    assert c["type"] == "forbidden" and c["source_modules"] == ["optimizer.cli"]
    assert set(c["forbidden_modules"]) == {
        "optimizer.calibrate",
        "optimizer.configuration",
        "optimizer.inputs",
        "optimizer.model",
        "optimizer.pricing",
        "optimizer.solve",
        "optimizer.report",
    }


def test_cli_contract_has_no_exceptions() -> None:
    assert not _contract("cli goes through the api").get("ignore_imports")


def test_report_contract_forbids_pricing_and_inputs() -> None:
    c = _contract("report formats only: no pricing, no inputs")
    assert c["type"] == "forbidden" and c["source_modules"] == ["optimizer.report"]
    assert set(c["forbidden_modules"]) == {"optimizer.pricing", "optimizer.inputs"}
