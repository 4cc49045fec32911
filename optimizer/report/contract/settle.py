"""The JSON contract of a settling sizing run: `sizing_run` in `ccopt plan --json`, `settles` in
`ccopt sizing --json` (issue 45)."""

from __future__ import annotations

from pydantic import Field

from optimizer.report.contract.common import LayoutOut, PlaceOut

__all__ = ["SettleTargetOut", "SettleOut"]


class SettleTargetOut(PlaceOut):
    """The contender's plan that the reading could make the answer."""

    cost_usd: float = Field(description="its cost as planned now, at the job's confidence")
    cost_if_holds_usd: float = Field(
        description="its cost at the job's confidence after calibration, at multiplier_if_holds"
    )


class SettleOut(PlaceOut):
    """The sizing run that settles a contender, and what it is worth (solve/train/settle.py):
    its place is where to run the reading (one node reads the compute), on the type it measures."""

    layout: LayoutOut
    network_matters: bool = Field(
        description="the contender spans more instances than the reading: its inter-node "
        "network stays modelled, not measured"
    )
    step_time_s: float = Field(description="predicted seconds per step of the reading")
    warmup_steps: int = Field(description="steps before the reading (excluded)")
    measured_steps: int = Field(
        description="steps averaged: n = ceil((z·CV/E)²) pins the mean step to ±E at the level, "
        "at least min_steps and min_measure_s"
    )
    reading_precision: float = Field(description="E: the relative margin of the mean step time")
    reading_level: float = Field(description="the confidence level of that margin")
    step_time_cv: float = Field(description="CV: step-to-step variation assumed (GUESS)")
    minutes: float = Field(description="wall time incl. start-up")
    cost_usd: float = Field(description="the reading's instance-hours")
    target: SettleTargetOut
    confidence: float = Field(description="the job's confidence the contender is re-planned at")
    threshold_multiplier: float = Field(
        description="m*: the contender holds when its measured step is at most m* × the prediction"
    )
    p_holds: float = Field(description="P(m ≤ m*) under the contender's band as a split log-normal")
    multiplier_if_holds: float = Field(description="the median m given it holds: the band's P(p_holds/2)")
    saving_usd: float = Field(description="the plan's cost − target.cost_if_holds_usd")
    expected_saving_usd: float = Field(description="p_holds × saving_usd − cost_usd")
