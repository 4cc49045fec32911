"""The three planners price one offering identically: the same catalog row or box, the same hours,
the same dollars — through the one constructor (pricing/offerings.py) and the one cost formula
(pricing/offering.py). Expected values are the published rate × instances × hours, by hand."""

from __future__ import annotations

import pytest

from optimizer import api
from optimizer.inputs.jobs.serve import ServeJob
from optimizer.pricing.catalog import load_offering_rows
from optimizer.pricing.offering import cost_usd, hourly_usd
from optimizer.solve.serve.plan import plan_serving

LAMBDA_8X_H100 = ("lambda", "gpu_8x_h100_sxm5", "on_demand")
#: the default 8× RTX 4090 box (pricing_data/hardware.csv): (8 × 450 W + 500 W) × $0.15/kWh
BOX_POWER_USD_PER_HOUR = 4.1 * 0.15

TRAIN = {
    "model": {"preset": "llama-3-8b"},
    "workload": {"kind": "lora", "tokens": 3e8, "seq_len": 2048, "global_batch": 64},
    # no start-up: a fixed 0.42 h billed per GPU would move this short job to a 1-GPU instance;
    # the 8× H100 row is the one priced here by hand
    "assumptions": {"provisioning_s": 0, "startup_s": 0},
}


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    monkeypatch.setenv("CCOPT_OFFLINE", "1")
    monkeypatch.setenv("CCOPT_CALIBRATION", str(tmp_path / "none.json"))


@pytest.fixture(scope="module")
def lambda_row():
    rows = load_offering_rows(offline=True)[0]
    return next(r for r in rows if (r.provider, r.instance_type, r.pricing_model) == LAMBDA_8X_H100)


def _train_job(**constraints):
    return {"name": "ft", **TRAIN, "constraints": {"deadline_days": 10, **constraints}}


CLOUD = dict(providers=["lambda"], gpu_types=["H100-80GB"], max_instances=1)
OWNED = dict(cloud=False)


def test_single_job_planner_charges_rate_times_hours(lambda_row) -> None:
    plan = api.plan_result(_train_job(**CLOUD), offline=True).plan
    assert (plan.offering.instance, plan.instances) == ("gpu_8x_h100_sxm5", 1)
    assert plan.cost_usd == pytest.approx(lambda_row.usd_per_hour * plan.hours, rel=1e-12)
    assert plan.cost_usd == pytest.approx(cost_usd(plan.offering, 1, plan.hours).total_usd, rel=1e-12)


def test_batch_planner_charges_the_same_as_the_single_job_planner(lambda_row) -> None:
    single = api.plan_result(_train_job(**CLOUD), offline=True).plan
    batch = {
        "name": "b",
        "capacity": {"horizon_days": 14},
        "job": [{"name": "ft", **TRAIN, "constraints": {"deadline_days": 10, **CLOUD}}],
    }
    job = api.batch(batch, offline=True).jobs[0]
    cand = job.row.candidate
    assert (cand.offering.key, cand.instances) == (single.offering.key, single.instances)
    assert cand.hours == pytest.approx(single.hours, rel=1e-12)
    assert cand.cost_usd == pytest.approx(lambda_row.usd_per_hour * single.hours, rel=1e-12)
    assert api.batch_json(api.batch(batch, offline=True))["jobs"][0]["cost_usd"] == pytest.approx(
        round(single.cost_usd, 2)
    )


def test_owned_box_costs_power_per_busy_hour_in_train_and_batch() -> None:
    box = {"hardware": {"owned": [{"gpu": "RTX4090", "num_boxes": 1}]}}
    single = api.plan_result({**_train_job(**OWNED), **box}, offline=True).plan
    assert single.cost_usd == pytest.approx(BOX_POWER_USD_PER_HOUR * single.hours, rel=1e-9)
    batch = {
        "name": "b",
        "capacity": {"horizon_days": 14, "owned": [{"gpu": "RTX4090", "num_boxes": 1}]},
        "job": [{"name": "ft", **TRAIN, "constraints": {"deadline_days": 10, "cloud": False}}],
    }
    cand = api.batch(batch, offline=True).jobs[0].row.candidate
    assert cand.hours == pytest.approx(single.hours, rel=1e-12)
    assert cand.cost_usd == pytest.approx(BOX_POWER_USD_PER_HOUR * single.hours, rel=1e-9)


def _serve_job(**constraints) -> ServeJob:
    return ServeJob.model_validate(
        {
            "name": "s",
            "model": {"preset": "llama-3-8b"},
            "workload": {
                "kind": "serve",
                "precision": "fp16",
                "requests_per_s": 2,
                "prompt_tokens": 512,
                "output_tokens": 128,
            },
            "constraints": constraints,
        }
    )


def test_serving_planner_charges_the_same_hourly_rate(lambda_row) -> None:
    rows = load_offering_rows(offline=True)[0]
    job = _serve_job(providers=["lambda"], gpu_types=["H100-80GB"])
    result = plan_serving(job, [r for r in rows if r.instance_type == "gpu_8x_h100_sxm5"])
    (dep,) = result.deployments
    assert dep.usd_per_hour == pytest.approx(dep.instances * lambda_row.usd_per_hour, rel=1e-12)
    # an hour of this fleet costs what the training cost function charges for one hour
    hours = 730.0
    assert dep.usd_per_hour * hours == pytest.approx(
        cost_usd(dep.option.offering, dep.instances, hours).total_usd, rel=1e-12
    )
    assert hourly_usd(dep.option.offering) == (lambda_row.usd_per_hour, 0.0)


def test_serving_an_owned_box_costs_its_power() -> None:
    job = ServeJob.model_validate(
        {
            **_serve_job(cloud=False).model_dump(exclude_none=True),
            "hardware": {"owned": [{"gpu": "RTX4090", "num_boxes": 1}]},
        }
    )
    (dep,) = plan_serving(job, None).deployments
    assert dep.usd_per_hour == pytest.approx(BOX_POWER_USD_PER_HOUR * dep.instances, rel=1e-9)
