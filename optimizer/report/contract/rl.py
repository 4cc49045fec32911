"""The JSON contract of `ccopt rl` (RL post-training plans, issue 46)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from optimizer.report.contract.common import SCHEMA_VERSION, AnswerStatus, Contract, ExplanationOut, SolverOut
from optimizer.report.contract.train import CatalogOut

__all__ = ["RlOutput", "RlPlanOut", "RlPoolOut", "RlStepOut", "RlJobOut"]


class RolloutOut(Contract):
    """The rollout engine of a step: replicas of `tp` GPUs, each with `batch` sequences."""

    tp: int
    replicas: int
    batch: int = Field(description="concurrent sequences per replica")
    bulk_s: float | None = Field(default=None, description="generation at the full batch, s")
    tail_s: float | None = Field(default=None, description="what the longest response adds, s")
    gpu_memory_utilization: float | None = Field(
        default=None, description="share of the card the rollout engine may take (vLLM)"
    )


class RlPoolOut(Contract):
    """One pool: `instances` of an offering, in its role."""

    role: Literal["colocated", "generation", "training"]
    gpu: str
    gpus: int
    instances: int
    gpus_per_instance: int
    provider: str
    instance: str
    region: str
    pricing: str
    usd_per_hour: float = Field(description="the pool's instances together")
    network_gbps: float = Field(description="instances × Gbit/s per instance")
    rollout: RolloutOut | None = None


class RlStepOut(Contract):
    """One RL step by phase, point prediction (seconds)."""

    time_s: float
    generation_s: float
    logprob_s: float = Field(description="reference, old-policy, critic and reward forwards")
    update_s: float = Field(description="policy update (+ critic update for PPO)")
    sync_s: float = Field(description="trainer → generator weights (or the colocated reshard)")
    pipelined: bool = Field(description="generation overlaps training (one-step off-policy)")
    training_layout: dict[str, int | str]
    rollout: RolloutOut | None = None


class RlStepP50Out(Contract):
    """One RL step by phase at P50: the point × the RL band's median (seconds)."""

    time_s: float
    generation_s: float
    logprob_s: float
    update_s: float
    sync_s: float = Field(description="network arithmetic, unbanded")


class RlPlanOut(Contract):
    """A plan: its pools, its step and its whole run at the job's confidence."""

    mode: Literal["colocated", "separate"]
    label: str
    gpus: int
    pools: list[RlPoolOut]
    step: RlStepOut
    step_p50: RlStepP50Out | None = Field(default=None, description="the step at P50, by phase")
    step_s_at_confidence: float
    hours: float
    cost_usd: float
    usd_per_hour: float


class RlSetupOut(Contract):
    """The step as planned (DPO: a chosen and a rejected sequence per pair)."""

    prompts_per_step: int
    samples_per_prompt: int
    prompt_tokens_mean: float
    prompt_tokens_max: int
    response_tokens_mean: float
    response_tokens_max: int
    reference: bool
    critic: bool


class RlJobOut(Contract):
    name: str
    kind: Literal["dpo", "grpo", "ppo"]
    model: str
    params: int
    steps: int
    sequences_per_step: int
    rl: RlSetupOut
    pools: Literal["colocated", "separate", "either"]
    async_steps: int
    deadline_hours: float | None
    budget_usd: float | None
    confidence: float


class RlOutput(Contract):
    """`ccopt rl --json`."""

    schema_version: int = Field(default=SCHEMA_VERSION)
    status: AnswerStatus
    job: RlJobOut
    plan: RlPlanOut | None = Field(description="null when infeasible")
    other_mode: RlPlanOut | None = Field(description="the cheapest plan of the other pool mode")
    explanation: ExplanationOut | None
    solver: SolverOut
    catalog: CatalogOut | None
