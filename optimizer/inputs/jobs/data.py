"""`[data]`: the dataset a training job reads — its size, how fast a vCPU loads it, where it lives."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from optimizer.inputs.jobs.common import StrictModel

__all__ = ["DataSpec", "DATA_KINDS", "DATA_ACCESS", "ONPREM", "MAX_DATASET_GB"]

#: data kinds with a guessed per-vCPU loader rate (PerfAssumptions.samples_per_s_per_vcpu_*)
DATA_KINDS = ("text", "image")
#: stream: read from object storage while training; local: copied to each instance's NVMe first
DATA_ACCESS = ("stream", "local")
#: where a dataset lives when it is not in a cloud
ONPREM = "onprem"
#: 100 PB: far beyond any published training set (LAION-5B images are ~240 TB)
MAX_DATASET_GB = 1e8


class DataSpec(StrictModel):
    """`[data]`: the dataset, its loader and where it lives (without it, a plan counts no data
    costs and checks no loader; it says so)."""

    dataset_gb: float = Field(gt=0, le=MAX_DATASET_GB, description="dataset size, GB (10^9 bytes)")
    kind: Literal["text", "image"] = Field(
        default="text",
        description="text | image: picks the guessed samples/s per vCPU "
        "(PerfAssumptions.samples_per_s_per_vcpu_text / _image) when no rate is given",
    )
    samples_per_s_per_vcpu: float | None = Field(
        default=None,
        gt=0,
        le=1e7,
        description="samples/s one vCPU decodes + augments (measured "
        "or published); overrides the kind's guess",
    )
    loader_samples_per_s: float | None = Field(
        default=None,
        gt=0,
        le=1e9,
        description="a measured loader rate (samples/s) on "
        "`loader_vcpus` vCPUs; the per-vCPU rate is their ratio",
    )
    loader_vcpus: float | None = Field(
        default=None, gt=0, le=100_000, description="vCPUs of the measured loader rate"
    )
    access: Literal["stream", "local"] = Field(
        default="stream",
        description="stream: read from object storage while training; local: "
        "must sit on each instance's local NVMe",
    )
    provider: str = Field(
        default=ONPREM, description="where the dataset lives now: a provider (aws, gcp, ...) or onprem"
    )
    region: str | None = Field(
        default=None, description="its region (as in `ccopt prices`); none: the provider's only priced region"
    )
    checkpoint_every_hours: float | None = Field(
        default=None,
        gt=0,
        le=87_600,
        description="hours between checkpoints (default: PerfAssumptions.checkpoint_every_hours, a guess)",
    )
    checkpoints_kept: int | None = Field(
        default=None,
        ge=1,
        le=10**6,
        description="checkpoints kept in storage (default: PerfAssumptions.checkpoints_kept, a guess)",
    )

    @model_validator(mode="after")
    def _check(self) -> DataSpec:
        if (self.loader_samples_per_s is None) != (self.loader_vcpus is None):
            raise ValueError(
                "give loader_samples_per_s together with loader_vcpus (the vCPUs of the measured rate)"
            )
        if self.loader_samples_per_s is not None and self.samples_per_s_per_vcpu is not None:
            raise ValueError("give samples_per_s_per_vcpu or loader_samples_per_s + loader_vcpus, not both")
        return self

    def rate_per_vcpu(self, guessed: float) -> float:
        """Samples/s per vCPU: given, measured (rate / vCPUs), else the kind's guess."""
        if self.samples_per_s_per_vcpu is not None:
            return self.samples_per_s_per_vcpu
        if self.loader_samples_per_s is not None and self.loader_vcpus:
            return self.loader_samples_per_s / self.loader_vcpus
        return guessed

    @property
    def rate_is_guess(self) -> bool:
        return self.samples_per_s_per_vcpu is None and self.loader_samples_per_s is None
