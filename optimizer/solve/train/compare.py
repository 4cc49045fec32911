"""`ccopt compare`: the best plan per GPU type and per provider, and cloud vs owned/bought."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from optimizer.inputs.jobs.train import Job
from optimizer.pricing.schema import OfferingRow
from optimizer.solve.train.enumerate import Candidate
from optimizer.solve.train.model import solve_table
from optimizer.solve.train.prepare import prepare_job
from optimizer.units import HOURS_PER_MONTH

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
    cloud_plan: str | None = None
    note: str = ("net capital = purchase − resale; power only while running; months at the "
                 "job's duty cycle: constraints.jobs_per_month, else jobs back to back on the boxes")


@dataclass(frozen=True)
class CompareResult:
    job: Job
    per_gpu: dict[str, Candidate | None]
    per_provider: dict[str, Candidate | None]
    cloud: Candidate | None
    local: Candidate | None
    break_even: BreakEven | None
    rejected: dict[str, str]
    break_even_per_gpu: dict[str, BreakEven] = field(default_factory=dict)


def _best_by(cands: Sequence[Candidate], key: Callable[[Candidate], str],
             deadline_h: float | None, budget_usd: float | None) -> dict[str, Candidate | None]:
    groups: dict[str, list[Candidate]] = {}
    for c in cands:
        groups.setdefault(key(c), []).append(c)
    out: dict[str, Candidate | None] = {}
    for name, rows in sorted(groups.items()):
        _res, best, _core = solve_table(rows, deadline_h, budget_usd)
        out[name] = best
    return out


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
    months = None if jobs is None else (
        jobs / jobs_per_month if jobs_per_month else jobs * owned.hours / HOURS_PER_MONTH)
    cloud_month = cloud.usd_per_hour * HOURS_PER_MONTH
    power_month = off.usd_per_hour * owned.instances * HOURS_PER_MONTH
    c = cloud.offering
    return BreakEven(
        net_capital_usd=net_capital, power_usd_per_job=power_job, cloud_usd_per_job=cloud.cost_usd,
        jobs=jobs, months=months,
        months_continuous=net_capital / (cloud_month - power_month)
        if cloud_month > power_month else None,
        gpu=c.gpu_id, cloud_plan=f"{cloud.instances}× {c.instance} ({cloud.gpus}× {c.gpu_id}, "
                                 f"{c.provider} {c.pricing})")


def compare_job(job: Job, rows: Sequence[OfferingRow] | None = None,
                base_dir: Path | None = None) -> CompareResult:
    """Best plan per GPU type / provider, and cloud vs owned/buy side by side."""
    prep = prepare_job(job, rows, base_dir)
    cands = prep.table.candidates
    d, b = prep.deadline_h, prep.budget_usd
    cloud = [c for c in cands if c.offering.kind == "cloud"]
    local = [c for c in cands if c.offering.kind != "cloud"]
    best_cloud = solve_table(cloud, d, b)[1] if cloud else None
    best_local = solve_table(local, d, b)[1] if local else None
    per_month = job.constraints.jobs_per_month
    buys = best_local is not None and best_local.offering.box_net_price_usd > 0
    be = break_even(best_cloud, best_local, per_month) if best_cloud and buys else None
    cloud_per_gpu = _best_by(cloud, lambda c: c.offering.gpu_id, d, b)
    per_gpu_be = {gpu: break_even(plan, best_local, per_month)
                  for gpu, plan in cloud_per_gpu.items() if plan is not None and buys}
    return CompareResult(job, _best_by(cands, lambda c: c.offering.gpu_id, d, b),
                         _best_by(cands, lambda c: c.offering.provider, d, b), best_cloud,
                         best_local, be, prep.table.rejected, per_gpu_be)
