"""`ccopt plan` shows a mixed cluster (issue 32): text lines and the `mix` object of --json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()


def test_held_reserved_mix_in_text_and_json():
    """2 held p4de + 6 on-demand: the saving is 2 × (27.44705 − 17.291642) $/h × the plan's hours."""
    path = str(EXAMPLES / "mix_held_reserved.toml")
    out = runner.invoke(app, ["plan", path, "--json", "--offline", "--alternatives", "0"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    hours = data["plan"]["hours"]
    mix = data["mix"]
    assert mix["status"] == "cheaper"
    # the plan's hours are rounded in JSON
    assert mix["saving_usd"] == pytest.approx(2 * (27.44705 - 17.291642) * hours, rel=1e-3)
    assert [(r["instance"], r["pricing"], r["held"], r["instances"]) for r in mix["plan"]["rows"]] == [
        ("p4de.24xlarge", "reserved_1y", True, 2),
        ("p4de.24xlarge", "on_demand", False, 6),
    ]
    text = runner.invoke(app, ["plan", path, "--offline", "--alternatives", "0"])
    assert text.exit_code == 0
    assert "a mixed cluster is cheaper by $" in text.stdout
    # the line under the headline points at the mix: its cost (6 on-demand + 2 held at their
    # hourly rates × the same hours) and the saving
    lines = [line.strip() for line in text.stdout.splitlines()]
    at = next(i for i, line in enumerate(lines) if line.startswith("cheaper as a mixed cluster"))
    assert "reserved_1y" in lines[at - 1] or "on_demand" in lines[at - 1]  # right under the plan line
    second = lines[at]
    mix_cost = (6 * 27.44705 + 2 * 17.291642) * hours
    saving = 2 * (27.44705 - 17.291642) * hours
    shown = re.fullmatch(
        r"cheaper as a mixed cluster: \$([\d,]+) \(\$([\d,]+) less; the mix is below\)", second
    )
    assert shown, second
    # the JSON's hours are rounded: within $2 of the hand figures
    assert float(shown[1].replace(",", "")) == pytest.approx(mix_cost, abs=2)
    assert float(shown[2].replace(",", "")) == pytest.approx(saving, abs=2)
    assert "2× p4de.24xlarge (16× A100-80GB), reserved_1y, held" in text.stdout


def test_only_a_gpu_type_mix_meets_the_deadline():
    """No single type meets 180 h (exit 1 as before); the text names the H100 + A100 mix."""
    path = str(EXAMPLES / "mix_h100_a100_quota.toml")
    out = runner.invoke(app, ["plan", path, "--offline", "--alternatives", "0"])
    assert out.exit_code == 1
    assert "only a mixed cluster meets the job" in out.output
    # (the A100 count follows the fitted bands: 3 instances since issue 44's A100 centre ×0.95)
    assert "2× p5.48xlarge (16× H100-80GB)" in out.output and re.search(
        r"\d× p4de\.24xlarge \(\d+× A100-80GB\)", out.output
    )
    js = json.loads(runner.invoke(app, ["plan", path, "--json", "--offline"]).stdout)
    assert js["status"] == "infeasible" and js["mix"]["status"] == "only_plan"
    assert js["mix"]["plan"]["hours"] <= 180
