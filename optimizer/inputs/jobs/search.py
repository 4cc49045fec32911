"""`[search]` of a training job file: the choices the planner may search over (issue 14)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from optimizer.inputs.jobs.common import StrictModel
from optimizer.model.setup import Optimizer, TrainPrecision

__all__ = ["Search", "OFFLOAD_MODES", "MAX_VIRTUAL_STAGES"]

#: what may live in CPU RAM: nothing, the optimizer state (ZeRO-Offload), also the params (ZeRO-Infinity)
OFFLOAD_MODES = ("none", "optimizer", "params")
#: interleaved pipeline schedules use a handful of virtual stages per rank (Megatron: 2-8)
MAX_VIRTUAL_STAGES = 64


class Search(StrictModel):
    """`[search]`: lists of values the planner may try; "auto" lets it choose among all of them."""

    precision: tuple[TrainPrecision | Literal["auto"], ...] | None = Field(
        default=None,
        min_length=1,
        description="compute precisions to try (fp32, bf16, fp16, fp8 or auto); default: the "
        "workload's precision",
    )
    optimizer: tuple[Optimizer | Literal["auto"], ...] | None = Field(
        default=None,
        min_length=1,
        description="optimizers to try (adamw, adam-8bit, sgd, adafactor or auto); default: the "
        "workload's optimizer",
    )
    offload: tuple[Literal["none", "optimizer", "params"], ...] = Field(
        default=("none",),
        min_length=1,
        description="what may be offloaded to CPU RAM: none, optimizer (ZeRO-Offload), params "
        "(ZeRO-Infinity)",
    )
    sequence_parallel: tuple[bool, ...] | None = Field(
        default=None,
        min_length=1,
        description="sequence parallelism on/off values to try (with tensor parallelism); default: "
        "the stack's choice",
    )
    virtual_stages: tuple[int, ...] = Field(
        default=(1,),
        min_length=1,
        description=f"interleaved pipeline virtual stages per rank to try (1 to {MAX_VIRTUAL_STAGES})",
    )

    @field_validator("virtual_stages")
    @classmethod
    def _stages(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        bad = [s for s in v if not 1 <= s <= MAX_VIRTUAL_STAGES]
        if bad:
            raise ValueError(f"{bad} not allowed; allowed: integers 1 to {MAX_VIRTUAL_STAGES}")
        return v
