"""The `mix` object of `ccopt plan --json`: a mixed cluster (issue 32)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from optimizer.report.contract.common import Contract

__all__ = ["MixRowOut", "MixPlanOut", "MixOut"]


class MixRowOut(Contract):
    """Instances of one (instance type, pricing model) in a mix and how its GPUs run."""

    gpu: str
    provider: str
    instance: str
    region: str
    pricing: str = Field(description="on_demand | spot | reserved_1y | reserved_3y | owned")
    held: bool = Field(description="a reservation the team already holds ([[constraints.reserved_held]])")
    instances: int
    gpus: int
    usd_per_hour: float = Field(description="USD per instance-hour this job pays")
    micro_batch: int
    grad_accum: int
    dp: int = Field(description="data-parallel GPUs of the whole mix")
    tp: int
    pp: int
    zero_stage: int
    activation_checkpointing: str
    type_step_time_s: float = Field(
        description="this type's step time (a GPU-type mix waits for the slowest)"
    )
    idle_share: float = Field(description="share of each step this type's GPUs wait for the slowest type")


class MixPlanOut(Contract):
    """A mixed cluster at the job's confidence."""

    kind: Literal["pricing", "gpu_types"] = Field(
        description="pricing: pricing models on one instance type | gpu_types: two GPU types on one fabric"
    )
    fabric: str = Field(description="where its instances join one job (provider region, or the owned site)")
    rows: list[MixRowOut]
    instances: int
    gpus: int
    global_batch: int
    steps: int
    step_time_s: float = Field(description="the (balanced) step: the slowest type's")
    hours: float
    days: float
    cost_usd: float
    confidence: float | None
    expected_spot_interruptions: float | None = None


class MixOut(Contract):
    """The mixed cluster of a job: shown when cheaper than the plan (or the only plan)."""

    status: Literal["cheaper", "only_plan", "not_cheaper", "none"] = Field(
        description="cheaper: the mix costs less than `plan` | only_plan: no single-type plan "
        "meets the job, the mix does | not_cheaper: the best mix costs no less | none: no mix meets the job"
    )
    plan: MixPlanOut | None = Field(description="the mix shown (cheaper or the only plan)")
    best_mix: MixPlanOut | None = Field(default=None, description="not_cheaper: the best mix found")
    single_cost_usd: float | None = Field(description="the best single-type plan's cost")
    saving_usd: float | None = Field(description="single_cost_usd − the mix's cost")
    why_not: list[str] = Field(
        default_factory=list, description="why no (cheaper) mix: fabric, balance loss, cost"
    )
    unused_held: list[str] = Field(
        default_factory=list,
        description="[[constraints.reserved_held]] entries the job may not use (a GPU type outside "
        "gpu_types), each with why",
    )
    solver: dict[str, float] = Field(
        default_factory=dict, description="CP-SAT models solved and their wall time"
    )
