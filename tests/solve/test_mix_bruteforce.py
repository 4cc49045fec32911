"""The mixed-cluster CP-SAT optimum equals an exhaustive enumeration on small instances: every
instance count, split over every pricing row (held reservation, on-demand, spot), and for two
GPU types every count pair × ZeRO stage × per-type samples × micro-batch × checkpointing."""

from __future__ import annotations

import itertools

import pytest

from optimizer.inputs.jobs.train import job_from_dict
from optimizer.model.bands import band_for
from optimizer.model.memory import training_memory
from optimizer.model.setup import CHECKPOINTING, Layout
from optimizer.model.step_time import Cluster, training_step_time
from optimizer.pricing.catalog import load_offering_rows
from optimizer.pricing.offering import cost_usd
from optimizer.solve.train.mix.search import _pairs, _type_mix, held_offerings, type_groups
from optimizer.solve.train.plan import plan_job
from optimizer.solve.train.search_space import MICRO_BATCHES
from optimizer.solve.train.spot import mix_run_hours, run_hours

P4DE, P5 = "p4de.24xlarge", "p5.48xlarge"
HELD = {"provider": "aws", "instance": P4DE, "region": "us-east-1", "count": 1}


def _job(constraints, tokens, global_batch):
    return job_from_dict(
        {
            "name": "mix-bf",
            "model": {"preset": "llama-2-7b"},
            "workload": {"tokens": tokens, "seq_len": 4096, "global_batch": global_batch},
            "constraints": constraints,
        }
    )


def _cat(rows, *instances):
    return [r for r in rows if r.instance_type in instances and r.region == "us-east-1"]


@pytest.mark.parametrize(
    "deadline_h, budget_usd",
    [(None, None), (30.0, None), (20.0, None), (20.0, 700.0), (20.0, 600.0), (15.0, None)],
)
def test_pricing_mix_matches_brute_force(rows, deadline_h, budget_usd):
    """One instance type, three rows: 1 held reserved, on-demand and spot (3 each, availability):
    every count N of the candidate table, every split h + o + s = N within the caps that is a
    mix (held instances, or on-demand and spot together); the wall
    hours of a split with spot from the interruption model; each row priced by cost_usd."""
    cons = {
        "pricing": ["on_demand", "spot"],
        "availability": [{"provider": "aws", "instance": P4DE, "max_instances": 3}],
        "reserved_held": [HELD],
    }
    if deadline_h:
        cons["deadline_hours"] = deadline_h
    if budget_usd:
        cons["budget_usd"] = budget_usd
    res = plan_job(_job(cons, 5e9, 256), _cat(rows, P4DE), alternatives=0)
    prep = res.prepared
    offs = {o.pricing: o for o in prep.offerings}
    held = next(r for r in rows if r.instance_type == P4DE and r.pricing_model == "reserved_1y")
    # the fastest layout per count up to all 7 instances (its step is the same on every pricing
    # row of the type): the single-type planner's table without caps (test_plan_bruteforce
    # checks that table against exhaustive enumeration)
    uncapped = plan_job(_job({}, 5e9, 256), _cat(rows, P4DE), alternatives=0).prepared
    free = [c for c in uncapped.deadline_free().candidates if c.instances <= 7]
    fastest = {}
    for c in free:
        if c.instances not in fastest or c.step.time_s < fastest[c.instances].step.time_s:
            fastest[c.instances] = c
    best = None
    for n, c in fastest.items():
        work_h = c.steps * c.step.time_s * c.band_factor / 3600
        for h, s in itertools.product(range(2), range(4)):
            o = n - h - s
            if not 0 <= o <= 3 or (h == 0 and 0 in (o, s)):
                continue  # one rented row alone is a single-type plan, not a mix
            # the whole run's hours (model/goodput.py, checked by hand in tests/model/test_goodput.py)
            hours = run_hours(
                offs["on_demand"],
                n,
                work_h,
                prep.model,
                c.setup,
                prep.assumptions,
                None if s == 0 else (offs["spot"], s),
            )[0]
            cost = (
                h * held.usd_per_hour * hours
                + cost_usd(offs["on_demand"], o, hours).total_usd
                + cost_usd(offs["spot"], s, hours).total_usd
            )
            if (deadline_h and hours > deadline_h) or (budget_usd and cost > budget_usd):
                continue
            best = cost if best is None else min(best, cost)
    mix = res.mix
    assert mix is not None
    if best is None:
        assert mix.best is None
        return
    if mix.best is None:  # skipped by the lower-bound rule: then no mix undercuts the plan
        assert mix.solver["skipped"] == 1 and res.plan is not None and best >= res.plan.cost_usd
        return
    # the solver prices each row in whole cents rounded up: within a cent per row of the optimum
    assert best - 1e-6 <= mix.best.cost_usd <= best + 0.01 * len(mix.best.rows)


