"""`ccopt replan`: the headline job under way ([progress]), its answer and its bad inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from optimizer.cli import app

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "examples/llama7b_10days_progress.toml"
runner = CliRunner()


def _with(tmp_path: Path, old: str, new: str) -> str:
    text = JOB.read_text()
    assert old in text
    path = tmp_path / "job.toml"
    path.write_text(text.replace(old, new))
    return str(path)


def test_the_headline_job_forty_percent_done_keeps_its_h200s() -> None:
    """Keep the four H200 nodes. With the training bands widened for new sources by a
    discrepancy of 0.30 (blackwell/16 P90 x1.37 -> x1.55) one 8x B200 box finished the remaining
    60% inside the 188 h left at P80 but cost more than keeping; with the discrepancy
    recalibrated on aside2-aside13 (0.74: P90 x2.24) its P80 ran past the 188 h, so no switch
    fitted (with the narrower band before them it was switch; before issue 44's tier bands, keep
    because B200's P80 ran past the deadline). Recalibrated on aside2-aside21 (0.57 -> 0.49:
    blackwell/16 P90 x1.919 -> x1.792, so the lognormal P80 exp(0.8416 ln(P90) / 1.2816) goes
    x1.534 -> x1.467 and the box's hours x0.956) the B200 box finished inside the 188 h again,
    and again cost more than keeping. Recalibrated with aside24 and aside26 (0.48 -> 0.55:
    blackwell/16 P90 x1.777 -> x1.886, the P80 factor x1.459 -> x1.517, the box's hours x1.040)
    its P80 runs past the 188 h once more: no switch fits (the row shown is the fastest, a
    cluster far over the budget left), and keep is the answer."""
    result = runner.invoke(app, ["replan", str(JOB), "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    p, keep = data["progress"], data["best_per_kind"]["keep"]
    # 56e9 of 140e9 tokens; 240 h − 51.55 h = 188.45 h and $20,000 − $5,774 = $14,226 left
    assert p["fraction_done"] == pytest.approx(0.4)
    assert p["remaining_deadline_hours"] == pytest.approx(188.45)
    assert p["remaining_budget_usd"] == pytest.approx(14226.0)
    # the example's elapsed hours were 10% behind the model's median when it was written; every
    # refit moves that median (the 2026-12-05 refit after issue 44's aside3 mechanisms and main's
    # new sources: H200 step +2.9%, 6.9% behind), so this checks "behind by about 10%", not the
    # fitted constants
    assert p["slowness"] == pytest.approx(1.1, abs=0.05)
    # keeping: 4 Nebius H200 nodes at $28.00/h each (pricing_data), no restart, no transfer
    assert keep["instances"] == 4 and keep["switch_hours"] == 0 and keep["switch_usd"] == 0
    assert keep["cost_usd"] == pytest.approx(4 * 28.0 * keep["hours"], abs=0.5)
    assert data["choice"]["kind"] == "keep"
    # switching pays a restart (20 min GUESS) and a checkpoint transfer: 7e9 params × 14 bytes
    # (bf16 weights 2 + fp32 master 4 + Adam m 4 + v 4) ≈ 94 GB at the guessed 5 Gbit/s ≈ 2.5 min
    s = data["switch_costs"]
    assert s["restart_minutes"] == 20 and s["transfer_gbps"] == 5
    assert s["checkpoint_gb"] == pytest.approx(6.74e9 * 14 / 1e9, rel=0.01)
    assert s["transfer_hours"] == pytest.approx(s["checkpoint_gb"] * 8 / 5 / 3600, abs=1e-4)
    switch = data["best_per_kind"]["switch"]
    assert switch["switch_hours"] == pytest.approx(20 / 60 + s["transfer_hours"], abs=1e-3)
    # no switch fits the 188 h and $14,226 left: the fastest one shown breaks the budget
    assert switch["fits"] is False
    assert switch["cost_usd"] > p["remaining_budget_usd"]
    assert switch["hours"] <= p["remaining_deadline_hours"]
    text = runner.invoke(app, ["replan", str(JOB)])
    assert text.exit_code == 0 and "answer: keep" in text.stdout


@pytest.mark.parametrize(
    ("old", "new", "phrase"),
    [
        ("tokens_done = 56e9", "tokens_done = 140e9", "progress.tokens_done"),
        ("elapsed_hours = 51.55", "elapsed_hours = -1", "elapsed_hours"),
        ('instance = "gpu-h200-sxm_8gpu-128vcpu-1600gb"', 'instance = "gpu-h200-sxm"', "progress.instance"),
        ("instances = 4", "instances = 3", "progress.instances"),
        ("[progress]", "[progress]\nsteps_done = 3", "steps_done"),
    ],
)
def test_bad_progress_is_exit_2_naming_the_field(tmp_path: Path, old: str, new: str, phrase: str) -> None:
    result = runner.invoke(app, ["replan", _with(tmp_path, old, new)])
    assert result.exit_code == 2, result.stdout
    assert phrase in result.stderr and "Traceback" not in result.stderr


def test_no_progress_table_is_exit_2(tmp_path: Path) -> None:
    text = JOB.read_text().split("[progress]")[0]
    path = tmp_path / "job.toml"
    path.write_text(text)
    result = runner.invoke(app, ["replan", str(path)])
    assert result.exit_code == 2 and "[progress]" in result.stderr


def test_a_passed_deadline_is_infeasible_with_the_fix(tmp_path: Path) -> None:
    result = runner.invoke(app, ["replan", _with(tmp_path, "elapsed_hours = 51.55", "elapsed_hours = 250")])
    assert result.exit_code == 1
    assert "the deadline has passed (10.0 h ago)" in result.stderr


def test_a_measured_step_time_sets_the_speed(tmp_path: Path) -> None:
    """measured_step_time_s (from the job's log): slowness = measured ÷ predicted step."""
    base = json.loads(runner.invoke(app, ["replan", str(JOB), "--json"]).stdout)
    predicted = base["progress"]["predicted_step_time_s"]
    measured = round(1.25 * predicted, 3)
    job = _with(tmp_path, "instances = 4", f"instances = 4\nmeasured_step_time_s = {measured}")
    data = json.loads(runner.invoke(app, ["replan", job, "--json"]).stdout)
    p, keep = data["progress"], data["best_per_kind"]["keep"]
    assert p["slowness_source"] == "measured step time"
    assert p["slowness"] == pytest.approx(measured / predicted, abs=1e-4)
    # keep's hours scale with the speed: 1.25 / 1.10 of the progress-inferred ones (no start-up)
    before = base["best_per_kind"]["keep"]["hours"]
    assert keep["hours"] == pytest.approx(before * p["slowness"] / base["progress"]["slowness"], rel=2e-3)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("tokens_done = 56e9", "tokens_done = 0"),  # nothing done: 0/0 before
        ("elapsed_hours = 51.55", "elapsed_hours = 0.3"),  # still in its 0.42 h start-up: r was 0
    ],
)
def test_nothing_timed_yet_plans_at_the_models_point(tmp_path: Path, old: str, new: str) -> None:
    """With no step timed (no token done, or the elapsed hours inside the start-up) the speed
    cannot be read from progress: the rest is planned at the model's point (r = 1), said so,
    instead of an internal error or a '0 h, $0' answer."""
    result = runner.invoke(app, ["replan", _with(tmp_path, old, new), "--json"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["progress"]["slowness"] == 1.0
    assert data["progress"]["slowness_source"] == "model's point"
    assert data["best_per_kind"]["keep"]["hours"] > 50  # the rest of a 140B-token run, not 0


def test_past_the_deadline_and_over_budget_read_as_such(tmp_path: Path) -> None:
    path = _with(tmp_path, "elapsed_hours = 51.55", "elapsed_hours = 250")
    text = " ".join(runner.invoke(app, ["replan", path]).stdout.split())  # the console wraps lines
    assert "10.0 h past the deadline" in text and "-10.0 h left" not in text
    over = runner.invoke(app, ["replan", _with(tmp_path, "spent_usd = 5774", "spent_usd = 25000")]).stdout
    assert "$5,000 over" in " ".join(over.split())  # the console wraps long lines


def test_a_region_the_offering_is_not_in_names_the_region(tmp_path: Path) -> None:
    """The offering exists, in another region: the error is on progress.region and lists the
    offering's regions (before: 'not among the candidates; did you mean' the same name)."""
    path = _with(tmp_path, "instances = 4", 'instances = 4\nregion = "eu-west-9"')
    result = runner.invoke(app, ["replan", path])
    assert result.exit_code == 2
    assert "progress.region: 'eu-west-9'" in result.stderr and "allowed: unspecified" in result.stderr
