"""`ccopt sizing --json`: a SizingResult in its contract."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from optimizer.report.contract.common import emit
from optimizer.report.contract.sizing import SizingOutput
from optimizer.report.place import place_dict
from optimizer.report.settle import settle_dict
from optimizer.report.train import figures_of
from optimizer.solve.train.sizing import SizingResult, SizingRule

__all__ = ["sizing_json"]


def sizing_json(result: SizingResult, rule: SizingRule | None = None) -> dict[str, Any]:
    """The `ccopt sizing --json` contract of `result` (runs ranked by expected saving)."""
    q = result.job.constraints.confidence
    settles = {s.gpu: settle_dict(s, q, rule) for s in result.settles}
    runs = [
        {
            **place_dict(r.probe),  # where the run goes: on the GPU type it measures
            "plan_cost_usd": round(r.plan.cost_usd, 2),
            "plan_cost_p10_usd": round(r.cost_p10_usd, 2),
            "plan_cost_p90_usd": round(r.cost_p90_usd, 2),
            "plan_days": round(figures_of(r.plan).days, 2),
            "layout": r.probe.layout.as_dict(),
            "step_time_s": round(r.probe.step.time_s, 4),
            "warmup_steps": r.warmup_steps,
            "measured_steps": r.measured_steps,
            "minutes": round(r.minutes, 1),
            "cost_usd": round(r.cost_usd, 2),
            "command": r.command,
            "settles": settles[r.gpu] if r.gpu in settles else None,
        }
        for r in result.runs
    ]
    status = "infeasible" if result.best_gpu is None else "contending" if len(result.runs) > 1 else "settled"
    return emit(
        SizingOutput,
        {
            "status": status,
            "job": result.job.name,
            "best_gpu": result.best_gpu,
            "runs": runs,
            "settled": [{"gpu": g, "reason": why} for g, why in result.settled.items()],
            "total_cost_usd": round(result.total_cost_usd, 2),
            "rule": asdict(rule or SizingRule()),  # step counts stay whole numbers
        },
    )
