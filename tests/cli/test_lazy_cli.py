"""Start-up: `ccopt --version` and `ccopt --help` load no command module (so none of pandas,
OR-Tools, plotly); the help lines the root lists without loading equal the commands' own."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.main import get_command

from optimizer.cli import app
from optimizer.cli.lazy import LAZY_COMMANDS, load_command

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pandas", "ortools", "plotly", "optimizer.pricing", "optimizer.solve", "optimizer.api.train_jobs")


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_import_no_heavy_library(flag: str) -> None:
    code = (
        "import sys\n"
        "from optimizer.cli import main\n"
        f"try:\n    main([{flag!r}])\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("name", sorted(LAZY_COMMANDS))
def test_listed_help_is_the_commands_own_first_paragraph(name: str) -> None:
    command = load_command(name)
    first = inspect.cleandoc(command.help or "").split("\n\n")[0].replace("\n", " ")
    assert LAZY_COMMANDS[name].help == first
    assert command.name == name


def test_every_command_is_reachable_and_unknown_ones_are_a_usage_error() -> None:
    root = get_command(app)
    ctx = typer.Context(root)
    assert root.list_commands(ctx) == list(LAZY_COMMANDS)
    assert all(root.get_command(ctx, name) is not None for name in LAZY_COMMANDS)
    assert root.get_command(ctx, "no-such-command") is None


#: what `ccopt plan` never needs: other commands' contracts and stacks (each costs import time)
NOT_FOR_PLAN = (
    "optimizer.report.contract.batch",
    "optimizer.report.contract.serve",
    "optimizer.report.contract.calibration",
    "optimizer.report.contract.catalogs",
    "optimizer.report.contract.estimate",
    "optimizer.report.contract.measure",
    "optimizer.report.contract.sizing",
    "optimizer.solve.train.sizing",
    "optimizer.solve.batch",
    "optimizer.solve.serve",
    "optimizer.inputs.jobs.serve",
    "plotly",
)


def test_plan_imports_only_the_training_stack(tmp_path) -> None:
    code = (
        "import io, contextlib, sys\n"
        "from optimizer.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main(['plan', 'examples/qlora_70b_single_node.toml', '--offline', '--json'])\n"
        "    except SystemExit as e:\n        assert e.code == 0, e.code\n"
        "print('optimizer.report.contract.train' in sys.modules)\n"  # the plan's own: loaded
        f"print(sorted(m for m in {NOT_FOR_PLAN!r} if m in sys.modules))\n"
    )
    env = {**os.environ, "CCOPT_CACHE_DIR": str(tmp_path), "CCOPT_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, env=env
    )
    assert out.stdout.strip().splitlines()[-2:] == ["True", "[]"]
