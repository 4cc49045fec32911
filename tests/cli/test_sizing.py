"""`ccopt sizing`: contending GPU types from overlapping cost bands, the reading's length by hand,
and the band narrowing once the reading is fed back with `ccopt calibrate`."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path
from statistics import NormalDist

import pytest
from typer.testing import CliRunner

from optimizer.cli import app

ROOT = Path(__file__).resolve().parents[2]
JOB = str(ROOT / "examples/resnet50_imagenet_3days.toml")
runner = CliRunner()


def _json(args: list[str]) -> dict:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_contending_types_are_those_whose_bands_overlap_the_cheapest() -> None:
    """From `compare --json` alone: a type contends iff its plan's cost at P10 is at most the
    cheapest plan's cost at P90 (each plan's cost_usd_p10 / _p90: the same bands the plan uses)."""
    sizing = _json(["sizing", JOB, "--json"])
    per_gpu = {g: p for g, p in _json(["compare", JOB, "--json"])["per_gpu"].items() if p}

    def band(p: dict) -> tuple[float, float]:
        return p["cost_usd_p10"], p["cost_usd_p90"]

    best = min(per_gpu, key=lambda g: per_gpu[g]["cost_usd"])
    assert sizing["best_gpu"] == best
    expected = {g for g, p in per_gpu.items() if band(p)[0] <= band(per_gpu[best])[1] * 1.001}
    # and the types whose cheaper plan could hold once measured (issue 45: `settles`)
    expected |= {r["gpu"] for r in sizing["runs"] if r["settles"]}
    assert {r["gpu"] for r in sizing["runs"]} == expected
    assert len(expected) > 1 and sizing["status"] == "contending"
    assert {s["gpu"] for s in sizing["settled"]} == set(per_gpu) - expected


def test_reading_length_and_cost_by_hand() -> None:
    sizing = _json(
        [
            "sizing",
            JOB,
            "--json",
            "--warmup-steps",
            "5",
            "--min-steps",
            "30",
            "--min-measure-s",
            "60",
            "--startup-minutes",
            "10",
        ]
    )
    for r in sizing["runs"]:
        step = r["step_time_s"]
        assert r["warmup_steps"] == 5
        # step_time_s is rounded to 4 decimals in the JSON: allow that rounding in 60 / step
        assert r["measured_steps"] == pytest.approx(max(30, math.ceil(60 / step)), rel=0.005, abs=1)
        assert r["minutes"] == pytest.approx((5 + r["measured_steps"]) * step / 60 + 10, abs=0.06)
        assert r["pricing"] in ("on_demand", "owned", "buy")
        assert r["command"].startswith(f"ccopt calibrate --model resnet50 --gpu {r['gpu']} ")


def test_band_narrows_after_calibrating() -> None:
    """Run the command a sizing run prints, with a measured figure, and plan again: the plan on
    that GPU type now has the measured GPU's narrow band instead of the cross-generation one."""
    sizing = _json(["sizing", JOB, "--json"])
    run = next(r for r in sizing["runs"] if r["gpu"] == "RTX4090")
    before = _json(["compare", JOB, "--json"])["per_gpu"]["RTX4090"]
    measured = 0.8 * run["layout"]["micro_batch"] * run["gpus"] / run["step_time_s"]
    args = run["command"].split()[1:]
    args[args.index("--samples-per-s") + 1] = f"{measured:.3f}"
    drop = args.index("--peak-memory-gib")
    del args[drop : drop + 2]  # a reading without a memory figure
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    after = _json(["compare", JOB, "--json"])["per_gpu"]["RTX4090"]

    def width(p: dict) -> float:
        return (p["step_time_s_p90"] - p["step_time_s_p10"]) / p["step_time_s"]

    assert width(after) < width(before)
    assert after["step_time_s"] > before["step_time_s"]  # measured 20% slower than predicted


def test_a_language_model_sizing_command_runs_as_printed(tmp_path) -> None:
    """The calibrate line of an LM sizing run uses today's flags (no old-name warning), names
    the catalog instance (its network), and stores what it was given: estimating the same
    configuration afterwards gives back the measured tokens/s."""
    job = str(ROOT / "examples/llama7b_10days.toml")
    sizing = _json(["sizing", job, "--json"])
    assert sizing["runs"]
    run = sizing["runs"][0]
    assert "--gpus-per-node" not in run["command"] and "--method" not in run["command"]
    # the rule's step counts are whole numbers (the defaults: 10 warm-up, at least 20 measured)
    assert sizing["rule"]["warmup_steps"] == 10 and type(sizing["rule"]["warmup_steps"]) is int
    assert type(sizing["rule"]["min_steps"]) is int and sizing["rule"]["step_time_cv"] == 0.05
    args = run["command"].split()[1:]
    seq = int(args[args.index("--seq-len") + 1])
    measured = (
        0.7
        * run["layout"]["micro_batch"]
        * run["layout"]["grad_accum"]
        * run["layout"]["dp"]
        * seq
        / run["step_time_s"]
    )  # 30% slower than predicted
    args[args.index("--tokens-per-s") + 1] = f"{measured:.1f}"
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.stderr
    assert "warning:" not in result.stderr
    cal = json.loads(result.stdout)
    assert cal["provider"] == run["provider"] and cal["instance_type"] == run["instance"]
    assert cal["measured_tokens_per_s"] == pytest.approx(measured, rel=1e-3)


