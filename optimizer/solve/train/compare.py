"""`ccopt compare`: the best plan per GPU type and per provider, and cloud vs owned/bought."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optimizer.inputs.jobs.train import Job
from optimizer.pricing.schema import OfferingRow
from optimizer.solve.train.enumerate import Candidate
from optimizer.solve.train.explain import Diagnosis, explain_infeasible
from optimizer.solve.train.figures import JobFigures
from optimizer.solve.train.model import solve_table
from optimizer.solve.train.plan_figures import job_figures, with_figures
from optimizer.solve.train.prepare import PreparedJob, prepare_job
from optimizer.units import HOURS_PER_DAY, HOURS_PER_MONTH

__all__ = ["BreakEven", "CompareResult", "compare_job", "break_even"]


@dataclass(frozen=True)
class BreakEven:
    """When buying boxes beats renting one cloud plan (None: never)."""

    net_capital_usd: float
    power_usd_per_job: float
    cloud_usd_per_job: float
    jobs: float | None
    months: float | None  # at the job's duty cycle (jobs_per_month, or back to back)
    months_continuous: float | None = None  # boxes busy 730 h a month, cloud rented as long
    gpu: str | None = None  # the GPU type of the cloud plan
    #: the duty cycle behind `months`: constraints.jobs_per_month, else jobs back to back
    jobs_per_month: float | None = None
    cloud_plan: str | None = None
    note: str = (
        "net capital = purchase − resale; power only while running; months at the "
        "job's duty cycle: constraints.jobs_per_month, else jobs back to back on the boxes"
    )


@dataclass(frozen=True)
class CompareResult:
    job: Job  # as planned (fitted to the model: a per-sample job counts samples, not tokens)
    per_gpu: dict[str, Candidate | None]
    per_provider: dict[str, Candidate | None]
    cloud: Candidate | None
    local: Candidate | None
    break_even: BreakEven | None
    rejected: dict[str, str]
    break_even_per_gpu: dict[str, BreakEven] = field(default_factory=dict)
    #: why a GPU type / provider with candidates has no plan (deadline or budget, with numbers)
    per_gpu_explanation: dict[str, str] = field(default_factory=dict)
    per_provider_explanation: dict[str, str] = field(default_factory=dict)
    solver: dict[str, Any] = field(default_factory=dict)  # every solve: rows, wall_s, proven
    diagnosis: Diagnosis | None = None  # no plan at all: the single-job planner's explanation
    prepared: PreparedJob | None = None  # the job with its model and candidate table
    job_figures: JobFigures | None = None  # the job as planned (plan_figures.job_figures)


class _Solves:
    """The solver calls of one comparison, summed into the contract's solver block."""

    def __init__(self, rows: int) -> None:
        self.rows, self.wall_s, self.calls, self.proven = rows, 0.0, 0, True

    def best(
        self, cands: Sequence[Candidate], deadline_h: float | None, budget_usd: float | None
    ) -> tuple[Candidate | None, list[str]]:
        result, best, core = solve_table(cands, deadline_h, budget_usd)
        self.wall_s += result.wall_s
        self.calls += 1
        self.proven = self.proven and result.proven_optimal
        return best, core

    def block(self, found: bool) -> dict[str, Any]:
        return {
            "name": "cp-sat",
            "status": "optimal" if found else "infeasible",
            "proven_optimal": self.proven,
            "wall_s": round(self.wall_s, 4),
            "rows": self.rows,
            "solves": self.calls,
        }


def why_no_plan(rows: Sequence[Candidate], deadline_h: float | None, budget_usd: float | None) -> str:
    """Why none of `rows` is a plan: the fastest misses the deadline, or the cheapest the
    budget, or each meets one requirement but not both."""
    fastest = min(rows, key=lambda c: (c.hours, c.cost_usd))
    cheapest = min(rows, key=lambda c: (c.cost_usd, c.hours))
    if deadline_h is not None and fastest.hours > deadline_h:
        return (
            f"deadline: the fastest plan needs {fastest.hours / HOURS_PER_DAY:.1f} days "
            f"({fastest.gpus} GPUs, ${fastest.cost_usd:,.0f})"
        )
    if budget_usd is not None and cheapest.cost_usd > budget_usd:
        return (
            f"budget: the cheapest plan costs ${cheapest.cost_usd:,.0f} "
            f"({cheapest.hours / HOURS_PER_DAY:.1f} days)"
        )
    return (
        "deadline and budget together: no plan meets both (fastest "
        f"{fastest.hours / HOURS_PER_DAY:.1f} days for ${fastest.cost_usd:,.0f}; cheapest "
        f"${cheapest.cost_usd:,.0f} in {cheapest.hours / HOURS_PER_DAY:.1f} days)"
    )


