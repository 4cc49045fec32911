"""Mixed clusters (issue 32): held reservations topped up with on-demand; an H100 + A100 mix
that meets a deadline neither capped type meets alone; the JSON block, text and validation."""

from __future__ import annotations

import pytest

from optimizer.errors import ConfigError, Status
from optimizer.inputs.jobs.train import job_from_dict
from optimizer.report.train import plan_json
from optimizer.solve.train.mix.check import mix_violations
from optimizer.solve.train.plan import plan_job

P4DE = "p4de.24xlarge"
P5 = "p5.48xlarge"


def _rows(rows, *instances):
    return [r for r in rows if r.instance_type in instances and r.region == "us-east-1"]


def _rate(rows, instance, pricing):
    """The catalog's USD per instance-hour (an input of the plan, read from the rows)."""
    return next(r.usd_per_hour for r in rows if r.instance_type == instance and r.pricing_model == pricing)


def _job(constraints, tokens=20e9, global_batch=512):
    return job_from_dict(
        {
            "name": "mix",
            "model": {"preset": "llama-2-7b"},
            "workload": {"tokens": tokens, "seq_len": 4096, "global_batch": global_batch},
            "constraints": constraints,
        }
    )


def _quota_job(deadline_hours, p4de_cap=4, **constraints):
    """The quota case: 100e9 tokens, at most 2 p5 and `p4de_cap` p4de obtainable in aws."""
    return _job(
        {
            "deadline_hours": deadline_hours,
            "availability": [
                {"provider": "aws", "instance": P5, "max_instances": 2},
                {"provider": "aws", "instance": P4DE, "max_instances": p4de_cap},
            ],
            **constraints,
        },
        tokens=100e9,
    )


def test_two_held_reserved_plus_six_on_demand_beats_eight_on_demand(rows):
    """8 p4de forced (min = max = 8 instances); 2 reserved_1y already held and billed per hour
    used: the mix runs the same layout for the same hours H, so it saves exactly
    2 × (on-demand − reserved) × H = 2 × (27.44705 − 17.291642) × H."""
    cat = _rows(rows, P4DE)
    job = _job(
        {
            "min_instances": 8,
            "max_instances": 8,
            "reserved_held": [{"provider": "aws", "instance": P4DE, "region": "us-east-1", "count": 2}],
        }
    )
    res = plan_job(job, cat, alternatives=0)
    assert res.plan is not None and res.plan.instances == 8 and res.plan.offering.pricing == "on_demand"
    hours = res.plan.hours
    od, rsv = _rate(cat, P4DE, "on_demand"), _rate(cat, P4DE, "reserved_1y")
    assert (od, rsv) == (27.44705, 17.291642)
    assert res.plan.cost_usd == pytest.approx(8 * od * hours, rel=1e-9)
    mix = res.mix
    assert mix is not None and mix.plan is not None
    counts = {(r.offering.pricing, r.held): r.count for r in mix.plan.rows}
    assert counts == {("reserved_1y", True): 2, ("on_demand", False): 6}
    assert mix.plan.hours == pytest.approx(hours, rel=1e-12)
    assert mix.plan.cost_usd == pytest.approx((6 * od + 2 * rsv) * hours, rel=1e-9)
    assert mix.saving_usd == pytest.approx(2 * (od - rsv) * hours, rel=1e-9)
    assert mix_violations(res.prepared, mix.plan) == []
    out = plan_json(res)
    assert out["plan"]["instances"] == 8  # the single-type plan is unchanged
    assert out["mix"]["status"] == "cheaper"
    assert out["mix"]["saving_usd"] == pytest.approx(round(2 * (od - rsv) * hours, 2), abs=0.011)
    assert [(r["pricing"], r["held"], r["instances"]) for r in out["mix"]["plan"]["rows"]] == [
        ("reserved_1y", True, 2),
        ("on_demand", False, 6),
    ]


