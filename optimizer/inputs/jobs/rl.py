"""RL post-training job files (TOML): `[workload] kind = "dpo" | "grpo" | "ppo"` with `[rl]`.

An RL job reuses `[model]`, `[[hardware.*]]` and `[assumptions]` of the other job kinds::

    [model]
    preset = "qwen2.5-7b"
    [workload]
    kind = "grpo"
    [rl]
    prompts_per_step = 128
    samples_per_prompt = 16
    prompt_tokens_mean = 512
    prompt_tokens_max = 1024
    response_tokens_mean = 2048
    response_tokens_max = 8192
    steps = 500
    [rl.pools]
    mode = "either"                # colocated | separate | either
    [constraints]
    deadline_hours = 72
    budget_usd = 20000
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from optimizer.inputs.jobs.common import (
    MAX_DAYS,
    JobFile,
    StrictModel,
    confidence_field,
)
from optimizer.inputs.jobs.constraint_fields import (
    AllowedGpuTypes,
    AllowedNames,
    BudgetUsd,
    CloudAllowed,
    PricingModels,
)
from optimizer.inputs.jobs.kind import job_of_kind
from optimizer.inputs.toml_file import read_toml_as
from optimizer.model.rl.setup import RlAssumptions, RlSetup
from optimizer.vocabulary import RL_KINDS

__all__ = ["RlJob", "RlWorkload", "RlTable", "RlPools", "RlConstraints", "load_rl_job", "rl_job_from_dict"]

#: the longest sequence an RL job may state (prompt or response), tokens
MAX_SEQUENCE_TOKENS = 2**20


class RlWorkload(StrictModel):
    """`[workload]` of an RL job: its kind."""

    kind: Literal["dpo", "grpo", "ppo"] = Field(
        description="dpo (policy + frozen reference on chosen/rejected pairs) | grpo (rollouts, "
        "reference and old-policy log-probs, update, weight sync) | ppo (grpo + critic)"
    )


class RlPools(StrictModel):
    """`[rl.pools]`: one pool for every phase, or a generation pool beside a training pool."""

    mode: Literal["colocated", "separate", "either"] = Field(
        default="either",
        description="colocated (phases alternate on one pool, verl hybrid engine) | separate "
        "(a generation pool and a training pool, OpenRLHF / NeMo-RL non-colocated) | either",
    )
    generation_gpu_types: AllowedGpuTypes = Field(
        default=None, description="GPU types the generation pool may use (default: all)"
    )
    training_gpu_types: AllowedGpuTypes = Field(
        default=None, description="GPU types the training pool may use (default: all)"
    )
    max_gpus_per_pool: int = Field(
        default=64, gt=0, le=1024, description="at most this many GPUs in one pool"
    )


class RlAssumptionsIn(StrictModel):
    """`[rl.assumptions]`: the RL step's guessed constants (optimizer/model/rl/setup.py)."""

    forward_share: float | None = Field(
        default=None, ge=0.05, le=1, description="forward-only pass ÷ forward + backward (1/3)"
    )
    sync_link_efficiency: float | None = Field(
        default=None, ge=0.01, le=1, description="achieved share of the network by the weight sync"
    )
    sync_bytes_per_param: float | None = Field(
        default=None, ge=0.5, le=16, description="bytes per parameter sent at a weight sync (2: bf16)"
    )
    colocated_switch_s: float | None = Field(
        default=None, ge=0, le=3600, description="seconds per step to switch a colocated pool's phases"
    )
    decode_host_s_per_step: float | None = Field(
        default=None, ge=0, le=1, description="host seconds per rollout decode iteration (1.2e-3)"
    )
    eager_host_s_per_layer: float | None = Field(
        default=None, ge=0, le=0.1, description="host seconds per layer of an eager decode iteration (3e-4)"
    )
    host_copy_efficiency: float | None = Field(
        default=None, ge=0.01, le=1, description="PCIe link share of a state copy to host (0.41)"
    )

    step_band: tuple[float, float, float] | None = Field(
        default=None,
        description="(P10, P50, P90) of measured ÷ predicted RL step times (each 0.1-100, rising)",
    )

    @model_validator(mode="after")
    def _band(self) -> RlAssumptionsIn:
        b = self.step_band
        if b is not None and not (0.1 <= b[0] <= b[1] <= b[2] <= 100):
            raise ValueError(f"step_band = {list(b)}; allowed: three rising numbers from 0.1 to 100")
        return self

    def apply(self, base: RlAssumptions) -> RlAssumptions:
        changes = {k: v for k, v in self.model_dump().items() if v is not None}
        return RlAssumptions(**{**base.__dict__, **changes})


