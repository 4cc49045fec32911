"""Issue 45's loop end to end: the sizing block of the headline's median-plan box (`ccopt
sizing`; its cost and expected saving by hand from the block's own figures), a SYNTHETIC
torchtitan log of that sizing run
(tools/loop_example.py writes it: made up, not measured) at a step just under or over the
block's threshold, `ccopt calibrate --from-log` with the calibrate line `ccopt sizing` prints
for that run, into the test's own calibration store (tests/conftest.py `isolated`), and the
re-plan: 3% under the threshold the sized box is the P80 plan with a narrower band; 3% over it
the plan stays as it was; and the choice flips within ±0.5% of the threshold."""

from __future__ import annotations

import json
import math
import shlex
import tomllib
from pathlib import Path
from statistics import NormalDist

import pytest
from typer.testing import CliRunner

from optimizer.cli import app
from tools.loop_example import sizing_tokens_per_s_per_gpu, torchtitan_log

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "llama7b_10days.toml")
DEADLINE_DAYS = tomllib.loads(Path(EXAMPLE).read_text(encoding="utf-8"))["constraints"]["deadline_days"]
runner = CliRunner()


def _json(args: list[str]) -> dict:
    out = runner.invoke(app, args)
    assert out.exit_code == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def before(tmp_path_factory) -> dict:
    """The plan, its sizing run and `ccopt sizing` for it, uncalibrated (read once, in a store of
    its own: each test then calibrates its own `isolated` store)."""
    tmp = tmp_path_factory.mktemp("loop-before")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CCOPT_CALIBRATION", str(tmp / "calibration.json"))
        mp.setenv("CCOPT_CACHE_DIR", str(tmp / "cache"))
        mp.setenv("CCOPT_OFFLINE", "1")
        mp.setenv("CCOPT_SKYPILOT_URL", "http://127.0.0.1:9/catalogs")  # as tests/conftest.py
        mp.setenv("CCOPT_PRICES_OVERLAY", "")
        plan = _json(["plan", EXAMPLE, "--json"])
        sizing = _json(["sizing", EXAMPLE, "--json"])
    return {"plan": plan, "sizing": sizing}


def _the_run(before: dict) -> dict:
    """`ccopt sizing`'s run on the median plan's offering (the 8x B200 box)."""
    med = before["plan"]["median_plan"]
    return next(
        r
        for r in before["sizing"]["runs"]
        if (r["provider"], r["instance"], r["instances"])
        == (med["provider"], med["instance"], med["instances"])
    )


def _block(before: dict) -> dict:
    """The sizing block of the median plan's box. Since issue 44's tier bands the plan's own
    `sizing_run` reads an MI355X (no measured AMD bf16 run: the widest band, the largest expected
    saving); the loop is followed on the B200 box, whose block `ccopt sizing` lists as `settles`."""
    return _the_run(before)["settles"]


def test_the_sizing_line_cost_and_saving_by_hand(before):
    plan, block, med = before["plan"]["plan"], _block(before), before["plan"]["median_plan"]
    rule = before["sizing"]["rule"]
    # the headline: the P50 plan is another GPU type than the P80 plan; its sizing block reads it
    # on one of its own boxes (the median plan's offering: its $/h). The plan's own sizing run is
    # the one of largest expected saving: the MI355X box, ahead of this one (issue 44)
    assert med["gpu"] != plan["gpu"] == "H200-141GB" and block["gpu"] == med["gpu"]
    chosen = before["plan"]["sizing_run"]
    assert chosen["expected_saving_usd"] >= block["expected_saving_usd"]
    assert (block["provider"], block["instance"], block["pricing"]) == (
        med["provider"],
        med["instance"],
        med["pricing"],
    )
    assert (block["instances"], block["network_matters"]) == (1, False)
    # steps: n = ⌈(z · CV / E)²⌉ with z the two-sided quantile of the level, at least min_steps
    # and min_measure_s seconds (the sample size of a mean; sizing_rule.py)
    z = NormalDist().inv_cdf(0.5 + block["reading_level"] / 2)
    n = math.ceil((z * block["step_time_cv"] / block["reading_precision"]) ** 2 - 1e-9)
    step = block["step_time_s"]
    assert block["measured_steps"] == max(rule["min_steps"], n, math.ceil(rule["min_measure_s"] / step))
    minutes = (block["warmup_steps"] + block["measured_steps"]) * step / 60 + rule["startup_minutes"]
    assert block["minutes"] == pytest.approx(minutes, abs=0.05)
    # cost: instances × the offering's $/h × minutes / 60
    assert block["cost_usd"] == pytest.approx(
        block["instances"] * med["usd_per_hour"] * minutes / 60, abs=0.01
    )
    # saving: the plan's cost − the target's cost if it holds; expected = P × saving − cost
    assert block["saving_usd"] == pytest.approx(
        plan["cost_usd"] - block["target"]["cost_if_holds_usd"], abs=0.01
    )
    expected = block["p_holds"] * block["saving_usd"] - block["cost_usd"]
    assert block["expected_saving_usd"] == pytest.approx(expected, abs=block["saving_usd"] * 5e-5 + 0.01)
    # P(holds): the split log-normal through the type's P10/P50/P90 step multipliers at m*
    lo, hi = med["step_time_s_p10"] / med["step_time_s_p50"], med["step_time_s_p90"] / med["step_time_s_p50"]
    m = block["threshold_multiplier"]
    half = math.log(hi) if m >= 1 else math.log(1 / lo)
    p = NormalDist().cdf(NormalDist().inv_cdf(0.9) * math.log(m) / half)
    assert block["p_holds"] == pytest.approx(p, abs=0.002)  # P10/P50/P90 rounded to ms in the JSON