def _best_by(
    cands: Sequence[Candidate],
    key: Callable[[Candidate], str],
    deadline_h: float | None,
    budget_usd: float | None,
    solves: _Solves,
) -> tuple[dict[str, Candidate | None], dict[str, str]]:
    groups: dict[str, list[Candidate]] = {}
    for c in cands:
        groups.setdefault(key(c), []).append(c)
    out: dict[str, Candidate | None] = {}
    why: dict[str, str] = {}
    for name, rows in sorted(groups.items()):
        out[name] = solves.best(rows, deadline_h, budget_usd)[0]
        if out[name] is None:
            why[name] = why_no_plan(rows, deadline_h, budget_usd)
    return out, why


def break_even(cloud: Candidate, owned: Candidate, jobs_per_month: float | None = None) -> BreakEven:
    """When buying beats renting `cloud`.

    jobs: k such that k × cloud cost ≥ purchase (net of resale) + k × power of one job, i.e.
    k = net capital / (cloud cost − power cost per job). months: k jobs at the job's duty cycle
    (k / jobs_per_month, or k back to back on the boxes: k × their hours / 730 h). Continuous
    months: renting the cloud plan's instances 730 h/month vs powering the boxes 730 h/month.
    """
    off = owned.offering
    net_capital = off.box_net_price_usd * owned.instances
    power_job = off.usd_per_hour * owned.instances * owned.hours
    saving_per_job = cloud.cost_usd - power_job
    jobs = net_capital / saving_per_job if saving_per_job > 0 else None
    months = (
        None
        if jobs is None
        else (jobs / jobs_per_month if jobs_per_month else jobs * owned.hours / HOURS_PER_MONTH)
    )
    rate = jobs_per_month or (HOURS_PER_MONTH / owned.hours if owned.hours > 0 else None)
    cloud_month = cloud.usd_per_hour * HOURS_PER_MONTH
    power_month = off.usd_per_hour * owned.instances * HOURS_PER_MONTH
    c = cloud.offering
    return BreakEven(
        net_capital_usd=net_capital,
        power_usd_per_job=power_job,
        cloud_usd_per_job=cloud.cost_usd,
        jobs=jobs,
        months=months,
        months_continuous=net_capital / (cloud_month - power_month) if cloud_month > power_month else None,
        gpu=c.gpu_id,
        jobs_per_month=rate,
        cloud_plan=f"{cloud.instances}× {c.instance} ({cloud.gpus}× {c.gpu_id}, {c.provider} {c.pricing})",
    )


def compare_job(
    job: Job, rows: Sequence[OfferingRow] | None = None, base_dir: Path | None = None
) -> CompareResult:
    """Best plan per GPU type / provider, and cloud vs owned/buy side by side."""
    prep = prepare_job(job, rows, base_dir)
    cands = prep.table.candidates
    d, b = prep.deadline_h, prep.budget_usd
    solves = _Solves(len(cands))
    cloud = [c for c in cands if c.offering.kind == "cloud"]
    local = [c for c in cands if c.offering.kind != "cloud"]
    best_cloud = solves.best(cloud, d, b)[0] if cloud else None
    best_local = solves.best(local, d, b)[0] if local else None
    per_month = job.constraints.jobs_per_month
    # the owned/bought plan a break-even compares against: only one that buys boxes
    bought = best_local if best_local is not None and best_local.offering.box_net_price_usd > 0 else None
    be = break_even(best_cloud, bought, per_month) if best_cloud and bought else None
    per_gpu, gpu_why = _best_by(cands, lambda c: c.offering.gpu_id, d, b, solves)
    per_provider, provider_why = _best_by(cands, lambda c: c.offering.provider, d, b, solves)
    # the best cloud plan per GPU type: per_gpu's own where no owned/bought box has that type
    local_gpus = {c.offering.gpu_id for c in local}
    cloud_per_gpu = {g: p for g, p in per_gpu.items() if g not in local_gpus}
    cloud_per_gpu.update(
        _best_by(
            [c for c in cloud if c.offering.gpu_id in local_gpus], lambda c: c.offering.gpu_id, d, b, solves
        )[0]
    )
    per_gpu_be = {
        gpu: break_even(plan, bought, per_month)
        for gpu, plan in cloud_per_gpu.items()
        if plan is not None and bought is not None
    }
    found = best_cloud is not None or best_local is not None
    diagnosis = None
    if not found:  # the single-job planner's explanation: what binds and the nearest fix
        core = solves.best(cands, d, b)[1] if cands else []
        diagnosis = explain_infeasible(prep, core)

    def shown(c: Candidate | None) -> Candidate | None:  # a plan with its figures attached
        return None if c is None else with_figures(c, prep.job)

    return CompareResult(
        prep.job,
        {k: shown(v) for k, v in per_gpu.items()},
        {k: shown(v) for k, v in per_provider.items()},
        shown(best_cloud),
        shown(best_local),
        be,
        prep.table.rejected,
        per_gpu_be,
        gpu_why,
        provider_why,
        solves.block(found),
        diagnosis,
        prep,
        job_figures(prep),
    )
