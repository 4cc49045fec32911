"""A plan that relies on a flagged catalog row says so first; every plan shows the tables' age."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from optimizer import api
from optimizer.cli import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llama7b_10days.toml"


def _spot_job(tmp_path: Path) -> Path:
    """The 7B example with spot allowed (the only change)."""
    text = EXAMPLE.read_text()
    assert 'pricing = ["on_demand"]' in text
    path = tmp_path / "spot.toml"
    path.write_text(text.replace('pricing = ["on_demand"]', 'pricing = ["on_demand", "spot"]'))
    return path


def test_spot_plan_on_the_p4d_row_says_it_relies_on_a_flagged_price(tmp_path, no_user_state):
    # the bundled p4d.24xlarge spot row is ~11% of its on-demand price, under the 12% rule
    data = api.plan(_spot_job(tmp_path), offline=True, alternatives=0)
    plan = data["plan"]
    assert plan["instance"] == "p4d.24xlarge" and plan["pricing"] == "spot"
    assert [f["rule"] for f in plan["price_flags"]] == ["spot-extreme"]
    assert any("relies on a flagged price" in n and "p4d.24xlarge" in n for n in data["notes"])
    text = CliRunner().invoke(app, ["plan", str(_spot_job(tmp_path)), "--offline"]).stdout
    first = text.splitlines()[:3]
    assert any("relies on a flagged price" in line for line in first), first


def test_on_demand_plan_has_no_price_note_but_shows_the_catalog_age(no_user_state, tmp_path):
    # the headline on AWS (its own answer, Nebius, rests on a stale-flagged price: issue 42)
    job = tmp_path / "aws.toml"
    job.write_text(EXAMPLE.read_text().replace("[constraints]\n", '[constraints]\nproviders = ["aws"]\n', 1))
    data = api.plan(job, offline=True, alternatives=0)
    assert not [n for n in data["notes"] if n.startswith("relies on a flagged price")]
    assert data["plan"]["price_flags"] == []
    assert data["catalog"]["source"] == "bundled" and data["catalog"]["age_days"] >= 0
    text = CliRunner().invoke(app, ["plan", str(job), "--offline"]).stdout
    assert f"prices as of {data['catalog']['as_of']}" in text.splitlines()[0]