def test_held_reservation_sunk_cost_override(rows):
    """usd_per_hour = 0: held instances cost this job nothing; the mix costs 6 × od × H."""
    cat = _rows(rows, P4DE)
    held = {"provider": "aws", "instance": P4DE, "count": 2, "usd_per_hour": 0}
    job = _job({"min_instances": 8, "max_instances": 8, "reserved_held": [held]})
    res = plan_job(job, cat, alternatives=0)
    assert res.mix is not None and res.mix.plan is not None
    assert res.mix.plan.cost_usd == pytest.approx(6 * 27.44705 * res.plan.hours, rel=1e-9)


def test_quota_capped_h100_a100_mix_meets_a_deadline_neither_type_meets(rows):
    """16 H100 (2 × p5, availability) and 32 A100 (4 × p4de): each alone needs more than the
    180 h deadline; one data-parallel job over both finishes in time."""
    cat = _rows(rows, P4DE, P5)
    job = _quota_job(180)
    res = plan_job(job, cat, alternatives=0)
    assert res.status == Status.INFEASIBLE
    # each type alone, at every count its cap allows, is slower than the deadline
    free = res.prepared.deadline_free().candidates
    for instance, cap in ((P5, 2), (P4DE, 4)):
        alone = [c for c in free if c.offering.instance == instance and c.instances <= cap]
        assert alone and min(c.hours for c in alone) > 180
    mix = res.mix
    assert mix is not None and mix.plan is not None and mix.plan.kind == "gpu_types"
    assert mix.plan.hours <= 180
    by = {r.offering.instance: r for r in mix.plan.rows}
    assert set(by) == {P5, P4DE} and by[P5].count <= 2 and by[P4DE].count <= 4
    # Σ count_t × GPUs × micro_t × accum_t = the global batch
    assert sum(r.gpus * r.layout.micro_batch * r.layout.grad_accum for r in mix.plan.rows) == 512
    assert mix.plan.step_time_s == max(r.step.time_s for r in mix.plan.rows)
    assert mix_violations(res.prepared, mix.plan) == []
    out = plan_json(res)
    assert out["status"] == "infeasible" and out["plan"] is None  # the contract's plan is unchanged
    assert out["mix"]["status"] == "only_plan" and out["mix"]["plan"]["kind"] == "gpu_types"


def test_mix_not_worth_it_says_why(rows):
    """Without a deadline one p5 is the plan: an H100 + A100 mix cannot undercut it (each type's
    least instance-hours at its cheapest rate already cost as much), and a deadline that one p5
    misses but two meet leaves the mix searched and dearer, with its balance loss named; `mix =
    false` leaves the block out."""
    cat = _rows(rows, P4DE, P5)
    cons = {"availability": [{"provider": "aws", "instance": P5, "max_instances": 2}]}
    res = plan_job(_job(cons), cat, alternatives=0)
    # the lower-bound rule counts computing + start-up only (a plan's checkpoint and failure
    # hours make it a little dearer than its bound), so the mix may be searched: then it is dearer
    assert res.mix is not None and res.mix.plan is None
    assert res.mix.best is None or res.mix.best.cost_usd >= res.plan.cost_usd
    assert any(k in res.mix.reasons[-1] for k in ("cannot undercut the plan", "not less than the plan's"))
    assert plan_json(res)["mix"]["status"] == ("none" if res.mix.best is None else "not_cheaper")
    tight = plan_job(_job({**cons, "deadline_hours": 65}), cat, alternatives=0)
    assert tight.plan is not None and tight.plan.instances == 2
    assert tight.mix is not None and tight.mix.plan is None and tight.mix.best is not None
    assert tight.mix.best.cost_usd >= tight.plan.cost_usd
    assert "not less than the plan's" in tight.mix.reasons[-1]
    assert plan_json(tight)["mix"]["status"] == "not_cheaper"
    off = plan_job(_job({**cons, "mix": False}), cat, alternatives=0)
    assert off.mix is None and "mix" not in plan_json(off)


def test_capped_type_without_a_partner_on_its_fabric_is_explained(rows):
    """A100 capped on aws; H100 only on lambda: no data-parallel job spans two providers."""
    cat = [
        r
        for r in rows
        if (r.instance_type == P4DE and r.region == "us-east-1")
        or (r.provider == "lambda" and r.gpu_id == "H100-80GB")
    ]
    cons = {"availability": [{"provider": "aws", "instance": P4DE, "max_instances": 1}]}
    res = plan_job(_job(cons), cat, alternatives=0)
    assert res.mix is not None
    assert any("no other GPU type shares its fabric" in r for r in res.mix.reasons)


