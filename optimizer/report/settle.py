"""A settling sizing run as its JSON block (`sizing_run` of plan, `settles` of sizing)."""

from __future__ import annotations

from typing import Any

from optimizer.report.place import place_dict
from optimizer.solve.train.settle import Settle
from optimizer.solve.train.sizing_rule import SizingRule

__all__ = ["settle_dict"]


def settle_dict(s: Settle, confidence: float, rule: SizingRule | None = None) -> dict[str, Any]:
    """The block of one settling run (contract/settle.py SettleOut)."""
    rule = rule or SizingRule()
    probe, target = s.probe, s.target
    return {
        **place_dict(probe),
        "layout": probe.layout.as_dict(),
        "network_matters": s.network_matters,
        "step_time_s": round(probe.step.time_s, 4),
        "warmup_steps": s.warmup_steps,
        "measured_steps": s.measured_steps,
        "reading_precision": rule.reading_precision,
        "reading_level": rule.reading_level,
        "step_time_cv": rule.step_time_cv,
        "minutes": round(s.minutes, 1),
        "cost_usd": round(s.cost_usd, 2),
        "target": {
            **place_dict(target),
            "cost_usd": round(target.cost_usd, 2),
            "cost_if_holds_usd": round(s.cost_if_holds_usd, 2),
        },
        "confidence": confidence,
        "threshold_multiplier": round(s.threshold, 4),
        "p_holds": round(s.p_holds, 4),
        "multiplier_if_holds": round(s.multiplier_if_holds, 4),
        "saving_usd": round(s.saving_usd, 2),
        "expected_saving_usd": round(s.expected_saving_usd, 2),
    }
