"""Single-job planner: CP-SAT picks the cheapest candidate that meets deadline and budget."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optimizer.inputs.jobs.train import Job
from optimizer.model.setup import PerfAssumptions
from optimizer.model.spec import ModelSpec
from optimizer.pricing.offering import Offering
from optimizer.solve.train.enumerate import (
    BatchRule,
    Candidate,
    CandidateTable,
    enumerate_candidates,
)
from optimizer.solve.cpsat.scale import budget_cents, deadline_seconds, to_cents, to_seconds
from optimizer.solve.cpsat.solver import SolverConfig, SolveResult, solve

__all__ = ["PlanResult", "PreparedJob", "prepare_job", "plan_job", "solve_table",
           "candidate_key", "plan_dict"]


@dataclass
class PreparedJob:
    """A validated job with its model, assumptions and candidate table."""

    job: Job
    model: ModelSpec
    assumptions: PerfAssumptions
    offerings: list[Offering]
    table: CandidateTable
    deadline_h: float | None
    budget_usd: float | None
    enumerate_s: float = 0.0


@dataclass
class PlanResult:
    status: str  # optimal | feasible | infeasible
    plan: Candidate | None
    alternatives: list[Candidate] = field(default_factory=list)
    pareto: list[Candidate] = field(default_factory=list)
    explanation: str | None = None
    solver: dict[str, Any] = field(default_factory=dict)
    prepared: PreparedJob | None = None


def candidate_key(c: Candidate) -> tuple[str, str, str]:
    """What makes two plans 'distinct' for alternatives: GPU type, provider, pricing model."""
    return (c.offering.gpu_id, c.offering.provider, c.offering.pricing)


def prepare_job(job: Job, frame: Any = None, base_dir: Path | None = None,
                assumptions: PerfAssumptions | None = None, pareto: bool = False) -> PreparedJob:
    """Resolve the model, build offerings (catalog + hardware) and the candidate table."""
    from optimizer.inputs.calibration import assumptions_for_job
    from optimizer.pricing.offerings import job_offerings

    model = job.model.resolve(base_dir)
    a = assumptions or assumptions_for_job(job, model)
    if frame is None and job.constraints.cloud:
        raise ConfigError("prepare_job: a cloud job needs the price rows "
                          "(optimizer.pricing.catalog.load_offering_rows)")
    offerings = job_offerings(frame, job.constraints, job.hardware.owned, job.hardware.buy)
    return prepare_from_offerings(job, model, offerings, a, slack_stop=not pareto)


def prepare_from_offerings(job: Job, model: ModelSpec, offerings: Sequence[Offering],
                           assumptions: PerfAssumptions, prune: bool = True,
                           slack_stop: bool = False) -> PreparedJob:
    """Enumerate candidates; with `prune`, instance counts that cannot meet the deadline are
    skipped (the explanation of an infeasible job re-enumerates without pruning)."""
    w, c = job.workload, job.constraints
    start = time.perf_counter()
    tokens_lb = w.total_tokens() * ((1 - w.batch_tolerance) if w.steps is not None else 1.0)
    table = enumerate_candidates(
        model, w.setup(), BatchRule(w.batch_sequences, w.batch_tolerance), w.steps_for_batch,
        offerings, zero_stages=c.zero_stages, checkpointing=c.checkpointing,
        min_instances=c.min_instances, max_instances=c.max_instances, max_gpus=c.max_gpus,
        assumptions=assumptions, prune_hours=c.deadline_h if prune else None,
        tokens_lower_bound=tokens_lb, slack_stop=slack_stop)
    return PreparedJob(job, model, assumptions, list(offerings), table, c.deadline_h,
                       c.budget_usd, time.perf_counter() - start)


def solve_table(candidates: Sequence[Candidate], deadline_h: float | None,
                budget_usd: float | None, *, exclude: Sequence[tuple[str, str, str]] = (),
                config: SolverConfig | None = None
                ) -> tuple[SolveResult, Candidate | None, list[str]]:
    """Pick one candidate: min cost (cents), ties broken by min time.

    The objective is lexicographic in one integer: cost_cents × (T + 1) + minutes, with T the
    largest duration in minutes, so no tie-break can outweigh one cent. Deadline and budget
    are hard constraints; only when the model is infeasible is it solved again with one
    assumption literal per requirement, to name the ones in conflict (CP-SAT
    sufficient_assumptions_for_infeasibility).

    Returns (result, chosen or None, names of the requirements in conflict when infeasible).
    """
    from ortools.sat.python import cp_model

    cost = [to_cents(c.cost_usd) for c in candidates]
    secs = [to_seconds(c.hours) for c in candidates]
    minutes = [(s + 59) // 60 for s in secs]
    weight = max(minutes, default=0) + 1
    lexicographic = max(cost, default=0) * weight < 2**62

    def build(with_assumptions: bool) -> tuple[Any, list[Any], dict[int, str]]:
        m = cp_model.CpModel()
        x = [m.new_bool_var(f"x{i}") for i in range(len(candidates))]
        m.add_exactly_one(x)
        for key in exclude:
            banned = [xi for xi, c in zip(x, candidates, strict=True) if candidate_key(c) == key]
            if banned:
                m.add(cp_model.LinearExpr.sum(banned) == 0)
        requirement: dict[int, str] = {}
        # With exactly one row chosen, "time ≤ deadline" is the same as forbidding every row
        # over it: unary implications propagate at once, whereas the equivalent weighted-sum
        # constraint with 1e5-1e10 coefficients slows CP-SAT ~20× (measured: 55 vs 3 ms).
        for name, values, limit in (
                ("deadline", secs, None if deadline_h is None else deadline_seconds(deadline_h)),
                ("budget", cost, None if budget_usd is None else budget_cents(budget_usd))):
            if limit is None:
                continue
            lit = m.new_bool_var(name)
            for xi, value in zip(x, values, strict=True):
                if value > limit:
                    m.add_implication(lit, ~xi)
            if with_assumptions:
                m.add_assumption(lit)
                requirement[lit.index] = name
            else:
                m.add(lit == 1)
        obj = [c * weight + t for c, t in zip(cost, minutes, strict=True)] if lexicographic else cost
        m.minimize(cp_model.LinearExpr.weighted_sum(x, obj))
        return m, x, requirement

    model, x, _ = build(False)
    result = solve(model, config)
    if result.status == "infeasible":
        model, x, requirement = build(True)
        again = solve(model, config)
        core = [requirement[i] for i in again.solver.sufficient_assumptions_for_infeasibility()
                if i in requirement] if again.status == "infeasible" else []
        return result, None, core or sorted(requirement.values())
    chosen = next(i for i, xi in enumerate(x) if result.solver.boolean_value(xi))
    if not lexicographic:  # rare: enormous costs; fall back to a second phase on time
        model, x, _ = build(False)
        model.add(cp_model.LinearExpr.weighted_sum(x, cost) <= cost[chosen])
        model.minimize(cp_model.LinearExpr.weighted_sum(x, secs))
        second = solve(model, config)
        chosen = next(i for i, xi in enumerate(x) if second.solver.boolean_value(xi))
    return result, candidates[chosen], []


def _explain(prep: PreparedJob, core: list[str]) -> str:
    """Which requirement binds and the nearest change that makes the job feasible."""
    if prep.deadline_h is not None:  # look past the deadline pruning for the fastest plan
        prep = prepare_from_offerings(prep.job, prep.model, prep.offerings, prep.assumptions,
                                      prune=False)
        if not core and prep.table.candidates:
            core = ["deadline"]
    cands = prep.table.candidates
    if not cands:
        reasons = prep.table.rejected
        if not reasons:
            return "no offering matches the filters (gpus, providers, regions, pricing)"
        smallest = sorted(reasons.items())[:6]
        lines = "; ".join(f"{k}: {v}" for k, v in smallest)
        more = f" (+{len(reasons) - 6} more)" if len(reasons) > 6 else ""
        return f"nothing fits in GPU memory: {lines}{more}"
    parts: list[str] = []
    deadline, budget = prep.deadline_h, prep.budget_usd
    fastest = min(cands, key=lambda c: (c.hours, c.cost_usd))
    if "deadline" in core and deadline is not None:
        from optimizer.solve.train.enumerate import MAX_GPUS_DEFAULT

        searched = prep.job.constraints.max_gpus or MAX_GPUS_DEFAULT
        parts.append(
            f"the deadline ({deadline / 24:.1f} days) binds: the fastest plan needs "
            f"{fastest.hours / 24:.1f} days ({fastest.gpus}× {fastest.offering.gpu_id}, "
            f"{fastest.offering.provider} {fastest.offering.instance}, ${fastest.cost_usd:,.0f}; "
            f"searched up to {searched:,} GPUs — set max_gpus to search further)")
    limits = {k: v for k, v in (("max_gpus", prep.job.constraints.max_gpus),
                                 ("max_instances", prep.job.constraints.max_instances)) if v}
    if "deadline" in core and deadline is not None and limits:
        relaxed_job = prep.job.model_copy(update={"constraints": prep.job.constraints.model_copy(
            update={"max_gpus": None, "max_instances": None})})
        relaxed = prepare_from_offerings(relaxed_job, prep.model, prep.offerings,
                                         prep.assumptions)
        in_time = [c for c in relaxed.table.candidates if c.hours <= deadline]
        if in_time:
            fix = min(in_time, key=lambda c: (c.cost_usd, c.hours))
            parts.append(
                f"without {' and '.join(f'{k}={v}' for k, v in limits.items())} the deadline is met "
                f"by {fix.instances}× {fix.offering.instance} ({fix.gpus}× {fix.offering.gpu_id}, "
                f"{fix.offering.provider}) in {fix.hours / 24:.1f} days for ${fix.cost_usd:,.0f}")
    if "budget" in core and budget is not None:
        in_time = [c for c in cands if deadline is None or c.hours <= deadline]
        if in_time:
            cheapest = min(in_time, key=lambda c: c.cost_usd)
            parts.append(f"the budget (${budget:,.0f}) binds: the cheapest plan that meets the "
                         f"deadline needs budget ≥ ${cheapest.cost_usd:,.0f}")
        else:
            cheapest = min(cands, key=lambda c: c.cost_usd)
            parts.append(f"the budget (${budget:,.0f}) binds too: the cheapest plan at any "
                         f"speed costs ${cheapest.cost_usd:,.0f}")
    return "; ".join(parts) or "infeasible"


def plan_job(job: Job, frame: Any = None, base_dir: Path | None = None, *,
             alternatives: int = 3, pareto: bool = False, config: SolverConfig | None = None,
             prepared: PreparedJob | None = None) -> PlanResult:
    """Plan one job end to end. Never raises for infeasibility: see PlanResult.status."""
    prep = prepared or prepare_job(job, frame, base_dir, pareto=pareto)
    cands = prep.table.candidates
    solver_info: dict[str, Any] = {"name": "cp-sat", "candidates": len(cands),
                                   "enumerate_s": round(prep.enumerate_s, 4)}
    if not cands:
        return PlanResult("infeasible", None, explanation=_explain(prep, []),
                          solver={**solver_info, "wall_s": 0.0, "proven_optimal": True},
                          prepared=prep)
    result, best, core = solve_table(cands, prep.deadline_h, prep.budget_usd, config=config)
    solver_info.update(wall_s=round(result.wall_s, 4), proven_optimal=result.proven_optimal)
    if best is None:
        return PlanResult("infeasible", None, explanation=_explain(prep, core),
                          solver=solver_info, prepared=prep)
    _check(prep, best)
    out = PlanResult(result.status, best, solver=solver_info, prepared=prep)
    excluded = [candidate_key(best)]
    for _ in range(alternatives):
        res, alt, _core = solve_table(cands, prep.deadline_h, prep.budget_usd, exclude=excluded,
                                      config=config)
        if alt is None:
            break
        _check(prep, alt)
        out.alternatives.append(alt)
        excluded.append(candidate_key(alt))
    if pareto:
        out.pareto = pareto_front(cands, prep.budget_usd, prep.deadline_h, config)
    return out


def _check(prep: PreparedJob, plan: Candidate) -> None:
    from optimizer.solve.train.validate import validate_plan

    w, c = prep.job.workload, prep.job.constraints
    validate_plan(plan, prep.model, w.setup(), BatchRule(w.batch_sequences, w.batch_tolerance),
                  prep.deadline_h, prep.budget_usd, prep.assumptions, max_gpus=c.max_gpus,
                  max_instances=c.max_instances)


def pareto_front(cands: Sequence[Candidate], budget_usd: float | None,
                 deadline_h: float | None, config: SolverConfig | None = None,
                 max_points: int = 25) -> list[Candidate]:
    """Cost-vs-finish-time front by the ε-constraint method: cheapest plan finishing before T,
    then T := its time − 1 s, until nothing is left."""
    front: list[Candidate] = []
    limit = deadline_h
    while len(front) < max_points:
        res, best, _ = solve_table(cands, limit, budget_usd, config=config)
        if best is None:
            break
        front.append(best)
        limit = (to_seconds(best.hours) - 1) / 3600.0
        if limit <= 0:
            break
    return front


def plan_dict(c: Candidate, job: Job | None = None) -> dict[str, Any]:
    """A plan in the JSON contract of DESIGN.md (plus extra fields)."""
    off = c.offering
    tokens = c.steps * c.layout.global_batch * (job.workload.seq_len if job else 0)
    return {
        "gpu": off.gpu_id, "provider": off.provider, "instance": off.instance,
        "region": off.region, "pricing": off.pricing, "instances": c.instances, "gpus": c.gpus,
        "layout": c.layout.as_dict(), "global_batch": c.layout.global_batch, "steps": c.steps,
        "step_time_s": round(c.step.time_s, 3), "hours": round(c.hours, 2),
        "days": round(c.hours / 24, 2), "usd_per_hour": round(c.usd_per_hour, 2),
        "cost_usd": round(c.cost_usd, 2), "capital_usd": round(c.capital_usd, 2),
        "memory_gib": c.memory.as_dict(2), "step": c.step.as_dict(),
        "tokens_per_s": round(c.step.tokens_per_s, 1),
        "tokens_per_s_per_gpu": round(c.step.tokens_per_s_per_gpu, 1),
        "mfu": round(c.step.mfu, 4), "tokens": tokens,
        "inter_node_gbps": off.inter_node_gbps, "commitment_hours": off.commitment_hours,
        "kind": off.kind, "calibrated": c.step.calibrated,
        "inter_node_kind": off.inter_node_kind, "inter_node_is_default": off.inter_node_is_default,
        "warnings": plan_warnings(c),
    }


def plan_warnings(c: Candidate) -> list[str]:
    """What a careful user should double-check before spending money on this plan."""
    off, out = c.offering, []
    if c.instances > 1 and off.kind == "cloud" and (off.inter_node_is_default
                                                    or off.inter_node_kind == "ethernet"):
        source = "a documented guess" if off.inter_node_is_default else "published"
        out.append(f"{c.instances} instances exchange gradients over {off.inter_node_gbps:g} Gbit/s "
                   f"{off.inter_node_kind} ({source}); step time is sensitive to it — confirm "
                   f"the network with {off.provider} or calibrate on 2 instances")
    if off.pricing == "spot":
        out.append(f"spot: assumes +{off.spot_overhead:.0%} wall time for preemptions and restarts "
                   "from checkpoints; capacity is not guaranteed")
    if off.commitment_hours:
        out.append(f"reserved: the whole {off.commitment_hours / 8760:g}-year term is billed "
                   f"(${c.cost_usd:,.0f}) whatever the job uses")
    if off.gpu.spec_confidence not in ("published",):
        out.append(f"{off.gpu_id} specs are {off.gpu.spec_confidence}; calibrate before relying "
                   "on the time estimate")
    return out
