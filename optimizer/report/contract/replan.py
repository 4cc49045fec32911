"""The JSON contract of `ccopt replan --json` (issue 45)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from optimizer.report.contract.common import SCHEMA_VERSION, Contract, LayoutOut, PlaceOut
from optimizer.report.contract.train import CatalogOut

__all__ = ["ReplanOptionOut", "ReplanProgressOut", "SwitchCostsOut", "ReplanOutput"]


class ReplanProgressOut(Contract):
    """Where the job stands."""

    tokens_done: float
    fraction_done: float
    elapsed_hours: float
    spent_usd: float = Field(description="as given, else the current offering's price × elapsed hours")
    slowness: float = Field(description="measured ÷ predicted step time of the current GPU type")
    predicted_step_time_s: float = Field(description="the model's step time on the current cluster")
    slowness_source: Literal["measured step time", "progress", "model's point"]
    remaining_deadline_hours: float | None
    remaining_budget_usd: float | None


class SwitchCostsOut(Contract):
    """What moving the job costs (GUESS figures overridable in [progress])."""

    checkpoint_gb: float
    transfer_gbps: float = Field(description="GUESS 5 unless [progress] transfer_gbps")
    transfer_hours: float
    restart_minutes: float = Field(description="GUESS 20 unless [progress] restart_minutes")
    egress_usd_per_gb: float
    egress_usd: float
    egress_source: str


class ReplanOptionOut(PlaceOut):
    """One way to finish the rest."""

    kind: Literal["keep", "grow", "shrink", "switch"]
    layout: LayoutOut
    hours: float = Field(description="wall hours to finish the rest, switching included")
    cost_usd: float = Field(description="to finish the rest, switching included")
    switch_hours: float = Field(description="restart (+ checkpoint transfer when the place changes)")
    switch_usd: float = Field(
        description="what switching costs: checkpoint egress when the provider or region changes, plus "
        "the instance-hours paid while nothing trains (restart, transfer, start-up of a new cluster "
        "or of a grow's added instances)"
    )
    egress_usd: float | None = Field(default=None, description="of switch_usd: the checkpoint's egress")
    measured_speed: bool = Field(description="hours from the job's own speed (same GPU type), not its band")
    fits: bool = Field(description="within the remaining deadline and budget")


class ReplanOutput(Contract):
    """`ccopt replan --json`."""

    schema_version: int = SCHEMA_VERSION
    status: Literal["optimal", "infeasible"]
    job: str
    confidence: float
    progress: ReplanProgressOut
    switch_costs: SwitchCostsOut
    choice: ReplanOptionOut | None = Field(description="the cheapest option that fits (null: none)")
    best_per_kind: dict[str, ReplanOptionOut] = Field(
        description="keep, grow, shrink, switch: the cheapest that fits, else the fastest"
    )
    explanation: str | None = Field(default=None, description="infeasible: what binds and the nearest fix")
    catalog: CatalogOut | None = None