def test_the_headline_plan_names_the_reading_that_settles_it() -> None:
    """The headline job: at P80 the plan is H200, at P50 8× B200 (lambda); since the 2026-12-05
    refit Blackwell has measured bf16 runs (NeMo on 8x B200, Megatron-Bridge on 4x GB200: 4 runs,
    2 sources, fitted.toml "blackwell/16", under 4 sources its tier's spread). `ccopt sizing`
    reads that B200 box; its length, cost, chance and saving checked by hand from the plan's own
    inputs. The plan's own sizing run is the one of largest expected saving among sizing's runs
    (an MI355X box since the bands are widened for new sources; the B200 box before)."""
    job = str(ROOT / "examples/llama7b_10days.toml")
    data = _json(["plan", job, "--json"])
    median = data["median_plan"]
    sizing = _json(["sizing", job, "--json"])
    s = next(r["settles"] for r in sizing["runs"] if r["instance"] == median["instance"])
    best = max(r["settles"]["expected_saving_usd"] for r in sizing["runs"] if r["settles"])
    assert data["sizing_run"]["expected_saving_usd"] == pytest.approx(best, abs=0.01)
    assert data["sizing_run"]["expected_saving_usd"] >= s["expected_saving_usd"]
    t = s["target"]
    # the contender is the P50 plan, read on its own single instance (the band is compute)
    assert (t["gpu"], t["provider"], t["instance"], t["instances"]) == (
        median["gpu"],
        median["provider"],
        median["instance"],
        median["instances"],
    )
    assert (s["instance"], s["instances"], s["network_matters"]) == (median["instance"], 1, False)
    # steps: 10 warm-up + ⌈(1.96 × 0.05 / 0.02)²⌉ = ⌈24.01⌉ = 25 (more than 20 steps and 120 s)
    assert (s["warmup_steps"], s["measured_steps"]) == (10, 25)
    step = median["step_time_s"]
    minutes = 15 + 35 * step / 60  # start-up + 35 steps of 21.48 s = 27.5 min
    assert s["minutes"] == pytest.approx(minutes, abs=0.06)
    assert s["cost_usd"] == pytest.approx(median["usd_per_hour"] * minutes / 60, abs=0.02)  # ≈ $24.56
    # Blackwell bf16's own group ("blackwell/16" in the packaged fitted.toml, read here apart
    # from the planner)
    bands = tomllib.loads((ROOT / "optimizer/model/data/fitted.toml").read_text())["bands"]
    pooled = bands["blackwell/16"]
    p10, p90 = median["step_time_s_p10"] / step, median["step_time_s_p90"] / step
    assert (p10, p90) == (pytest.approx(pooled["p10"], abs=1e-3), pytest.approx(pooled["p90"], abs=1e-3))
    m_star = s["threshold_multiplier"]
    z90 = NormalDist().inv_cdf(0.9)
    half = math.log(1 / p10) if m_star < 1 else math.log(p90)
    p = NormalDist().cdf(z90 * math.log(m_star) / half)
    assert s["p_holds"] == pytest.approx(p, abs=2e-4)
    # the deadline binds: at m* the calibrated P80 run takes exactly 240 h; wall hours grow with m
    # beyond the fixed start-up, so at m_h the run's hours − start-up = (240 − start-up) · m_h/m*
    start_h = median["goodput"]["startup_hours"]
    m_h = math.exp(NormalDist().inv_cdf(p / 2) / z90 * math.log(1 / p10))
    assert s["multiplier_if_holds"] == pytest.approx(m_h, abs=2e-4)
    hours_if_holds = start_h + (240 - start_h) * m_h / m_star
    assert t["cost_if_holds_usd"] == pytest.approx(median["usd_per_hour"] * hours_if_holds, rel=2e-3)
    assert s["saving_usd"] == pytest.approx(data["plan"]["cost_usd"] - t["cost_if_holds_usd"], abs=0.02)
    assert s["expected_saving_usd"] == pytest.approx(p * s["saving_usd"] - s["cost_usd"], abs=0.5)
    assert s["expected_saving_usd"] > 1000  # worth far more than the $25 reading
    text = runner.invoke(app, ["plan", job]).stdout
    run = data["sizing_run"]  # the text names the plan's own sizing run
    line = f"sizing run: 1× {run['instance']} ({run['provider']}, 8× {run['gpu']}), 10+25 steps"
    assert line in " ".join(text.split())
