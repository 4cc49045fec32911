"""Plain-Python checks of a mixed cluster against every constraint (run after each mix solve)."""

from __future__ import annotations

import math
from typing import Any

from optimizer.errors import SolverError
from optimizer.model.memory import training_memory
from optimizer.solve.cpsat.scale import ScaleError
from optimizer.solve.train.mix.data import type_step
from optimizer.solve.train.mix.search import MixOutcome, MixPlan, mix_cost_usd, plan_mix
from optimizer.solve.train.prepare import PreparedJob, headroom_of
from optimizer.solve.train.spot import mix_run_hours

__all__ = ["mix_violations", "check_mix", "mix_outcome"]


def mix_violations(prep: PreparedJob, plan: MixPlan, caps: dict[str, int] | None = None) -> list[str]:
    """Every constraint the mix breaks, recomputed from scratch (empty list = valid): each row's
    layout fits its GPU; the rows realise the global batch; a GPU-type mix's step is the slowest
    type's step recomputed by the step-time model; hours, deadline, cost, budget, caps."""
    job = prep.job
    w, c = job.workload, job.constraints
    setup = w.setup()
    problems: list[str] = []
    headroom = headroom_of(c, prep.assumptions)
    for r in plan.rows:
        # a pricing mix runs a candidate row's own layout (checked by validate_plan's rules)
        mem = training_memory(prep.model, setup, r.layout, prep.assumptions)
        usable = headroom.usable_gib(r.offering.gpu.memory_gib)
        if plan.kind == "gpu_types" and mem.device > usable + 1e-9:
            problems.append(f"{r.offering.instance}: needs {mem.device:.2f} GiB > {usable:.2f} usable")
        limit = (caps or {}).get(r.offering.key, r.offering.max_instances or 0)
        if limit and r.count > limit:
            problems.append(f"{r.offering.instance} {r.offering.pricing}: {r.count} > cap {limit}")
    if plan.kind == "gpu_types":
        gpus = plan.gpus
        by_type: dict[str, Any] = {}
        for r in plan.rows:
            by_type.setdefault(r.offering.gpu_id, []).append(r)
        realised = sum(
            sum(x.gpus for x in rs) * rs[0].layout.micro_batch * rs[0].layout.grad_accum
            for rs in by_type.values()
        )
        if realised != w.batch_sequences:
            problems.append(f"global batch {realised} != {w.batch_sequences}")
        slowest = min(r.offering.inter_node_gbps for r in plan.rows)
        nodes = plan.instances
        step = max(
            type_step(prep.model, setup, r.layout, r.offering, nodes, slowest, prep.assumptions).time_s
            for r in plan.rows
        )
        if any(r.layout.dp != gpus for r in plan.rows):
            problems.append("a type's data-parallel size is not all GPUs of the mix")
        if not math.isclose(step, plan.step_time_s, rel_tol=1e-9):
            problems.append(f"step {plan.step_time_s} != recomputed {step}")
        work_h = plan.steps * step * plan.band_factor / 3600.0
        generations = tuple(r.offering.gpu.generation for r in plan.rows)
        hours, _ = mix_run_hours(
            work_h, nodes, plan.gpus, prep.model, setup, prep.assumptions, generations=generations
        )
        if not math.isclose(hours, plan.hours, rel_tol=1e-9):
            problems.append(f"hours {plan.hours} != recomputed {hours}")
    elif plan.gpus != plan.rows[0].layout.gpus:
        problems.append(f"layout GPUs {plan.rows[0].layout.gpus} != {plan.gpus} GPUs of the mix")
    if prep.deadline_h is not None and plan.hours > prep.deadline_h + 1e-9:
        problems.append(f"{plan.hours:.2f} h exceeds the deadline {prep.deadline_h:.2f} h")
    cost = mix_cost_usd(plan.rows, plan.hours)
    if not math.isclose(cost, plan.cost_usd, rel_tol=1e-9, abs_tol=1e-6):
        problems.append(f"cost {plan.cost_usd} != recomputed {cost}")
    if prep.budget_usd is not None and plan.cost_usd > prep.budget_usd + 1e-6:
        problems.append(f"cost ${plan.cost_usd:,.2f} exceeds the budget ${prep.budget_usd:,.2f}")
    if c.max_gpus is not None and plan.gpus > c.max_gpus:
        problems.append(f"{plan.gpus} GPUs > max_gpus {c.max_gpus}")
    if plan.instances < c.min_instances:
        problems.append(f"{plan.instances} instances < min_instances {c.min_instances}")
    if c.max_instances is not None and plan.instances > c.max_instances:
        problems.append(f"{plan.instances} instances > max_instances {c.max_instances}")
    return problems


def mix_outcome(prep: PreparedJob, single: Any, rows: Any = None, config: Any = None) -> MixOutcome | None:
    """The job's mixed-cluster outcome (None when constraints.mix is false), its shown mix
    checked from scratch."""
    if not prep.job.constraints.mix:
        return None
    try:
        out = plan_mix(prep, single, rows, config)
    except ScaleError as exc:  # a mix past the solver's integers is no answer, not a failed plan
        return MixOutcome(
            single_cost_usd=None if single is None else single.cost_usd,
            reasons=[f"mixes not searched: {exc}"],
        )
    if out.plan is not None:
        check_mix(prep, out.plan)
    return out


def check_mix(prep: PreparedJob, plan: MixPlan, caps: dict[str, int] | None = None) -> None:
    """Raise SolverError if the mix breaks a constraint (a bug, never a user error)."""
    problems = mix_violations(prep, plan, caps)
    if problems:
        raise SolverError("internal check failed for the mixed cluster: " + "; ".join(problems))
