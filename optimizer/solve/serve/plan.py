"""Serving planner: the cheapest mix of inference replicas carrying a load within latency targets.

load rows → offerings (optimizer.pricing.offerings) → replica options (options.py) → integer
problem (problem.py) → CP-SAT (model.py) → capacity at the chosen fleet → validate_serve.

1. Per offering class, the TP degrees that fit one instance and a batch ladder up to the
   largest batch that fits memory; a replica option is (offering, tp, batch) with per-bucket
   capacity, only where the latency targets hold.
2. CP-SAT picks integer instance counts per option (mixes allowed) and assigns each bucket's
   load to options by time sharing. Objective: USD per served hour in integer cents, ties broken
   on fewer GPUs, then on a rank of the options by (offering key, tp, batch).
3. A second CP-SAT solve with the counts fixed finds the largest uniform scale of the load the
   fleet carries (the capacity and headroom reported).

Simplifications, stated: TTFT is one prefill plus one decode step (no queueing delay); the
arrival rate of N users with think time Z is N/Z (an upper bound); N+k redundancy keeps k spare
instances per deployment — failure domains: a box that fails loses all its replicas — so
each deployment survives k instance failures on its own (exact for one GPU type,
conservative for mixes; the plan states instance_failures_survived); replicas of one option
fill their instances (replicas = instances × GPUs per instance / tp).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError, InfeasibleError, Status
from optimizer.inputs.calibration import base_assumptions
from optimizer.inputs.gpus import resolve_gpu_id
from optimizer.inputs.jobs.serve import ServeConstraints, ServeJob
from optimizer.model.profile import is_profile
from optimizer.model.setup import PerfAssumptions
from optimizer.model.spec import ModelSpec
from optimizer.pricing.offerings import flag_notes, job_offerings
from optimizer.pricing.schema import OfferingRow
from optimizer.solve.cpsat.scale import from_cents
from optimizer.solve.cpsat.solver import SolverConfig
from optimizer.solve.serve.explain import (
    diagnose_no_options,
    diagnose_solver_infeasible,
    no_options_binding,
)
from optimizer.solve.serve.model import max_load_scale, solve_problem
from optimizer.solve.serve.options import BestLatency, ReplicaOption, replica_options
from optimizer.solve.serve.problem import IntProblem, build_problem
from optimizer.solve.serve.result import Deployment, ServeComparison, ServeResult
from optimizer.solve.serve.validate import validate_serve

__all__ = ["plan_serving", "compare_serving", "require_feasible"]

Rows = Sequence[OfferingRow] | None


def plan_serving(
    job: ServeJob,
    rows: Rows,
    base_dir: Path | None = None,
    config: SolverConfig | None = None,
    assumptions: PerfAssumptions | None = None,
) -> ServeResult:
    """The cheapest deployment of a serving job, validated.

    Args:
        job: a validated ServeJob.
        rows: the price catalog rows (load_offering_rows; None: owned / bought hardware only).
        base_dir: directory for a relative hf_config path.
        config: CP-SAT settings.
        assumptions: performance constants (default: defaults + stored calibration + the job's
            [assumptions]).

    Returns:
        ServeResult; status infeasible carries an explanation naming the binding target.

    Raises:
        ConfigError: an invalid model, filter value or hardware entry.
        SolverError: the solver's answer fails validate_serve (a bug), or no answer in time.
    """
    return validate_serve(_plan(job, rows, base_dir, config, assumptions))


def _plan(
    job: ServeJob,
    rows: Rows,
    base_dir: Path | None,
    config: SolverConfig | None,
    assumptions: PerfAssumptions | None,
) -> ServeResult:
    """Options → problem → CP-SAT → deployments; an infeasible result says why."""
    model = _serving_model(job, base_dir)
    w, c = job.workload, job.constraints
    a = assumptions or base_assumptions(job.assumptions)
    offerings = job_offerings(rows, c, job.hardware.owned, job.hardware.buy)
    options, rejected, best = replica_options(model, w, c, offerings, a)
    load = w.load_requests_per_s
    base: dict[str, Any] = dict(
        name=job.name,
        model=model,
        workload=w,
        constraints=c,
        load_rps=load,
        options=len(options),
        rejected=tuple(rejected),
    )
    if not options:
        binding = no_options_binding(best, len(offerings))
        return _unplannable(job, model, best, len(offerings), binding, 0, base)
    problem, unit_rps = build_problem(options, [load * bk.share for bk in w.request_buckets()], c)
    missing = [
        i
        for i, u in enumerate(problem.load_units)
        if u and not any(o.time_per_unit[i] is not None for o in problem.options)
    ]
    if missing:
        return _unplannable(job, model, best, len(offerings), "latency", len(options), base)
    return _solved(problem, options, unit_rps, c, config, base)


def _serving_model(job: ServeJob, base_dir: Path | None) -> ModelSpec:
    """The job's model; a per-sample profile is refused (serving plans transformer shapes)."""
    model = job.model.resolve(base_dir)
    if is_profile(model):
        raise ConfigError(
            f"model: {model.name} is a per-sample profile; serving plans "
            "transformer shapes (presets such as bert-base, vit-b16, llama-*; or "
            "hf_config)"
        )
    return model


