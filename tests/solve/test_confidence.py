"""Plans made at a confidence (issue 25): the deadline holds at the quantile, the cheaper median
plan is rejected for the reason its band gives, and no example runs a GPU above its ceiling."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from optimizer import api
from optimizer.inputs.gpus import get_gpu
from optimizer.model.bands import band_for
from optimizer.model.ceilings import mfu_ceiling
from optimizer.model.fitted import load_fitted
from optimizer.model.setup import PerfAssumptions

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "llama7b_10days.toml"  # deadline_days = 10
DEADLINE_DAYS = 10.0


@pytest.fixture(scope="module")
def at_p90() -> dict:
    return api.plan(EXAMPLE, offline=True, alternatives=0, confidence=0.9)


def test_a_plan_at_p90_finishes_by_the_deadline_at_its_p90(at_p90) -> None:
    p = at_p90["plan"]
    assert p["confidence"] == 0.9
    # planned at its P90 ... (days_p90 scales the whole run by the band, the plan's days its
    # steps only: they differ by the unscaled hours x (P90 - 1), the 0.42 h start-up x 1.2 here)
    assert p["days"] == pytest.approx(p["days_p90"], abs=0.03)
    assert p["days_p90"] <= DEADLINE_DAYS  # ... which meets the deadline
    # the P50 and P90 days are the point days × the band's quantiles: P90/P50 as the band says
    basis = p["interval_basis"]
    assert basis["cases"] > 0 and basis["sources"] > 0


def test_the_cheaper_median_plan_is_rejected_because_its_p90_misses_the_deadline(at_p90) -> None:
    median, plan = at_p90["median_plan"], at_p90["plan"]
    assert median["cost_usd"] < plan["cost_usd"]  # cheaper at the median ...
    assert median["days"] <= DEADLINE_DAYS  # ... and in time at the median
    # its GPU generation has measured bf16 training runs since the 2026-12-05 refit (NeMo on 8x
    # B200 and Megatron-Bridge on 4x GB200: 4 runs from 2 sources, fitted.toml "blackwell/16");
    # under 4 sources the group keeps its tier's spread, so its P90 is its P50 days × that band's
    # P90/P50 — past the deadline
    assert median["interval_basis"] == {"cases": 4, "sources": 2, "group": "blackwell/16"}
    p10, p50, p90, _, _ = load_fitted().bands["blackwell/16"]
    assert median["days_p90"] == pytest.approx(median["days_p50"] * p90 / p50, rel=0.005)
    assert median["days_p50"] * p90 / p50 > DEADLINE_DAYS
    assert "past the 10.0-day deadline" in median["rejected_because"]


def test_the_text_plan_line_states_p50_p90_and_the_median_plan() -> None:
    from typer.testing import CliRunner

    from optimizer.cli import app

    out = CliRunner().invoke(app, ["plan", str(EXAMPLE), "--offline", "--confidence", "0.9"]).stdout
    assert " at P90" in out and "P50 " in out and "P90 " in out
    assert "a P50 plan would take" in out and "not taken: at P90 it needs" in out


def test_confidence_out_of_range_is_bad_input() -> None:
    from typer.testing import CliRunner

    from optimizer.cli import app

    result = CliRunner().invoke(app, ["plan", str(EXAMPLE), "--offline", "--confidence", "0.3"])
    assert result.exit_code == 2
    assert "--confidence" in result.stderr and "0.5" in result.stderr and "0.99" in result.stderr


def test_thinly_measured_cards_have_wider_bands_than_the_h100() -> None:
    a = PerfAssumptions()
    h100 = band_for(get_gpu("h100"), "bf16", "generic", a)
    assert h100.cases >= 50
    for gpu in ("rtx3090", "l40s", "rtx4090"):
        band = band_for(get_gpu(gpu), "bf16", "generic", a)
        assert band.p90 / band.p10 > h100.p90 / h100.p10, gpu
        assert band.cases < 10, gpu  # and the output says how few runs it rests on (0: pooled)


@pytest.mark.parametrize(
    "example",
    [
        "llama7b_10days",
        "lora_70b_budget",
        "qlora_70b_single_node",
        "finetune_8b_4090_vs_cloud",
        "sd15_train_rtx3080",
        "gpt3_175b_a100_90days",
        "bert_base_finetune_8gb",
    ],
)
def test_no_example_plan_runs_a_gpu_above_its_mfu_ceiling(example: str) -> None:
    path = ROOT / "examples" / f"{example}.toml"
    data = api.plan(path, offline=True, alternatives=3)
    precision = tomllib.loads(path.read_text())["workload"].get("precision", "bf16")
    a = PerfAssumptions()
    for p in [data["plan"], *data["alternatives"]]:
        if p is None or p["calibrated"] or p["mfu"] <= 0:
            continue
        assert p["mfu"] <= mfu_ceiling(get_gpu(p["gpu"]), precision, a).mfu + 1e-4, (example, p["gpu"])


def test_a_calibrated_gpu_type_plans_with_the_calibrated_band(isolated, tmp_path) -> None:
    """The loop: a measured run on H100 (ccopt calibrate) → the plan on H100 says it is
    calibrated and uses the band of calibrated cross-validated predictions (fitted.toml)."""
    from typer.testing import CliRunner

    from optimizer.cli import app
    from optimizer.model.fitted import load_fitted

    job = tmp_path / "h100.toml"
    text = EXAMPLE.read_text().replace("[constraints]\n", '[constraints]\ngpu_types = ["H100-80GB"]\n', 1)
    job.write_text(text)
    runner = CliRunner()
    before = api.plan(job, alternatives=0)["plan"]
    assert before["interval_basis"]["group"].startswith("hopper/16")
    flags = ["-m", "llama-2-7b", "-g", "h100", "--num-gpus", "8", "--micro-batch", "2"]
    flags += ["--global-batch", "1024", "--seq-len", "4096", "--zero-stage", "2"]
    done = runner.invoke(app, ["calibrate", *flags, "--tokens-per-s", "80000"])
    assert done.exit_code == 0, done.stderr
    after = api.plan(job, alternatives=0)["plan"]
    assert after["calibrated"] and after["gpu"] == "H100-80GB"
    p10, p50, p90, cases, sources = load_fitted().bands["calibrated"]
    assert after["interval_basis"] == {"cases": cases, "sources": sources, "group": "calibrated"}
    assert cases >= 100  # the calibrated band rests on many held-out calibrated predictions
    text_out = runner.invoke(app, ["plan", str(job)]).stdout
    assert "calibrated from your measured runs on H100-80GB" in text_out
