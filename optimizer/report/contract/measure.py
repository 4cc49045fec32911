"""The JSON contract of `ccopt measure --json` (also the calibration-point file it writes)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from optimizer.report.contract.common import SCHEMA_VERSION, Contract

__all__ = ["MeasureOutput"]


class MeasureOutput(Contract):
    """A few training steps measured on this machine: what `ccopt calibrate --from` reads."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["ccopt-calibration-point"] = Field(description="marks the file for calibrate")
    model: str = Field(description="the model's label (config.json name or module:factory)")
    model_kind: Literal["lm", "profile"] = Field(
        description="lm: a causal LM of a config.json (tokens); profile: a per-sample model"
    )
    builder: str = Field(
        description="what built the model (transformers, or the built-in decoder, or the module's factory)"
    )
    device: str = Field(description="cpu | cuda")
    device_name: str | None = Field(default=None, description="cuda: the device's own name")
    gpu: str | None = Field(
        default=None,
        description="the catalog GPU id of the device (null: "
        "CPU, or not in the catalog: calibrate asks for --gpu)",
    )
    precision: str
    optimizer: str
    micro_batch: int = Field(ge=1, description="samples per step")
    num_gpus: int = Field(ge=1)
    steps: int = Field(ge=1, description="timed steps")
    warmup_steps: int = Field(ge=0, description="steps run before timing (excluded)")
    step_time_s: float = Field(gt=0, description="mean timed step, seconds")
    samples_per_s: float = Field(gt=0)
    seq_len: int | None = Field(default=None, description="lm: tokens per sample")
    tokens_per_s: float | None = Field(default=None, description="lm: micro_batch × seq_len / step_time_s")
    trained_params: int = Field(ge=0)
    frozen_params: int = Field(ge=0)
    torch: str = Field(description="the PyTorch version that ran it")
    memory_metric: Literal["allocated"] | None = Field(
        default=None, description="what peak_memory_gib measures (null on CPU)"
    )
    peak_memory_gib: float | None = Field(
        default=None, description="cuda: torch.cuda.max_memory_allocated, GiB"
    )
    peak_reserved_gib: float | None = Field(
        default=None, description="cuda: torch.cuda.max_memory_reserved, GiB"
    )
    cpu_peak_rss_growth_gib: float | None = Field(
        default=None,
        description="cpu: growth of "
        "the process's peak resident set, GiB (an "
        "upper bound of what training held)",
    )
    note: str | None = None
