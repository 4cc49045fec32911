"""`ccopt compare`: the same answers as `ccopt plan` for the same job, its own solver block, an
explanation for every GPU type without a plan, and exit 1 when nothing is feasible."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


@pytest.fixture(autouse=True)
def _at_root(isolated, monkeypatch):
    monkeypatch.chdir(ROOT)


def _run(*args: str) -> tuple[int, dict]:
    out = runner.invoke(app, list(args))
    return out.exit_code, json.loads(out.stdout)


def test_infeasible_compare_exits_1_with_the_planners_explanation() -> None:
    code, data = _run("compare", "examples/infeasible_70b_week.toml", "--json")
    plan_code, plan = _run("plan", "examples/infeasible_70b_week.toml", "--json")
    assert (code, plan_code) == (1, 1)
    assert data["status"] == "infeasible" and data["solver"]["status"] == "infeasible"
    assert data["explanation"]["text"] == plan["explanation"]["text"]
    assert data["explanation"]["binding_constraint"] == "deadline"
    human = runner.invoke(app, ["compare", "examples/infeasible_70b_week.toml"])
    assert human.exit_code == 1 and "infeasible" in human.stdout


@pytest.mark.parametrize("example", ["sd15_train_rtx3080", "llama7b_10days"])
def test_the_best_compared_plan_is_the_plan(example: str) -> None:
    """The cheapest row of `compare` is `plan`'s answer, with the same figures (a per-sample
    job counts images, not 2,048-token sequences, in both)."""
    _, data = _run("compare", f"examples/{example}.toml", "--json")
    _, plan = _run("plan", f"examples/{example}.toml", "--json")
    rows = [r for r in (data["cloud"], data["owned_or_bought"]) if r]
    best = min(rows, key=lambda r: r["cost_usd"])
    for key in (
        "cost_usd",
        "gpu",
        "instances",
        "step_time_s",
        "tokens",
        "sample_unit",
        "samples_per_s",
        "layout",
    ):
        assert best.get(key) == plan["plan"].get(key), key
    assert data["solver"]["rows"] >= 1 and data["solver"]["proven_optimal"]
    assert data["job_detail"] == plan["job"] and data["job"] == plan["job"]["name"]


def test_every_gpu_type_without_a_plan_says_why(tmp_path) -> None:
    """A $40,000 budget on the 10-day 7B job: GPU types whose options all cost more (at the
    job's P80) have no plan and say so with the cheapest option's cost (above the budget);
    a type too slow for the deadline says that instead, with its fastest plan's days; one whose
    fastest plan is over the budget and cheapest past the deadline names both."""
    text = (ROOT / "examples/llama7b_10days.toml").read_text()
    job = tmp_path / "budget.toml"
    job.write_text(text.replace("deadline_days = 10", "deadline_days = 10\nbudget_usd = 40000"))
    code, data = _run("compare", str(job), "--json")
    assert code == 0
    missing = {gpu for gpu, plan in data["per_gpu"].items() if plan is None}
    assert missing and missing == set(data["per_gpu_explanation"])
    by_budget = 0
    for why in data["per_gpu_explanation"].values():
        if why.startswith("deadline: the fastest plan needs "):
            assert float(re.search(r"needs ([\d.]+) days", why).group(1)) > 10
            continue
        if why.startswith("deadline and budget together: no plan meets both"):
            # its fastest plan is over the budget and its cheapest past the deadline
            fastest, cheapest_days = re.search(
                r"for \$([\d,]+); cheapest \$[\d,]+ in ([\d.]+) days", why
            ).groups()
            assert float(fastest.replace(",", "")) > 40_000 and float(cheapest_days) > 10
            by_budget += 1
            continue
        assert why.startswith("budget: the cheapest plan costs $")
        assert float(re.search(r"costs \$([\d,]+)", why).group(1).replace(",", "")) > 40_000
        by_budget += 1
    assert by_budget >= 3
    for plan in data["per_gpu"].values():
        assert plan is None or plan["cost_usd"] <= 40_000
