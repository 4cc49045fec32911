"""The JSON contract of batch results: `ccopt batch --json` (DESIGN.md, plus extra fields)."""

from __future__ import annotations

from typing import Any

from optimizer.report.contract.batch import BatchOutput
from optimizer.report.contract.common import emit, explanation_of
from optimizer.report.train import plan_dict, solver_block
from optimizer.solve.batch.problem import BatchResult, Explanation, JobRows, ScheduledJob

__all__ = ["batch_dict"]


def _job_dict(
    result: BatchResult, job: JobRows, s: ScheduledJob | None, why: dict[str, str]
) -> dict[str, Any]:
    """One job: its plan fields and slot when scheduled, else dropped/unplanned."""
    spec = job.spec
    entry: dict[str, Any] = {"name": job.name}
    if s is not None and s.row is not None:
        entry.update(plan_dict(s.row.candidate, result.figures[job.name]))
        entry.update(
            status="scheduled",
            start_hour=round(s.start_h or 0.0, 2),
            end_hour=round(s.end_h or 0.0, 2),
            slot_end_hour=round(s.slot_end_h or 0.0, 2),
            resources=[result.problem.resources[k].label for k, _ in s.row.usage] or ["cloud (no quota)"],
            placement=why.get(job.name),
        )
    else:
        entry.update(status="dropped" if s is not None else "unplanned", start_hour=None, end_hour=None)
    workload = spec.job.workload if spec.job is not None else None
    entry.update(
        model=spec.model_name,
        stack=workload.stack if workload is not None else None,
        workload_kind=workload.kind if workload is not None else None,
        seq_len=workload.seq_len if workload is not None else None,
        release_hour=round(spec.release_h, 2),
        deadline_hour=spec.deadline_h,
        priority=spec.priority,
        value_usd=spec.penalty_usd,
        candidates=len(job.rows),
        rows=len(job.rows),
    )
    return entry


def _resource_dicts(result: BatchResult) -> list[dict[str, Any]]:
    """Each shared resource with its capacity, reservation size and usage over time."""
    out = []
    for key, res in result.problem.resources.items():
        item: dict[str, Any] = {
            "key": key,
            "kind": res.kind,
            "label": res.label,
            "capacity": res.capacity,
            "unit": res.unit,
        }
        if res.kind == "reservation":
            item.update(
                reserved=result.reserved.get(key, 0), commitment_usd_per_instance=round(res.commitment_usd, 2)
            )
        if res.window_h is not None:
            item["window_h"] = [round(res.window_h[0], 4), round(res.window_h[1], 4)]
        profile = result.usage.get(key, [])
        item.update(peak=max((p[2] for p in profile), default=0), usage=profile)
        out.append(item)
    return out


def _explanation_dict(expl: Explanation | None) -> dict[str, Any] | None:
    if expl is None:
        return None
    return explanation_of(
        expl.message,
        expl.conflict[0] if expl.conflict else None,
        [
            {
                "requirement": f.requirement,
                "change": f.change,
                "cost_usd": f.total_cost_usd,
                "total_cost_usd": f.total_cost_usd,
                "detail": f.detail,
            }
            for f in expl.fixes
        ],
        conflict=expl.conflict,
        labels=expl.labels,
        message=expl.message,
    )


def batch_dict(result: BatchResult) -> dict[str, Any]:
    """A BatchResult in the `ccopt batch --json` contract of DESIGN.md (plus extra fields).

    Args:
        result: what solve_batch / plan_batch returned.

    Returns:
        status, total_cost_usd (None when nothing is planned), cost_breakdown_usd, jobs (plan
        fields + start_hour/end_hour), dropped, resources, explanation, notes, solver.
    """
    problem = result.problem
    by_name = {s.name: s for s in result.jobs}
    why = result.placements
    return emit(
        BatchOutput,
        {
            "status": str(result.status),
            "total_cost_usd": round(result.total_cost_usd, 2) if result.jobs else None,
            "cost_breakdown_usd": {
                "cloud": round(result.cloud_usd, 2),
                "owned": round(result.owned_usd, 2),
                "reservations": round(result.reservation_usd, 2),
                "dropped_value": round(result.dropped_value_usd, 2),
            },
            "horizon_hours": problem.horizon_h,
            "jobs": [_job_dict(result, job, by_name.get(job.name), why) for job in problem.jobs],
            "dropped": [s.name for s in result.jobs if s.row is None],
            "resources": _resource_dicts(result),
            "explanation": _explanation_dict(result.explanation),
            "notes": result.notes,
            **({"catalog": result.catalog} if result.catalog is not None else {}),
            "solver": _batch_solver(result.solver, str(result.status)),
        },
    )


def _batch_solver(solver: dict[str, Any], status: str) -> dict[str, Any]:
    """The batch solver block: counts named num_* beside their older names (`jobs` and
    `resources` are lists at the top level of the same output)."""
    block = solver_block(solver, status)
    for old, new in (("jobs", "num_jobs"), ("resources", "num_resources"), ("model_rows", "num_model_rows")):
        if block.get(old) is not None:
            block[new] = block[old]
    return block