class RlTable(StrictModel):
    """`[rl]`: prompts, samples, lengths and steps of the RL run, and which networks run."""

    prompts_per_step: int = Field(gt=0, le=2**20, description="prompts per RL step (DPO: preference pairs)")
    samples_per_prompt: int = Field(
        default=1, gt=0, le=1024, description="responses per prompt (GRPO group size; DPO: ignored, 2)"
    )
    prompt_tokens_mean: float = Field(gt=0, le=MAX_SEQUENCE_TOKENS, description="mean prompt tokens")
    prompt_tokens_max: int = Field(gt=0, le=MAX_SEQUENCE_TOKENS, description="longest prompt, tokens")
    response_tokens_mean: float = Field(gt=0, le=MAX_SEQUENCE_TOKENS, description="mean response tokens")
    response_tokens_max: int = Field(gt=0, le=MAX_SEQUENCE_TOKENS, description="longest response, tokens")
    steps: int = Field(gt=0, le=10**7, description="RL steps (one rollout + update each)")
    reference: bool = Field(default=True, description="a frozen reference model's log-probs (KL term)")
    critic: bool | None = Field(default=None, description="a value network (default: true for ppo only)")
    reward_model_params_b: float = Field(
        default=0.0, ge=0, le=2000, description="a reward network's parameters, billions (0: rule-based)"
    )
    async_steps: int = Field(
        default=0, ge=0, le=1, description="0: on-policy; 1: one-step off-policy (separate pools overlap)"
    )
    pools: RlPools = Field(default=RlPools(), description="`[rl.pools]`: colocated or separate pools")
    assumptions: RlAssumptionsIn = Field(
        default=RlAssumptionsIn(), description="`[rl.assumptions]`: the RL step's guessed constants"
    )

    @model_validator(mode="after")
    def _check(self) -> RlTable:
        if self.prompt_tokens_mean > self.prompt_tokens_max:
            raise ValueError(
                f"prompt_tokens_mean = {self.prompt_tokens_mean:g} exceeds prompt_tokens_max = "
                f"{self.prompt_tokens_max}; allowed: a mean ≤ the max"
            )
        if self.response_tokens_mean > self.response_tokens_max:
            raise ValueError(
                f"response_tokens_mean = {self.response_tokens_mean:g} exceeds response_tokens_max "
                f"= {self.response_tokens_max}; allowed: a mean ≤ the max"
            )
        return self


class RlConstraints(StrictModel):
    """`[constraints]` of an RL job: deadline, budget, confidence and what may be used."""

    deadline_hours: float | None = Field(
        default=None, gt=0, le=MAX_DAYS * 24, description="finish within this"
    )
    budget_usd: BudgetUsd = None
    confidence: float = confidence_field("the deadline and the budget are met")
    gpu_types: AllowedGpuTypes = Field(
        default=None, description="GPU types allowed in either pool (default: all)"
    )
    providers: AllowedNames = Field(default=None, description="providers allowed")
    regions: AllowedNames = Field(default=None, description="regions allowed")
    pricing: PricingModels = ("on_demand",)
    cloud: CloudAllowed = True


class RlJob(JobFile):
    """One RL post-training job file."""

    name: str = Field(default="rl", description="a label for the job in outputs")
    workload: RlWorkload = Field(description='`[workload]`: kind = "dpo" | "grpo" | "ppo"')
    rl: RlTable = Field(description="`[rl]`: prompts, samples, lengths, steps, networks and pools")
    constraints: RlConstraints = Field(
        default=RlConstraints(), description="`[constraints]`: deadline, budget and what may be used"
    )

    def setup(self) -> RlSetup:
        """The step the model times (DPO: a chosen and a rejected sequence per pair)."""
        r, kind = self.rl, self.workload.kind
        return RlSetup(
            kind=kind,
            prompts_per_step=r.prompts_per_step,
            samples_per_prompt=2 if kind == "dpo" else r.samples_per_prompt,
            prompt_tokens_mean=r.prompt_tokens_mean,
            prompt_tokens_max=r.prompt_tokens_max,
            response_tokens_mean=r.response_tokens_mean,
            response_tokens_max=r.response_tokens_max,
            reference=True if kind == "dpo" else r.reference,
            critic=(kind == "ppo") if r.critic is None else r.critic,
            reward_model_params=r.reward_model_params_b * 1e9,
            async_steps=r.async_steps,
        )

    def named_regions(self) -> tuple[str, ...]:
        return tuple(self.constraints.regions or ())


def rl_job_from_dict(data: dict[str, Any], source: str = "job") -> RlJob:
    """Validate a decoded RL job table.

    Raises:
        ConfigError: one line naming the file, the field, the problem and allowed values.
    """
    return job_of_kind(
        RlJob,
        data,
        source,
        takes=lambda kind: kind in RL_KINDS,
        refusal=f"is not an RL job; allowed: {', '.join(RL_KINDS)} "
        '(`ccopt plan` for training kinds, `ccopt serve` for kind = "serve")',
    )


def load_rl_job(path: str | Path) -> tuple[RlJob, Path]:
    """Read and validate an RL job TOML. Returns the job and its directory.

    Raises:
        ConfigError: missing file, invalid TOML, or an invalid field.
    """
    return read_toml_as(path, rl_job_from_dict)