@pytest.mark.parametrize("deadline_h", [None, 6.0, 4.45, 3.0])
def test_type_mix_matches_brute_force(rows, deadline_h):
    """H100 (p5, ≤ 2) + A100 (p4de: 1 held + ≤ 2 on-demand), global batch 64: every count
    pair, ZeRO stage of the generic stack (2 and 3: 0-1 are dominated by 2), samples per GPU
    split s_H × GPUs_H + s_A × GPUs_A = 64, micro-batch of the ladder dividing s, checkpointing;
    the step of each type from the step-time model over all GPUs of the mix and its slowest
    link; hours at the widest band's P80 factor; every pricing split of the A100 count."""
    cons = {
        "availability": [
            {"provider": "aws", "instance": P5, "max_instances": 2},
            {"provider": "aws", "instance": P4DE, "max_instances": 2},
        ],
        "reserved_held": [HELD],
        "zero_stages": [2, 3],
    }
    if deadline_h:
        cons["deadline_hours"] = deadline_h
    job = _job(cons, 2e9, 64)
    res = plan_job(job, _cat(rows, P4DE, P5), alternatives=0)
    prep = res.prepared
    model, a, setup = prep.model, prep.assumptions, job.workload.setup()
    offs = {o.instance: o for o in prep.offerings}
    h100, a100 = offs[P5], offs[P4DE]
    held_rate = next(
        r.usd_per_hour for r in rows if r.instance_type == P4DE and r.pricing_model == "reserved_1y"
    )
    q = job.constraints.confidence
    factor = max(band_for(o.gpu, setup.precision, setup.stack, a).multiplier(q) for o in (h100, a100))
    steps = job.workload.steps_for_batch(64)
    slowest = min(h100.inter_node_gbps, a100.inter_node_gbps)
    head = prep.job.constraints
    usable = {
        o.instance: o.gpu.memory_gib * (1 - head.min_memory_headroom_fraction) - head.min_memory_headroom_gib
        for o in (h100, a100)
    }

    def fastest(off, z, gpus, nodes, samples):
        best = None
        for m, ckpt in itertools.product(MICRO_BATCHES, CHECKPOINTING):
            if samples % m:
                continue
            lay = Layout(dp=gpus, zero_stage=z, checkpointing=ckpt, micro_batch=m, grad_accum=samples // m)
            if training_memory(model, setup, lay, a).device > usable[off.instance]:
                continue
            t = training_step_time(model, setup, lay, Cluster(off.gpu, 8, nodes, slowest), a).time_s
            best = t if best is None else min(best, t)
        return best

    best_cost = None
    for nh, na, z in itertools.product(range(1, 3), range(1, 4), (2, 3)):
        gpus = 8 * (nh + na)
        for sh in range(1, 8):
            rest = 64 - 8 * nh * sh
            if rest <= 0 or rest % (8 * na):
                continue
            th = fastest(h100, z, gpus, nh + na, sh)
            ta = fastest(a100, z, gpus, nh + na, rest // (8 * na))
            if th is None or ta is None:
                continue
            work_h = steps * max(th, ta) * factor / 3600
            # a mix is interrupted at the higher of its generations' failure rates (A100: BLOOM's)
            hours = mix_run_hours(
                work_h, nh + na, gpus, model, setup, a, generations=("hopper", "ampere-dc")
            )[0]
            if deadline_h and hours > deadline_h:
                continue
            for held in range(2):
                od = na - held
                if not 0 <= od <= 2:
                    continue
                cost = (nh * h100.usd_per_hour + od * a100.usd_per_hour + held * held_rate) * hours
                best_cost = cost if best_cost is None else min(best_cost, cost)
    mix = res.mix
    assert mix is not None
    if best_cost is None:
        assert mix.best is None or mix.best.kind != "gpu_types"
        return
    # the pair solved on its own (plan_mix may skip it by the lower-bound rule, or show a
    # cheaper pricing mix of held + on-demand A100s instead); within a cent per row
    found = _type_mix_cost(res)
    assert best_cost - 1e-6 <= found <= best_cost + 0.01 * 3
    if mix.best is not None:
        assert mix.best.cost_usd <= best_cost + 0.01 * 3
    elif mix.solver["skipped"]:
        assert res.plan is not None and best_cost >= res.plan.cost_usd


def _type_mix_cost(res):
    """The solver's best GPU-type mix of the pair (planned alone, as plan_mix plans it)."""
    prep = res.prepared
    data_of = {(o.provider, o.instance, o.region): o.data for o in prep.offerings}
    held = held_offerings(load_offering_rows(offline=True)[0], prep.job.constraints.reserved_held, data_of)
    groups, _ = type_groups(prep.offerings, held)
    pairs, _ = _pairs(groups)
    assert len(pairs) == 1
    plan = _type_mix(prep, pairs[0][0], pairs[0][1], None, [], 16)
    assert plan is not None
    return plan.cost_usd
