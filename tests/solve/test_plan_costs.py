"""Costs the planner charges for owned, bought, reserved and spot capacity (hand-derived)."""

import pytest

from optimizer.inputs.gpus import get_gpu
from optimizer.inputs.jobs.train import Job
from optimizer.model.setup import PerfAssumptions
from optimizer.pricing.offering import Cost, Offering, cost_usd
from optimizer.solve.train.plan import plan_job

JOB = {
    "name": "ft",
    "model": {"preset": "llama-3-8b"},
    "workload": {"kind": "lora", "tokens": 2e8, "seq_len": 2048, "global_batch": 64},
    "constraints": {"cloud": False, "deadline_days": 30},
}


def _job(**hardware) -> Job:
    return Job.model_validate({**JOB, "hardware": hardware})


def test_owned_box_costs_only_power() -> None:
    result = plan_job(_job(owned=[{"gpu": "RTX4090", "num_boxes": 1}]))
    plan = result.plan
    # default box (pricing_data/hardware.csv): (8 × 450 W + 500 W) × PUE 1.0 × $0.15/kWh
    # = 4.1 kW × 0.15 = $0.615 per busy hour
    assert plan.offering.kind == "owned"
    assert plan.cost_usd == pytest.approx(0.615 * plan.hours, rel=1e-9)
    assert plan.capital_usd == 0


def test_bought_box_upfront_charges_net_purchase_plus_power() -> None:
    result = plan_job(_job(buy=[{"gpu": "RTX4090", "max_gpus": 8, "accounting": "upfront"}]))
    plan = result.plan
    # (8 × $1,650 + $6,000 host) × (1 − 25% resale) = $14,400, plus power while running
    assert plan.capital_usd == pytest.approx(14400.0)
    assert plan.cost_usd == pytest.approx(14400.0 + 0.615 * plan.hours, rel=1e-9)


def test_bought_box_amortised_charges_capital_per_hour() -> None:
    result = plan_job(_job(buy=[{"gpu": "RTX4090", "max_gpus": 8}]))  # default: amortised
    plan = result.plan
    # $14,400 over 36 months × 730 h = $0.5479 per hour, plus $0.615 power
    assert plan.cost_usd == pytest.approx((14400 / (36 * 730) + 0.615) * plan.hours, rel=1e-9)


def _offering(pricing: str, **kw) -> Offering:
    return Offering(
        key=pricing,
        kind="cloud",
        provider="p",
        instance="i",
        region="r",
        pricing=pricing,
        gpu=get_gpu("A100-80GB"),
        gpus_per_instance=8,
        inter_node_gbps=400.0,
        usd_per_hour=20.0,
        **kw,
    )


def test_reserved_bills_the_whole_term_unless_prepaid() -> None:
    reserved = _offering("reserved_1y", commitment_hours=8760.0)
    # 2 instances × $20/h × 8760 h = $350,400 whatever the job's 100 hours
    assert cost_usd(reserved, 2, 100.0) == Cost(350400.0, 0.0)
    prepaid = _offering("reserved_1y", commitment_hours=0.0)
    assert cost_usd(prepaid, 2, 100.0) == Cost(4000.0, 0.0)


def test_spot_overhead_lengthens_the_run() -> None:
    from optimizer.solve.train.prepare import prepare_from_offerings

    job = Job.model_validate({**JOB, "constraints": {"deadline_days": 30}})
    spot = _offering("spot", spot_overhead=0.15)
    od = _offering("on_demand")
    prep = prepare_from_offerings(job, job.model.resolve(), [spot, od], PerfAssumptions())
    by_kind = {}
    for c in prep.table.candidates:
        if c.instances == 1:
            by_kind[c.offering.pricing] = c
    # the fixed rule stretches the computing hours by 15%; start-up and failures come on top
    spot, od = by_kind["spot"].goodput, by_kind["on_demand"].goodput
    assert spot.compute_h == pytest.approx(od.compute_h * 1.15)
    assert spot.startup_h == od.startup_h == pytest.approx((600 + 900) / 3600)
    assert by_kind["spot"].hours > by_kind["on_demand"].hours