def _calibrate_from_the_sizing_run(before: dict, tmp_path: Path, speed: float) -> dict:
    """The sizing run's synthetic log at `speed` × threshold × predicted step, fed back with the
    calibrate line `ccopt sizing` prints for it (its MEASURED figure replaced by the log)."""
    block = _block(before)
    args = shlex.split(_the_run(before)["command"])[1:]
    tokens_per_step = int(args[args.index("--global-batch") + 1]) * int(args[args.index("--seq-len") + 1])
    tps = sizing_tokens_per_s_per_gpu(block, tokens_per_step, speed)
    steps = block["warmup_steps"] + block["measured_steps"]
    log = torchtitan_log(tmp_path / "sizing.log", steps, block["warmup_steps"], tps)
    at = args.index("--tokens-per-s")
    args[at : at + 2] = ["--from-log", str(log), "--warmup-steps", str(block["warmup_steps"]), "--json"]
    out = _json(args)
    assert (out["from_log"]["format"], out["from_log"]["steps_used"]) == (
        "torchtitan",
        block["measured_steps"],
    )
    # the median of the measured steps is the steady rate: tokens per step / (rate × GPUs)
    assert out["measured_step_s"] == pytest.approx(tokens_per_step / (tps * block["gpus"]), rel=1e-6)
    assert out["measured_step_s"] / block["step_time_s"] == pytest.approx(
        speed * block["threshold_multiplier"], rel=1e-3
    )
    return out


#: how far from the threshold the synthetic runs are: 3% either side (the re-plan may take another
#: ZeRO stage on the same box than the one measured: tests/cli/test_calibrate_from_log.py)
MARGIN = 0.03


def test_a_run_under_the_threshold_makes_the_sized_box_the_p80_plan(before, tmp_path):
    block, med, old = _block(before), before["plan"]["median_plan"], before["plan"]["plan"]
    _calibrate_from_the_sizing_run(before, tmp_path, 1 - MARGIN)
    p = _json(["plan", EXAMPLE, "--json"])["plan"]
    target = block["target"]
    assert (p["gpu"], p["provider"], p["instance"], p["instances"]) == (
        target["gpu"],
        target["provider"],
        target["instance"],
        target["instances"],
    )
    assert p["confidence"] == block["confidence"] == 0.8
    assert p["days"] <= DEADLINE_DAYS and p["cost_usd"] < old["cost_usd"]
    assert p["cost_usd"] == pytest.approx(p["hours"] * med["usd_per_hour"], abs=1)
    # the band narrowed: P90 / P50 of the type's step was the prior's; now the calibrated one's
    prior, now = (x["step_time_s_p90"] / x["step_time_s_p50"] for x in (med, p))
    assert now < prior
    assert p["calibrated"] is True
    # and the saving is of the size the sizing line promised: between the target's saving at m_h
    # (a faster run than this one: m_h < m*) and none
    assert 0 < old["cost_usd"] - p["cost_usd"] <= block["saving_usd"]


def test_a_run_over_the_threshold_keeps_the_plan(before, tmp_path):
    old = before["plan"]["plan"]
    _calibrate_from_the_sizing_run(before, tmp_path, 1 + MARGIN)
    after = _json(["plan", EXAMPLE, "--json"])
    p = after["plan"]
    assert (p["gpu"], p["provider"], p["instance"], p["cost_usd"]) == (
        old["gpu"],
        old["provider"],
        old["instance"],
        old["cost_usd"],
    )
    # the sized box's P50 plan now misses the deadline at P80 by less than before (measured)
    assert after["median_plan"]["calibrated"] is True


def test_the_threshold_is_where_the_choice_flips(before, tmp_path, monkeypatch):
    """Half a percent either side of the line's threshold: the re-plan takes the sized box just
    under it and keeps the plan just over it (the line's m* and the re-plan read the same
    calibrated band; the re-plan may take another ZeRO stage than the measured one)."""
    target, old = _block(before)["target"], before["plan"]["plan"]
    chosen = []
    for speed in (0.995, 1.005):
        run_dir = tmp_path / str(speed)
        run_dir.mkdir()
        monkeypatch.setenv("CCOPT_CALIBRATION", str(run_dir / "calibration.json"))
        _calibrate_from_the_sizing_run(before, run_dir, speed)
        p = _json(["plan", EXAMPLE, "--json"])["plan"]
        chosen.append((p["gpu"], p["instance"]))
    assert chosen == [(target["gpu"], target["instance"]), (old["gpu"], old["instance"])]
