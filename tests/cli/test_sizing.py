"""`ccopt sizing`: contending GPU types from overlapping cost bands, the reading's length by hand,
and the band narrowing once the reading is fed back with `ccopt calibrate`."""

from __future__ import annotations

import json
import math
from pathlib import Path

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
