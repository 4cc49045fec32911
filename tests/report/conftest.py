"""Reports of one plan, one batch and one serving example, made once per session through the
real CLI, with the JSON results computed independently through optimizer.api; one headless
Chromium (Debian's package, driven by playwright) shared by the browser tests."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import sync_playwright
from typer.testing import CliRunner

from optimizer import api
from optimizer.cli import app
from tests.report.report_support import EXAMPLES, Report

#: report kind -> (example, the charts its page must show)
CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "plan": (
        "llama7b_10days.toml",
        ("chart-memory", "chart-step", "chart-goodput", "chart-pareto", "chart-deadline"),
    ),
    "rent-vs-buy": (
        "finetune_8b_4090_vs_cloud.toml",
        ("chart-memory", "chart-step", "chart-goodput", "chart-pareto", "chart-deadline", "chart-rent-buy"),
    ),
    "batch": ("batch_12_finetunes.toml", ("chart-gantt", "chart-usage")),
    "serve": ("serve_mistral7b_chatbot.toml", ("chart-mix", "chart-memory", "chart-load", "chart-latency")),
}


def _independent_result(kind: str, example: Path) -> dict[str, Any]:
    if kind == "batch":
        return api.batch_json(api.batch(example, offline=True))
    if kind == "serve":
        return api.serve(example, offline=True)
    return api.plan(example, offline=True)


@pytest.fixture(scope="session")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Report]]:
    out = tmp_path_factory.mktemp("reports")
    runner = CliRunner()
    made = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CCOPT_CALIBRATION", str(out / "calibration.json"))
        mp.setenv("CCOPT_CACHE_DIR", str(out / "cache"))
        for kind, (name, charts) in CASES.items():
            html = out / f"{kind}.html"
            done = runner.invoke(app, ["report", str(EXAMPLES / name), "-o", str(html), "--offline"])
            assert done.exit_code == 0, done.output
            made[kind] = Report(kind, html, _independent_result(kind, EXAMPLES / name), charts)
        yield made


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium from Debian's `chromium` package (playwright downloads no browser)."""
    executable = shutil.which("chromium")
    if executable is None:
        why = "chromium not found: `apt-get install -y chromium` to run the browser tests"
        if os.environ.get("CCOPT_REQUIRE_BROWSER"):  # CI (.ci/run): a missing browser fails
            pytest.fail(f"{why} (CCOPT_REQUIRE_BROWSER is set)")
        pytest.skip(why)
    with sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=executable, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        yield chromium
        chromium.close()
