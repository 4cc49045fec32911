"""The CP-SAT single-job optimum equals an exhaustive enumeration (no pruning, no solver),
and the optimum behaves monotonically in deadline, budget and the offering set."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

from hypothesis import event, given, settings
from hypothesis import strategies as st

from optimizer.inputs.gpus import get_gpu
from optimizer.inputs.jobs.train import Job
from optimizer.model.bands import band_for
from optimizer.model.memory import training_memory
from optimizer.model.setup import CHECKPOINTING, Layout, PerfAssumptions
from optimizer.model.step_time import Cluster, training_step_time
from optimizer.pricing.offering import Offering
from optimizer.solve.train.enumerate import BatchRule
from optimizer.solve.train.plan import plan_job
from optimizer.solve.train.prepare import prepare_from_offerings
from optimizer.solve.train.validate import plan_violations

#: the step-only model (no failures, start-up or size rule): these tests cross-check the search,
#: whose hours the whole-run overheads (model/goodput.py, tests/model/test_goodput.py) only lengthen
A = PerfAssumptions(
    failures_per_gpu_day=0.0,
    provisioning_s=0.0,
    startup_s=0.0,
    fewer_gpus_within_share=0.0,
    evaluation_share=0.0,
    checkpoint_conversion_gb_s=0.0,
)
TINY = {"layers": 4, "hidden": 512, "heads": 8, "kv_heads": 4, "ffn": 1536, "vocab": 8000, "name": "tiny"}
GPUS = ["L4", "A10", "RTX4090", "A100-40GB", "T4"]
#: stacks the jobs are planned with: unrestricted, no tp/pp (two ZeRO sets), no pp, no ZeRO-2
STACKS = ["generic", "llm-foundry", "torchtune", "megatron-core", "litgpt"]
_STACK_ROWS = tomllib.loads(
    (Path(__file__).resolve().parents[2] / "optimizer/model/data/stacks.toml").read_text()
)


def _can(stack: str, key: str):
    """What stacks.toml says the stack can run (read here, not through the planner's loader)."""
    row = _STACK_ROWS[stack] if key in _STACK_ROWS[stack] else _STACK_ROWS["generic"]
    return row[key]["value"]


def _cents(usd: float) -> int:
    """Whole cents, rounded up after dropping float noise below 1e-6 cent (1752.0000000000002
    is 175200 cents, as the plan's stated convention says: money is whole cents, rounded up)."""
    return math.ceil(round(usd * 100, 6))


def _seconds(hours: float) -> int:
    return math.ceil(round(hours * 3600, 6))


def brute_force(job: Job, offerings: list[Offering], vp: int = 1) -> tuple[float, float] | None:
    """Cheapest (cost, hours) over every offering, instance count, layout and micro-batch; with
    `vp` > 1 over the interleaved pipelines of vp virtual stages per GPU (pp > 1 and pp × vp
    dividing the layers: Narayanan et al. 2021 §2.2.2)."""
    model = job.model.resolve()
    w, c = job.workload, job.constraints
    setup = w.setup()
    tps = (1, 2, 4, 8) if _can(setup.stack, "tensor_parallel") else (1,)
    pps = (1, 2, 4, 8, 16) if _can(setup.stack, "pipeline_parallel") else (1,)
    best: tuple[float, float] | None = None
    for off in offerings:
        if not off.gpu.supports(setup.precision):
            continue
        # the plan is made at the job's confidence: the step time × its band's quantile
        # (the band arithmetic itself is checked by hand in tests/model/test_bands.py)
        factor = band_for(off.gpu, setup.precision, setup.stack, A).multiplier(c.confidence)
        high = min(off.max_instances or 10**6, c.max_instances or 10**6)
        for n in range(c.min_instances, high + 1):
            gpus = n * off.gpus_per_instance
            if c.max_gpus and gpus > c.max_gpus:
                continue
            for tp in tps:
                if off.gpus_per_instance % tp or model.heads % tp or model.n_kv_heads % tp:
                    continue
                for pp in pps:
                    if pp > model.layers or gpus % (tp * pp):
                        continue
                    if vp > 1 and (pp == 1 or model.layers % (pp * vp)):
                        continue
                    dp = gpus // (tp * pp)
                    for mb in (1, 2, 4, 8, 16, 32):
                        if w.batch_sequences % (dp * mb):
                            continue
                        ga = w.batch_sequences // (dp * mb)
                        # one replica shards nothing: it runs as ZeRO-0 on any stack
                        stack_zero = _can(setup.stack, "zero_stages")
                        zeros = [0] if dp == 1 else [z for z in c.zero_stages if z in stack_zero]
                        for zero in zeros:
                            for ckpt in CHECKPOINTING:
                                lay = Layout(
                                    dp=dp,
                                    tp=tp,
                                    pp=pp,
                                    zero_stage=zero,
                                    checkpointing=ckpt,
                                    micro_batch=mb,
                                    grad_accum=ga,
                                    vp=vp,
                                )
                                # usable device memory: card × (1 − fraction) − GiB kept free
                                usable = (
                                    off.gpu.memory_gib * (1 - c.min_memory_headroom_fraction)
                                    - c.min_memory_headroom_gib
                                )
                                if training_memory(model, setup, lay, A).device > usable:
                                    continue
                                step = training_step_time(
                                    model,
                                    setup,
                                    lay,
                                    Cluster(off.gpu, off.gpus_per_instance, n, off.inter_node_gbps),
                                    A,
                                )
                                hours = (
                                    w.steps_for_batch(lay.global_batch)
                                    * step.time_s
                                    * factor
                                    / 3600
                                    * (1 + off.spot_overhead)
                                )
                                if off.commitment_hours and hours > off.commitment_hours:
                                    continue
                                cost = (off.commitment_hours or hours) * off.usd_per_hour * n
                                if c.deadline_h is not None and _seconds(hours) > c.deadline_h * 3600:
                                    continue
                                if c.budget_usd is not None and _cents(cost) > c.budget_usd * 100:
                                    continue
                                key = (_cents(cost), hours)
                                if best is None or key < (_cents(best[0]), best[1]):
                                    best = (cost, hours)
    return best


@st.composite
def offerings_strategy(draw) -> list[Offering]:
    count = draw(st.integers(1, 3))
    out = []
    for i in range(count):
        gpu = get_gpu(draw(st.sampled_from(GPUS)))
        pricing = draw(st.sampled_from(["on_demand", "spot", "reserved_1y"]))
        gpn = draw(st.sampled_from([1, 2, 4]))
        out.append(
            Offering(
                key=f"o{i}",
                kind="cloud",
                provider=draw(st.sampled_from(["p1", "p2"])),
                instance=f"i{i}",
                region="r",
                pricing=pricing,
                gpu=gpu,
                gpus_per_instance=gpn,
                inter_node_gbps=draw(st.sampled_from([10.0, 100.0, 400.0])),
                usd_per_hour=draw(st.floats(0.2, 20.0)) * gpn,
                max_instances=draw(st.integers(1, 4)),
                commitment_hours=8760.0 if pricing == "reserved_1y" else 0.0,
                spot_overhead=0.15 if pricing == "spot" else 0.0,
            )
        )
    return out


@st.composite
def jobs_strategy(draw) -> Job:
    deadline = draw(st.one_of(st.none(), st.floats(0.05, 200.0)))
    budget = draw(st.one_of(st.none(), st.floats(1.0, 5000.0)))
    return Job.model_validate(
        {
            "name": "t",
            "model": TINY,
            "workload": {
                "kind": "pretrain",
                "tokens": draw(st.floats(1e7, 2e9)),
                "seq_len": draw(st.sampled_from([256, 1024])),
                "global_batch": draw(st.sampled_from([8, 16, 32])),
                "precision": draw(st.sampled_from(["bf16", "fp16"])),
                "stack": draw(st.sampled_from(STACKS)),
            },
            "constraints": {
                "deadline_hours": deadline,
                "budget_usd": budget,
                "confidence": draw(st.sampled_from([0.5, 0.8, 0.95])),
                "pricing": ["on_demand", "spot", "reserved_1y"],
            },
        }
    )


def _plan(job: Job, offerings: list[Offering]):
    prep = prepare_from_offerings(job, job.model.resolve(), offerings, A)
    return plan_job(job, prepared=prep, alternatives=0)


@settings(max_examples=220, deadline=None)
@given(jobs_strategy(), offerings_strategy())
def test_cp_sat_equals_brute_force(job: Job, offerings: list[Offering]) -> None:
    result = _plan(job, offerings)
    expected = brute_force(job, offerings)
    if expected is None:
        assert result.status == "infeasible"
        assert result.explanation
        return
    assert result.status == "optimal"
    assert _cents(result.plan.cost_usd) == _cents(expected[0])
    w, c = job.workload, job.constraints
    assert (
        plan_violations(
            result.plan,
            job.model.resolve(),
            w.setup(),
            BatchRule(w.batch_sequences),
            c.deadline_h,
            c.budget_usd,
            A,
        )
        == []
    )


def _with(job: Job, **constraints) -> Job:
    data = job.model_dump()
    data["constraints"].update(constraints)
    return Job.model_validate(data)


@settings(max_examples=60, deadline=None)
@given(jobs_strategy(), offerings_strategy(), st.floats(1.0, 5.0))
def test_longer_deadline_or_larger_budget_never_costs_more(job, offerings, factor) -> None:
    base = _plan(job, offerings)
    if base.plan is None:
        return
    c = job.constraints
    if c.deadline_h is not None:
        later = _plan(_with(job, deadline_hours=c.deadline_h * factor), offerings)
        assert later.plan.cost_usd <= base.plan.cost_usd + 1e-9
    if c.budget_usd is not None:
        richer = _plan(_with(job, budget_usd=c.budget_usd * factor), offerings)
        assert richer.plan.cost_usd <= base.plan.cost_usd + 1e-9


@settings(max_examples=60, deadline=None)
@given(jobs_strategy(), offerings_strategy())
def test_removing_an_offering_never_lowers_cost(job, offerings) -> None:
    full = _plan(job, offerings)
    fewer = _plan(job, offerings[:-1]) if len(offerings) > 1 else None
    if fewer is None or fewer.plan is None:
        return
    assert full.plan is not None
    # the objective is whole cents (ties within a cent go to the faster plan): one cent slack
    assert full.plan.cost_usd <= fewer.plan.cost_usd + 0.01


@settings(max_examples=200, deadline=None)
@given(jobs_strategy(), offerings_strategy(), st.floats(0.0, 20.0), st.floats(0.0, 0.4))
def test_no_plan_exceeds_the_card_minus_its_headroom(job, offerings, gib, fraction) -> None:
    job = _with(job, min_memory_headroom_gib=gib, min_memory_headroom_fraction=fraction)
    result = _plan(job, offerings)
    if result.plan is None:
        return
    card = result.plan.offering.gpu.memory_gib
    assert result.plan.memory.device <= card * (1 - fraction) - gib + 1e-9


@settings(max_examples=200, deadline=None)
@given(jobs_strategy(), offerings_strategy(), st.floats(0.0, 10.0), st.floats(0.0, 10.0))
def test_more_headroom_never_lowers_cost(job, offerings, gib, extra) -> None:
    less = _plan(_with(job, min_memory_headroom_gib=gib), offerings)
    more = _plan(_with(job, min_memory_headroom_gib=gib + extra), offerings)
    if more.plan is None:
        return
    assert less.plan is not None  # what fits with more headroom fits with less
    assert less.plan.cost_usd <= more.plan.cost_usd + 0.01  # one cent: the solver's unit


OPTION_SETS = [("precision", ["bf16", "fp8"]), ("optimizer", ["adamw", "adam-8bit"])]


def _fixed(job: Job, field: str, value: str) -> Job:
    data = job.model_dump()
    data["workload"][field] = value
    return Job.model_validate(data)


def _searching(job: Job, field: str, values: list[str]) -> Job:
    data = job.model_dump()
    data["search"] = {field: values}
    return Job.model_validate(data)


@settings(max_examples=200, deadline=None)
@given(jobs_strategy(), offerings_strategy(), st.sampled_from(OPTION_SETS))
def test_cp_sat_equals_brute_force_over_searched_options(job, offerings, option) -> None:
    """With [search] the optimum is the best brute force over each allowed value fixed."""
    field, values = option
    result = _plan(_searching(job, field, values), offerings)
    fixed = [brute_force(_fixed(job, field, v), offerings) for v in values]
    found = [f for f in fixed if f is not None]
    if not found:
        assert result.status == "infeasible"
        return
    assert result.status == "optimal"
    assert _cents(result.plan.cost_usd) == min(_cents(f[0]) for f in found)
    chosen = getattr(result.plan.setup, field)
    assert chosen in values


@settings(max_examples=150, deadline=None)
@given(jobs_strategy(), offerings_strategy(), st.sampled_from([[2], [1, 2], [4], [1, 2, 4]]))
def test_cp_sat_equals_brute_force_over_virtual_stages(job, offerings, stages) -> None:
    """With [search] virtual_stages the optimum is the best brute force over each allowed
    number of virtual stages (pp > 1 and pp × vp dividing the layers). About one example in ten
    ends with an interleaved plan. These small instances did not reach the search's old
    overstated bound; tests/solve/test_best_layout_bound.py checks that bound directly."""
    result = _plan(_searching(job, "virtual_stages", stages), offerings)
    found = [f for f in (brute_force(job, offerings, vp) for vp in stages) if f is not None]
    if not found:
        assert result.status == "infeasible"
        return
    assert result.status == "optimal"
    assert _cents(result.plan.cost_usd) == min(_cents(f[0]) for f in found)
    event(f"plan with vp = {result.plan.layout.vp}")


@settings(max_examples=200, deadline=None)
@given(jobs_strategy(), offerings_strategy(), st.sampled_from(OPTION_SETS))
def test_allowing_an_extra_option_never_raises_cost(job, offerings, option) -> None:
    field, values = option
    one = _plan(_searching(job, field, values[:1]), offerings)
    both = _plan(_searching(job, field, values), offerings)
    if one.plan is None:
        return
    assert both.plan is not None and both.plan.cost_usd <= one.plan.cost_usd + 0.01


@settings(max_examples=120, deadline=None)
@given(jobs_strategy(), offerings_strategy())
def test_the_deadline_binds_exactly_when_a_cheaper_late_plan_exists(job, offerings) -> None:
    """`binding_constraint = "deadline"` iff exhaustive search without the deadline finds a
    cheaper plan; `cheaper_if_later` is that plan (late, and as cheap as the brute force)."""
    result = _plan(job, offerings)
    if result.plan is None:
        return
    free = brute_force(_with(job, deadline_hours=None), offerings)
    assert free is not None  # the plan itself is feasible without the deadline
    plan_usd = result.plan.cost_usd
    if free[0] < plan_usd - 0.01:  # one cent: the solver's unit
        assert result.binding == "deadline"
    if result.binding == "deadline":
        late = result.cheaper_if_later
        assert late is not None and late.cost_usd < plan_usd
        assert late.hours > job.constraints.deadline_h
        assert abs(late.cost_usd - free[0]) <= 0.01
    else:
        assert result.binding == "none" and result.cheaper_if_later is None