def test_held_reservation_bad_region_is_one_clear_line(rows):
    held = {"provider": "aws", "instance": P4DE, "region": "eu-west-9", "count": 1}
    with pytest.raises(ConfigError, match=r"constraints.reserved_held\[0\].region: .*allowed: us-east-1"):
        plan_job(_job({"reserved_held": [held]}), _rows(rows, P4DE), alternatives=0)
    with pytest.raises(Exception, match="count"):
        _job({"reserved_held": [{"provider": "aws", "instance": P4DE, "count": 0}]})


def test_owned_site_mix_says_why_it_misses_the_deadline():
    """Two owned boxes (8× RTX 4090, 4× RTX 3090) are one site: their mix is searched; an 8B
    LoRA fits a 24 GB card only with full recompute under pure data parallelism, so the
    fastest mix misses a 30 h deadline that the 4090 box (a pipeline, 32 h) misses too."""
    job = job_from_dict(
        {
            "name": "own",
            "model": {"preset": "llama-3-8b"},
            "workload": {"kind": "lora", "tokens": 2e9, "seq_len": 2048, "global_batch": 64},
            "constraints": {"cloud": False, "deadline_hours": 30},
            "hardware": {"owned": [{"gpu": "RTX4090", "num_boxes": 1}, {"gpu": "RTX3090", "num_boxes": 1}]},
        }
    )
    res = plan_job(job, None, alternatives=0)
    assert res.status == Status.INFEASIBLE
    assert res.mix is not None and res.mix.best is None
    (why,) = [r for r in res.mix.reasons if "on the owned site" in r]
    assert "the fastest mix (1 + 1 instances, pure data parallelism) needs" in why
    hours = float(why.split("needs ")[1].split(" h")[0].replace(",", ""))
    assert hours > 30
    assert plan_json(res)["mix"]["status"] == "none"


def test_a_held_reservation_in_a_batch_job_is_bad_input():
    from optimizer.inputs.jobs.batch import batch_from_dict

    doc = {
        "capacity": {"horizon_days": 10},
        "job": [
            {
                "name": "a",
                "model": {"preset": "llama-2-7b"},
                "workload": {"tokens": 1e9, "global_batch": 64},
                "constraints": {"reserved_held": [{"provider": "aws", "instance": P4DE, "count": 1}]},
            }
        ],
    }
    with pytest.raises(ConfigError, match=r"reserved_held .*\[\[capacity.reservation\]\]"):
        batch_from_dict(doc)


def test_a_cap_above_the_search_limit_is_searched_to_the_cap(rows):
    """p4de capped at 20 (above the 16-instance search limit for uncapped types) and a 78 h
    deadline: 16 p4de + any p5 is too slow, so a mix that meets it needs more than 16 p4de —
    the search must go to the user's cap, not stop at the limit."""
    cat = _rows(rows, P4DE, P5)
    job = _quota_job(78, p4de_cap=20)
    res = plan_job(job, cat, alternatives=0)
    mix = res.mix
    assert mix is not None and mix.plan is not None and mix.plan.hours <= 78
    by = {r.offering.instance: r.count for r in mix.plan.rows}
    assert 16 < by[P4DE] <= 20 and by.get(P5, 0) <= 2
    assert mix_violations(res.prepared, mix.plan) == []


def test_with_no_single_type_plan_every_mix_is_searched_and_min_instances_holds(rows):
    """min_instances 6 with at most 2 p5 and 4 p4de: no single type can have 6 instances, so
    there is no plan to undercut; the mix must still be searched and must use ≥ 6 instances."""
    cat = _rows(rows, P4DE, P5)
    job = _quota_job(180, min_instances=6)
    res = plan_job(job, cat, alternatives=0)
    assert res.status == Status.INFEASIBLE
    mix = res.mix
    assert mix is not None and mix.plan is not None
    assert mix.plan.instances == 6 and mix.plan.hours <= 180
    assert mix_violations(res.prepared, mix.plan) == []
    assert not any("$inf" in r for r in mix.reasons)
