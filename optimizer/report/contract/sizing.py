"""The JSON contract of `ccopt sizing --json`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from optimizer.report.contract.common import SCHEMA_VERSION, Contract, LayoutOut, PlaceOut
from optimizer.report.contract.settle import SettleOut
from optimizer.report.contract.train import CatalogOut

__all__ = ["SizingRunOut", "SettledOut", "SizingOutput"]


class SizingRunOut(PlaceOut):
    """One GPU type still in contention and the short run that would measure it (its place:
    where to run the sizing run, on the type it measures)."""

    plan_cost_usd: float = Field(description="the best plan of this GPU type (point estimate)")
    plan_cost_p10_usd: float
    plan_cost_p90_usd: float
    plan_days: float
    layout: LayoutOut
    step_time_s: float = Field(description="predicted seconds per step of the sizing run")
    warmup_steps: int = Field(description="steps before the reading (excluded)")
    measured_steps: int = Field(description="steps averaged for the reading")
    minutes: float = Field(description="wall time incl. start-up")
    cost_usd: float
    command: str = Field(
        description="the `ccopt calibrate` line to feed the reading back (MEASURED: what the run shows)"
    )
    settles: SettleOut | None = Field(
        default=None,
        description="when this type's cheaper plan could hold once measured: the chance, the "
        "saving and the expected saving of the reading (runs are ranked by it, largest first)",
    )


class SettledOut(Contract):
    gpu: str
    reason: str


class SizingOutput(Contract):
    """`ccopt sizing --json`."""

    schema_version: int = SCHEMA_VERSION
    status: Literal["contending", "settled", "infeasible"] = Field(
        description="contending: several GPU types' cost bands overlap; settled: one type wins "
        "even at its P90; infeasible: no plan"
    )
    job: str
    best_gpu: str | None
    runs: list[SizingRunOut]
    settled: list[SettledOut] = Field(
        default_factory=list, description="GPU types out of contention, and why"
    )
    total_cost_usd: float = Field(description="all sizing runs together")
    rule: dict[str, int | float] = Field(
        description="warm-up steps, minimum steps and seconds, start-up minutes, step-time CV, "
        "reading precision and level (GUESSES)"
    )
    catalog: CatalogOut | None = Field(
        default=None, description="the price tables used: source, as_of, age_days (as in plan)"
    )
