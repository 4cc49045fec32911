"""Job-file tables of a model known per sample: `[model.profile]` and `[model.measured]`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from optimizer.inputs.jobs.strict import GpuName, StrictModel
from optimizer.model.profile import SAMPLE_UNITS, MeasuredPoint, SampleProfile
from optimizer.model.setup import Checkpointing, Optimizer, TrainPrecision
from optimizer.units import MIB

__all__ = ["MeasuredIn", "ProfileIn"]


class MeasuredIn(StrictModel):
    """`[model.measured]` / `[[model.measured]]`: one training run you measured."""

    gpu: GpuName = Field(description="GPU type of the run (id or alias, `ccopt gpus`)")
    precision: TrainPrecision = Field(default="bf16", description="precision of the run")
    micro_batch: int = Field(gt=0, le=2**20, description="samples per GPU per micro-batch")
    samples_per_s: float = Field(
        gt=0, le=1e12, description="samples/s over all GPUs of the run, warm-up excluded"
    )
    num_gpus: int = Field(default=1, gt=0, le=10**6, description="GPUs of the run (data parallel)")
    peak_memory_gib: float | None = Field(
        default=None, gt=0, le=1e5, description="peak memory per GPU (see memory_metric)"
    )
    memory_metric: Literal["allocated", "reserved", "device"] = Field(
        default="device",
        description="what peak_memory_gib is: allocated "
        "(torch.cuda.max_memory_allocated) | reserved (max_memory_reserved) | device (nvidia-smi)",
    )
    activation_checkpointing: Checkpointing = Field(default="none", description="recomputation of the run")
    optimizer: Optimizer = Field(default="adamw", description="optimizer of the run")
    source: str = Field(default="", description="where the figure comes from")

    def point(self) -> MeasuredPoint:
        return MeasuredPoint(
            gpu_id=self.gpu,
            precision=self.precision,
            micro_batch=self.micro_batch,
            samples_per_s=self.samples_per_s,
            num_gpus=self.num_gpus,
            peak_memory_gib=self.peak_memory_gib,
            memory_metric=self.memory_metric,
            checkpointing=self.activation_checkpointing,
            optimizer=self.optimizer,
            source=self.source,
        )


class ProfileIn(StrictModel):
    """`[model.profile]`: a model described by what one sample costs, not by its shape."""

    name: str = Field(default="custom", description="a label for reports")
    sample_unit: Literal[SAMPLE_UNITS] = Field(  # type: ignore[valid-type]
        default="sample", description="what one sample is: " + " | ".join(SAMPLE_UNITS)
    )
    params: float = Field(gt=0, le=1e13, description="trained parameters")
    frozen_params: float = Field(
        default=0, ge=0, le=1e13, description="frozen parameters held on the GPU (forward only)"
    )
    forward_gflops_per_sample: float | None = Field(
        default=None,
        gt=0,
        le=1e9,
        description="forward GFLOPs (2 per multiply-add) per sample "
        "of the trained part; unknown: give a measured point",
    )
    frozen_forward_gflops_per_sample: float = Field(
        default=0.0, ge=0, le=1e9, description="forward GFLOPs per sample of the frozen parts"
    )
    activation_mib_per_sample: float | None = Field(
        default=None,
        gt=0,
        le=1e7,
        description="MiB one sample keeps for backward without recomputation, at activation_precision",
    )
    checkpointed_activation_mib_per_sample: float | None = Field(
        default=None, gt=0, le=1e7, description="the same with full activation checkpointing"
    )
    activation_precision: TrainPrecision = Field(
        default="bf16", description="precision the activation sizes are stated at"
    )
    source: str = Field(default="", description="where the figures come from")

    @model_validator(mode="after")
    def _check(self) -> ProfileIn:
        if self.params != int(self.params):
            raise ValueError("params must be a whole number")
        return self

    def profile(self) -> SampleProfile:
        mib = self.activation_mib_per_sample
        ckpt = self.checkpointed_activation_mib_per_sample
        return SampleProfile(
            name=self.name,
            family="custom",
            sample_unit=self.sample_unit,
            trained_params=int(self.params),
            frozen_params=int(self.frozen_params),
            forward_gflops_per_sample=self.forward_gflops_per_sample,
            frozen_forward_gflops_per_sample=self.frozen_forward_gflops_per_sample,
            activation_bytes_per_sample=None if mib is None else mib * MIB,
            checkpointed_activation_bytes_per_sample=None if ckpt is None else ckpt * MIB,
            activation_precision=self.activation_precision,
            source=self.source,
        )