def _unplannable(
    job: ServeJob,
    model: ModelSpec,
    best: BestLatency,
    n_offerings: int,
    binding: str,
    n_options: int,
    base: dict[str, Any],
) -> ServeResult:
    """Infeasible before any solve: no replica option, or a request bucket none can serve."""
    text, fixes = diagnose_no_options(model, job.workload, job.constraints, best, n_offerings)
    return ServeResult(
        Status.INFEASIBLE,
        explanation=text,
        fixes=fixes,
        binding=binding,
        solver={"name": "cp-sat", "options": n_options},
        **base,
    )


def _solved(
    problem: IntProblem,
    options: Sequence[ReplicaOption],
    unit_rps: Sequence[float],
    c: ServeConstraints,
    config: SolverConfig | None,
    base: dict[str, Any],
) -> ServeResult:
    """CP-SAT's fleet for `problem`, its capacity at the largest load scale it carries."""
    load = base["load_rps"]
    sol = solve_problem(problem, config)
    solver_info = dict(sol.result.as_dict() if sol.result else {}, options=len(options))
    if sol.status == Status.INFEASIBLE:
        text, fixes = diagnose_solver_infeasible(problem, c, load, config)
        return ServeResult(
            Status.INFEASIBLE, explanation=text, fixes=fixes, solver=solver_info, binding="capacity", **base
        )
    alpha, at_alpha = max_load_scale(problem, sol.counts, config)
    deployments = []
    for i, count in enumerate(sol.counts):
        if not count:
            continue
        assigned = tuple(u * r for u, r in zip(sol.assignment[i], unit_rps, strict=True))
        cap = sum(u * r for u, r in zip(at_alpha[i], unit_rps, strict=True)) if at_alpha else 0.0
        deployments.append(Deployment(options[i], count, assigned, cap))
    deployments.sort(key=lambda d: -d.usd_per_hour)
    solver_info.update(
        objective_cents=sol.cost_cents,
        objective_cents_per_hour=sol.cost_cents,
        objective_usd_per_hour=None if sol.cost_cents is None else from_cents(sol.cost_cents),
    )
    return ServeResult(
        sol.status,
        deployments=tuple(deployments),
        notes=tuple(flag_notes(d.option.offering for d in deployments)),
        capacity_rps=alpha * load * (1 + c.min_capacity_headroom_fraction),
        solver=solver_info,
        **base,
    )


def compare_serving(
    job: ServeJob,
    rows: Rows,
    base_dir: Path | None = None,
    config: SolverConfig | None = None,
    assumptions: PerfAssumptions | None = None,
) -> ServeComparison:
    """Best deployment per GPU type (each solved alone) and the best mix over all types.

    Raises:
        ConfigError, SolverError: as plan_serving.
    """
    overall = plan_serving(job, rows, base_dir, config, assumptions)
    offerings = job_offerings(rows, job.constraints, job.hardware.owned, job.hardware.buy)
    per_gpu: dict[str, ServeResult] = {}
    for gpu in sorted({o.gpu_id for o in offerings}):
        sub = job.model_copy(
            update={"constraints": job.constraints.model_copy(update={"gpu_types": (resolve_gpu_id(gpu),)})}
        )
        per_gpu[gpu] = plan_serving(sub, rows, base_dir, config, assumptions)
    return ServeComparison(overall, per_gpu)


def require_feasible(result: ServeResult) -> ServeResult:
    """Raise InfeasibleError for an infeasible result (for API users who prefer it)."""
    if result.status == Status.INFEASIBLE:
        raise InfeasibleError(result.explanation or "no deployment meets the targets", result.explanation)
    return result
