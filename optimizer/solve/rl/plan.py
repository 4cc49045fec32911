"""Plan an RL job: pool options → candidates → CP-SAT → check against brute force → result.

Takes the parsed job and the catalog rows (api/rl_jobs.py loads them), like the training and
serving planners.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError, Status
from optimizer.inputs.calibration import base_assumptions
from optimizer.inputs.jobs.rl import RlJob
from optimizer.model.profile import SampleProfile
from optimizer.model.rl.phases import BATCH_TOLERANCE
from optimizer.model.rl.setup import DEFAULT_RL_ASSUMPTIONS, RlSetup
from optimizer.model.spec import ModelSpec
from optimizer.pricing.offerings import job_offerings
from optimizer.pricing.schema import OfferingRow
from optimizer.solve.cpsat.solver import SolverConfig
from optimizer.solve.rl.candidates import RlCandidate, colocated_candidates, separate_candidates
from optimizer.solve.rl.model import int_problem, solve_problem
from optimizer.solve.rl.options import PoolOption, pool_options
from optimizer.solve.rl.validate import check_choice, feasible

__all__ = ["RlResult", "plan_rl"]


@dataclass(frozen=True)
class RlResult:
    """The cheapest RL plan (or why none), with the best plan of the other pool mode."""

    status: Status
    job: RlJob
    model: ModelSpec
    plan: RlCandidate | None
    other_mode: RlCandidate | None  # the cheapest feasible plan of the mode not chosen
    candidates: int
    explanation: str = ""
    solver: dict[str, Any] = field(default_factory=dict)
    core: tuple[str, ...] = ()  # the limits CP-SAT names in the conflict (deadline, budget)
    catalog: dict[str, Any] | None = None


def _allowed(options: Sequence[PoolOption], gpus: tuple[str, ...] | None) -> list[PoolOption]:
    if gpus is None:
        return list(options)
    wanted = {g.lower() for g in gpus}
    return [o for o in options if o.offering.gpu_id.lower() in wanted or o.offering.gpu.gpu_id in gpus]


def _candidates(
    job: RlJob, model: ModelSpec, rows: Sequence[OfferingRow] | None, rl: RlSetup | None = None
) -> list[RlCandidate]:
    rl = rl or job.setup()
    pools, c = job.rl.pools, job.constraints
    a = base_assumptions(job.assumptions)
    rla = job.rl.assumptions.apply(DEFAULT_RL_ASSUMPTIONS)
    offerings = job_offerings(rows, c, job.hardware.owned, job.hardware.buy)
    options = pool_options(model, rl, offerings, a, rla, c.confidence, pools.max_gpus_per_pool)
    out: list[RlCandidate] = []
    if pools.mode in ("colocated", "either") or not rl.generates:
        out += colocated_candidates(options, job.rl.steps)
    if pools.mode in ("separate", "either") and rl.generates:
        gens = _allowed(options, pools.generation_gpu_types)
        trains = _allowed(options, pools.training_gpu_types)
        out += separate_candidates(model, rl, gens, trains, rla, job.rl.steps)
    return sorted(out, key=lambda k: (k.cost_usd, k.hours, k.label))


def _explain(core: Sequence[str], cands: Sequence[RlCandidate], job: RlJob) -> str:
    """The binding limits and the nearest fix: the fastest plan's hours, the cheapest cost."""
    c = job.constraints
    fastest = min(cands, key=lambda k: k.hours)
    cheapest = min(cands, key=lambda k: k.cost_usd)
    parts = []
    if "deadline" in core:
        parts.append(
            f"deadline {c.deadline_hours:g} h: the fastest plan needs {fastest.hours:.1f} h ({fastest.label})"
        )
    if "budget" in core:
        parts.append(
            f"budget ${c.budget_usd:,.0f}: the cheapest plan costs "
            f"${cheapest.cost_usd:,.0f} ({cheapest.label})"
        )
    return "; ".join(parts) or "no plan meets the deadline and the budget together"


def _no_pool(job: RlJob, model: ModelSpec, rows: Sequence[OfferingRow] | None) -> str:
    """Why no pool can run the step, and the fix that helps. The update spreads a step's
    sequences over data-parallel GPUs, at most (1 + BATCH_TOLERANCE) × sequences of them: when a
    step with one sequence per GPU of the largest pool would fit, the binding limit is the
    step's size, and the fix is as many sequences as the smallest pool that holds the update
    has GPUs (÷ 1 + tolerance); otherwise more or larger GPUs."""
    rl, most = job.setup(), job.rl.pools.max_gpus_per_pool
    wide = replace(rl, prompts_per_step=math.ceil(most * (1 + BATCH_TOLERANCE) / rl.samples_per_prompt))
    held = _candidates(job, model, rows, wide)
    if held:
        fewest = min(held, key=lambda k: (k.train_pool.gpus, k.cost_usd))
        need = math.ceil(fewest.train_pool.gpus / (1 + BATCH_TOLERANCE))
        per = rl.samples_per_prompt
        return (
            f"rl.prompts_per_step: a step of {rl.sequences} sequence(s) spreads its update over at most "
            f"{math.floor(rl.sequences * (1 + BATCH_TOLERANCE))} data-parallel GPU(s), and the "
            f"fewest GPUs that hold {model.name}'s update are {fewest.train_pool.gpus} "
            f"({fewest.label}); allowed: prompts_per_step × {per} samples ≥ {need} "
            f"(prompts_per_step ≥ {math.ceil(need / per)})"
        )
    return (
        f"rl.pools: no offering can hold {model.name}'s phases within max_gpus_per_pool = "
        f"{most}; allowed: raise max_gpus_per_pool or allow larger GPUs"
    )


def plan_rl(
    job: RlJob, rows: Sequence[OfferingRow] | None, base_dir: Path | None, config: SolverConfig | None = None
) -> RlResult:
    """The cheapest pools for `job` meeting its deadline and budget at its confidence.

    Raises:
        ConfigError: the model is a per-sample profile, or nothing can run a phase.
    """
    model = job.model.resolve(base_dir)
    if isinstance(model, SampleProfile) or not isinstance(model, ModelSpec):
        raise ConfigError(
            "model: an RL job needs a transformer shape (a preset, hf_config or explicit shape)"
        )
    cands = _candidates(job, model, rows)
    if not cands:
        raise ConfigError(_no_pool(job, model, rows))
    c = job.constraints
    problem = int_problem(cands, c.deadline_hours, c.budget_usd)
    sol = solve_problem(problem, config)
    check_choice(problem, sol.index)
    solver = {**sol.result.as_dict(), "rows": len(cands)}
    if sol.index is None:
        text = _explain(sol.core, cands, job)
        return RlResult(Status.INFEASIBLE, job, model, None, None, len(cands), text, solver, core=sol.core)
    chosen = cands[sol.index]
    fits = [k for i, k in enumerate(cands) if k.mode != chosen.mode and feasible(problem, i)]
    status = Status.OPTIMAL if sol.result.proven_optimal else Status.FEASIBLE
    return RlResult(status, job, model, chosen, fits[0] if fits else None, len(cands), "", solver)
