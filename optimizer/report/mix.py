"""The `mix` object of `ccopt plan --json` from a MixOutcome (solve/train/mix/search.py)."""

from __future__ import annotations

from typing import Any

from optimizer.report.place import offering_place
from optimizer.solve.train.mix.search import MixOutcome, MixPlan
from optimizer.units import HOURS_PER_DAY

__all__ = ["mix_dict", "mix_plan_dict"]


def mix_plan_dict(p: MixPlan) -> dict[str, Any]:
    """One mixed cluster: its rows (type, pricing, count, micro-batch × accumulation), the
    balanced step, hours and cost."""
    rows = [
        {
            **offering_place(r.offering),
            "held": r.held,
            "instances": r.count,
            "gpus": r.gpus,
            "usd_per_hour": round(r.offering.usd_per_hour + r.offering.capital_usd_per_instance_hour, 6),
            "micro_batch": r.layout.micro_batch,
            "grad_accum": r.layout.grad_accum,
            "dp": r.layout.dp,
            "tp": r.layout.tp,
            "pp": r.layout.pp,
            "zero_stage": r.layout.zero_stage,
            "activation_checkpointing": r.layout.checkpointing,
            "type_step_time_s": round(r.step.time_s, 4),
            "idle_share": round(p.idle_share.get(r.offering.gpu_id, 0.0), 4),
        }
        for r in p.rows
    ]
    return {
        "kind": p.kind,
        "fabric": p.fabric,
        "rows": rows,
        "instances": p.instances,
        "gpus": p.gpus,
        "global_batch": p.global_batch,
        "steps": p.steps,
        "step_time_s": round(p.step_time_s, 4),
        "hours": round(p.hours, 3),
        "days": round(p.hours / HOURS_PER_DAY, 3),
        "cost_usd": round(p.cost_usd, 2),
        "confidence": p.confidence,
        "expected_spot_interruptions": None if p.spot is None else round(p.spot.expected_interruptions, 3),
    }


def mix_dict(m: MixOutcome | None) -> dict[str, Any] | None:
    """The `mix` block, or None when the job has nothing to mix (no pricing group or type pair
    was considered and no held reservation was left unused: no key is added, the output of such
    a job stays as it was)."""
    if m is None or not (m.considered or m.unused_held):
        return None
    if m.plan is not None:
        status = "only_plan" if m.single_cost_usd is None else "cheaper"
    else:
        status = "not_cheaper" if m.best is not None else "none"
    saving = m.saving_usd
    return {
        "status": status,
        "plan": None if m.plan is None else mix_plan_dict(m.plan),
        "best_mix": mix_plan_dict(m.best) if m.plan is None and m.best is not None else None,
        "single_cost_usd": None if m.single_cost_usd is None else round(m.single_cost_usd, 2),
        "saving_usd": None if saving is None else round(saving, 2),
        "why_not": list(m.reasons),
        "unused_held": list(m.unused_held),
        "solver": dict(m.solver),
    }
