"""`ccopt compare`: the best plan per GPU type and per provider, and cloud vs owned/bought."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from optimizer.inputs.jobs.train import Job
from optimizer.pricing.owned import HOURS_PER_MONTH
from optimizer.solve.train.enumerate import Candidate
from optimizer.solve.train.model import plan_dict, prepare_job, solve_table

__all__ = ["compare_job", "break_even"]


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


def break_even(cloud: Candidate, owned: Candidate) -> dict[str, Any]:
    """When buying beats renting.

    jobs: k such that k × cloud cost ≥ purchase (net of resale) + k × power of one job, i.e.
    k = net capital / (cloud cost − power cost per job); months: the same for continuous use,
    renting the cloud plan's instances 730 h/month vs powering the boxes 730 h/month.
    """
    off = owned.offering
    net_capital = off.box_net_price_usd * owned.instances
    power_job = off.usd_per_hour * owned.instances * owned.hours
    saving_per_job = cloud.cost_usd - power_job
    cloud_month = cloud.usd_per_hour * HOURS_PER_MONTH
    power_month = off.usd_per_hour * owned.instances * HOURS_PER_MONTH
    return {
        "net_capital_usd": round(net_capital, 2),
        "power_usd_per_job": round(power_job, 2),
        "cloud_usd_per_job": round(cloud.cost_usd, 2),
        "jobs_to_break_even": round(net_capital / saving_per_job, 2) if saving_per_job > 0 else None,
        "months_to_break_even": round(net_capital / (cloud_month - power_month), 2)
        if cloud_month > power_month else None,
        "note": "net capital = purchase − resale; power only while running; cloud at the best "
                "cloud plan's hourly rate",
    }


def compare_job(job: Job, frame: Any = None, base_dir: Path | None = None) -> dict[str, Any]:
    """Best plan per GPU type / provider, and cloud vs owned/buy side by side (JSON-ready)."""
    prep = prepare_job(job, frame, base_dir)
    cands = prep.table.candidates
    d, b = prep.deadline_h, prep.budget_usd
    per_gpu = _best_by(cands, lambda c: c.offering.gpu_id, d, b)
    per_provider = _best_by(cands, lambda c: c.offering.provider, d, b)
    cloud = [c for c in cands if c.offering.kind == "cloud"]
    local = [c for c in cands if c.offering.kind != "cloud"]
    best_cloud = solve_table(cloud, d, b)[1] if cloud else None
    best_local = solve_table(local, d, b)[1] if local else None
    out: dict[str, Any] = {
        "job": job.name,
        "per_gpu": {k: plan_dict(v, job) if v else None for k, v in per_gpu.items()},
        "per_provider": {k: plan_dict(v, job) if v else None for k, v in per_provider.items()},
        "cloud": plan_dict(best_cloud, job) if best_cloud else None,
        "owned_or_bought": plan_dict(best_local, job) if best_local else None,
        "break_even": None,
        "rejected": prep.table.rejected,
    }
    if best_cloud and best_local and best_local.offering.box_net_price_usd > 0:
        out["break_even"] = break_even(best_cloud, best_local)
    return out
