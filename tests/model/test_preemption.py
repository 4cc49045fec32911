"""Spot interruptions by hand: Young 1974 / Daly 2006 checkpoint intervals and expected wall
time, the checkpoint size, and what a spot plan and an availability cap do to a plan."""

from __future__ import annotations

import pytest

from optimizer import api
from optimizer.errors import ConfigError
from optimizer.model.preemption import (
    daly_interval_s,
    expected_wall_s,
    preemption,
    young_interval_s,
)
from optimizer.model.setup import PerfAssumptions


def test_young_and_daly_intervals_by_hand():
    # δ = 6 min write, M = 10 h between failures
    assert young_interval_s(360, 36_000) == pytest.approx(5091.17, abs=0.01)  # √(2·360·36000)
    # Daly eq. 37: 5091.17 × (1 + √0.005 / 3 + 0.005 / 9) − 360 = 4853.99
    assert daly_interval_s(360, 36_000) == pytest.approx(4853.99, abs=0.05)
    assert daly_interval_s(80_000, 36_000) == 36_000  # δ ≥ 2M: checkpoint every M


def test_expected_wall_time_by_hand():
    # T_w = M·e^(R/M)·(e^((τ+δ)/M) − 1)·T_s/τ: M 36000, R 600, δ 360, τ 4854, T_s 100 h
    # e^(1/60) = 1.016806, e^(5214/36000) − 1 = 0.155853 → 36000 × 1.016806 × 0.155853
    # × 360000 / 4854 = 423,100 s (117.5 h for 100 h of work)
    assert expected_wall_s(360_000, 4854, 360, 600, 36_000) == pytest.approx(423_100, rel=1e-3)
    # no failures in sight: only the checkpoint writes cost, (τ + δ) / τ
    assert expected_wall_s(360_000, 4854, 360, 600, 1e13) == pytest.approx(
        360_000 * (4854 + 360) / 4854, rel=1e-6
    )


def test_rates_add_over_instances_and_shards_write_in_parallel():
    p = preemption(
        work_s=360_000,
        instances=2,
        interruptions_per_instance_day=0.5,
        ckpt_bytes=100e9,
        write_gb_s_per_instance=1.0,
        restart_s=600,
    )
    assert p.mtbf_s == pytest.approx(86_400)  # 2 × 0.5 per day = one a day
    assert p.checkpoint_write_s == pytest.approx(50.0)  # 100 GB over 2 × 1 GB/s
    assert p.checkpoint_interval_s == pytest.approx(daly_interval_s(50, 86_400))
    assert p.expected_interruptions == pytest.approx(p.expected_wall_s / 86_400)
    assert p.expected_wall_s > 360_000


SPOT_JOB = {
    "name": "s",
    "model": {"preset": "llama-3-8b"},
    "workload": {"kind": "finetune", "tokens": 2e9, "seq_len": 2048, "global_batch": 64},
    "constraints": {
        "deadline_days": 5,
        "pricing": ["spot"],
        "gpu_types": ["A100-40GB"],
        "providers": ["aws"],
    },
}


def _plan(**constraints):
    job = {**SPOT_JOB, "constraints": {**SPOT_JOB["constraints"], **constraints}}
    return api.plan(job, offline=True, alternatives=0)


def test_a_spot_plan_carries_its_interruptions(no_user_state):
    p = _plan()["plan"]
    s = p["spot"]
    # AWS p4d: band 5-10% a month → 0.1 / 30 per instance-day (sourced row)
    assert s["interruptions_per_instance_day"] == pytest.approx(0.00333)
    assert "Spot Instance Advisor" in s["rate_source"]
    # checkpoint: 8,030,261,248 params × (2 B bf16 weights + 12 B fp32 master and moments)
    assert s["checkpoint_gib"] == pytest.approx(8_030_261_248 * 14 / 2**30, abs=0.01)
    # hours = the interrupted run's expected wall time (steps + evaluation, checkpoints, lost
    # work) + start-up (600 s + 900 s, once) + the final checkpoint's conversion, once
    once_h = 1500 / 3600 + p["goodput"]["conversion_hours"]
    assert p["hours"] == pytest.approx(s["expected_hours"] + once_h, abs=0.01)
    assert s["expected_hours"] > s["work_hours"]
    # (usd_per_hour is shown rounded to the cent: ±0.2% of $2.47/h)
    assert p["cost_usd"] == pytest.approx(p["hours"] * p["usd_per_hour"], rel=3e-3)
    assert any(w.startswith("spot: expects") for w in p["warnings"])


def test_the_job_overrides_the_rate_and_can_keep_the_old_rule(no_user_state):
    base = _plan()["plan"]
    busy = _plan(spot_interruptions_per_instance_day=2.0)["plan"]
    assert busy["spot"]["interruptions_per_instance_day"] == 2.0
    assert busy["spot"]["rate_source"].startswith("job")
    # more interruptions never shorten the run
    assert busy["hours"] > base["hours"] - 1e-9 and busy["cost_usd"] >= base["cost_usd"] - 0.01
    old = _plan(spot_interruption_overhead=0.15)["plan"]
    assert old["spot"] is None
    # the old rule: the steps' hours × 1.15; the spot estimate's work is steps + evaluation
    steps_h = base["spot"]["work_hours"] / (1 + PerfAssumptions().evaluation_share)
    assert old["goodput"]["compute_hours"] == pytest.approx(steps_h * 1.15, rel=2e-3)


def test_availability_caps_the_instances_of_an_offering(no_user_state):
    # aws has one A100-40GB instance type (p4d.24xlarge); 3 instances at least
    free = _plan(min_instances=3, pricing=["on_demand"])
    assert free["status"] == "optimal" and free["plan"]["instances"] >= 3
    capped = _plan(
        min_instances=3,
        pricing=["on_demand"],
        availability=[{"provider": "aws", "instance": "p4d.24xlarge", "max_instances": 2}],
    )
    assert capped["status"] == "infeasible"
    ok = _plan(pricing=["on_demand"], availability=[{"provider": "aws", "max_instances": 1}])
    assert ok["plan"]["instances"] == 1


def test_availability_names_match_case_insensitively(no_user_state):
    capped = _plan(
        min_instances=3,
        pricing=["on_demand"],
        availability=[{"provider": "AWS", "instance": "P4D.24XLARGE", "max_instances": 2}],
    )
    assert capped["status"] == "infeasible"  # the cap applies: before, mixed case was ignored


@pytest.mark.parametrize(
    ("entry", "field", "close"),
    [
        ({"provider": "awz", "max_instances": 1}, "constraints.availability[0].provider", "'aws'"),
        (
            {"provider": "aws", "instance": "p4d.24xlage", "max_instances": 1},
            "constraints.availability[0].instance",
            "'p4d.24xlarge'",
        ),
    ],
)
def test_a_limit_that_matches_no_offering_is_bad_input(no_user_state, entry, field, close):
    with pytest.raises(ConfigError) as err:
        _plan(pricing=["on_demand"], availability=[entry])
    text = str(err.value)
    assert text.startswith(f"{field}: ") and f"did you mean {close}" in text and "allowed: " in text
