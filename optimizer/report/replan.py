"""`ccopt replan --json`: a ReplanResult in its contract."""

from __future__ import annotations

from typing import Any

from optimizer.report.contract.common import emit
from optimizer.report.contract.replan import ReplanOutput
from optimizer.report.place import place_dict
from optimizer.solve.train.replan import ReplanOption
from optimizer.solve.train.replan_job import ReplanResult

__all__ = ["replan_json"]


def _option(o: ReplanOption, result: ReplanResult) -> dict[str, Any]:
    return {
        "kind": o.kind,
        **place_dict(o.row),
        "layout": o.row.layout.as_dict(),
        "hours": round(o.hours, 3),
        "cost_usd": round(o.cost_usd, 2),
        "switch_hours": round(o.switch_h, 4),
        "switch_usd": round(o.switch_usd, 2),
        "egress_usd": round(o.egress_usd, 2),
        "measured_speed": o.measured,
        "fits": o.fits(result.remaining),
    }


def replan_json(result: ReplanResult) -> dict[str, Any]:
    """The `ccopt replan --json` contract of `result`."""
    p, rem, c = result.progress, result.remaining, result.costs
    return emit(
        ReplanOutput,
        {
            "status": "infeasible" if result.choice is None else "optimal",
            "job": result.job.name,
            "confidence": result.job.constraints.confidence,
            "progress": {
                "tokens_done": p.tokens_done,
                "fraction_done": round(result.fraction_done, 6),
                "elapsed_hours": p.elapsed_hours,
                "spent_usd": round(result.spent_usd, 2),
                "slowness": round(result.slowness, 4),
                "predicted_step_time_s": round(result.current.step.time_s, 4),
                "slowness_source": result.slowness_source,
                "remaining_deadline_hours": None if rem.deadline_h is None else round(rem.deadline_h, 3),
                "remaining_budget_usd": None if rem.budget_usd is None else round(rem.budget_usd, 2),
            },
            "switch_costs": {
                "checkpoint_gb": round(c.checkpoint_gb, 2),
                "transfer_gbps": c.transfer_gbps,
                "transfer_hours": round(c.transfer_h, 4),
                "restart_minutes": c.restart_minutes,
                "egress_usd_per_gb": c.egress_usd_per_gb,
                "egress_usd": round(c.egress_usd, 2),
                "egress_source": result.egress_source,
            },
            "choice": None if result.choice is None else _option(result.choice, result),
            "best_per_kind": {k: _option(o, result) for k, o in result.best.items()},
            "explanation": result.infeasible,
        },
    )
