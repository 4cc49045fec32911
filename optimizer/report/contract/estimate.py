"""The JSON contract of `ccopt estimate` (DESIGN.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from optimizer.report.contract.common import (
    SCHEMA_VERSION,
    Contract,
    MemoryActivationFactor,
    MemoryGiB,
    StepOut,
)
from optimizer.report.contract.train import IntervalBasis

__all__ = ["ModelOut", "EstimateOutput"]


class ModelOut(Contract):
    name: str
    params: int
    active_params: int


class EstimateOutput(Contract):
    """`ccopt estimate --json` (train or serve mode)."""

    schema_version: int = SCHEMA_VERSION
    mode: Literal["train", "serve"]
    status: Literal["fits", "does_not_fit"] | None = Field(
        default=None, description="fits: the configuration fits GPU memory (as `fits`)"
    )
    model: ModelOut
    gpu: str
    gpus: int
    gpus_per_instance: int | None = Field(default=None, description="GPUs per instance (node)")
    gpus_per_node: int | None = Field(default=None, description="old name of gpus_per_instance")
    gpu_memory_gib: float
    layout: dict[str, int | str | bool | None] = Field(
        description="train: as in plan; serve: tp, replicas, batch, context"
    )
    memory_gib: MemoryGiB
    fits: bool
    inter_node_gbps: float | None = None
    inter_node_assumed: bool | None = Field(default=None, description="= inter_node_is_default")
    inter_node_is_default: bool | None = Field(
        default=None,
        description="the bandwidth is a "
        "documented default (the GPU class's or the "
        "catalog row's guess), not published or given",
    )
    instance: str | None = Field(
        default=None,
        description="--instance as PROVIDER:INSTANCE (e.g. aws:p5.48xlarge); see provider and instance_type",
    )
    provider: str | None = None
    instance_type: str | None = Field(default=None, description="the instance name alone")
    stack: str | None = None
    note: str | None = None
    seq_len: int | None = Field(
        default=None, description="train: tokens per sequence (1 for a per-sample model)"
    )
    step: StepOut | None = None
    step_time_s: float | None = Field(
        default=None, description="train: seconds per optimizer step (= step.time_s; the plan's name)"
    )
    step_time_s_p10: float | None = None
    step_time_s_p50: float | None = None
    step_time_s_p90: float | None = None
    interval_basis: IntervalBasis | None = Field(default=None, description="the evidence the band rests on")
    mfu_unclipped: float | None = Field(
        default=None, description="the model's MFU before the plausibility ceiling clipped it"
    )
    mfu_ceiling_note: str | None = Field(default=None, description="which ceiling clipped the MFU, and why")
    step_parts_s: dict[str, float] | None = None
    sample_unit: str | None = Field(
        default=None, description="a per-sample model: what a sample is (tokens_per_s then counts samples)"
    )
    samples_per_s: float | None = Field(default=None, description="a per-sample model: samples/s")
    band_source: str | None = Field(
        default=None,
        description="profile: the P10-P90 band is the profile's (measured GPU / generation); absent: fitted",
    )
    tokens_per_s: float | None = None
    tokens_per_s_per_gpu: float | None = None
    mfu: float | None = None
    hfu: float | None = None
    efficiency: float | None = Field(
        default=None,
        description="train: the effective compute efficiency of this layout (= effective_efficiency)",
    )
    effective_efficiency: float | None = Field(
        default=None, description="train: base efficiency × this layout's size factor"
    )
    base_efficiency: float | None = Field(
        default=None,
        description="train: the GPU type × "
        "precision's efficiency before the size factor (what "
        "calibrate fits and stores)",
    )
    calibrated: bool | None = None
    memory_calibrated: bool | None = Field(
        default=None,
        description="train: activation memory scaled by measured peaks of this model × stack "
        "(`ccopt calibrate --peak-memory-gib`)",
    )
    memory_activation_factor: MemoryActivationFactor = None
    memory_device_gib_p10: float | None = Field(
        default=None,
        description="train: memory_gib.device at the P10 of the memory band (measured ÷ "
        "predicted peak, widened for stacks the model was never shaped on)",
    )
    memory_device_gib_p90: float | None = Field(
        default=None,
        description="train: memory_gib.device at the P90 of the memory band (above "
        "gpu_memory_gib: at least 1 run in 10 of a stack like the new sources' would not fit)",
    )
    precision: str | None = None
    quantization: str | None = Field(default=None, description="serve: old name of precision")
    kv_cache_precision: str | None = None
    ttft_s: float | None = Field(
        default=None, description="serve: time to first token, 4 significant figures (as serve)"
    )
    tpot_ms: float | None = None
    decode_step_ms: float | None = None
    output_tokens_per_s: float | None = None
    requests_per_s: float | None = None
    requests_per_s_per_replica: float | None = None
    bound: str | None = Field(default=None, description="serve: memory | compute (decode)")
