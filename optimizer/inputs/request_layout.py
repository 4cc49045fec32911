"""The GPUs and the training layout of a ConfigRequest: the part of building a configuration
that needs no catalog, shared by the configuration builder (optimizer.configuration.build:
`estimate`, `calibrate`) and a job file's `[calibration]` run (inputs/calibration.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from optimizer.errors import ConfigError
from optimizer.model.layout import grad_accum_of
from optimizer.model.setup import Layout

if TYPE_CHECKING:  # the request loads the serving job's types; the planners need none of them
    from optimizer.inputs.request import ConfigRequest

__all__ = ["MAX_DEFAULT_GPUS_PER_INSTANCE", "request_gpus", "request_layout"]

#: GPUs per instance of a request that names neither an instance nor gpus_per_instance: its
#: GPUs, at most this many (a common 8-GPU server)
MAX_DEFAULT_GPUS_PER_INSTANCE = 8


def request_gpus(req: ConfigRequest, instance_gpus: int | None = None) -> tuple[int, int]:
    """(GPUs, GPUs per instance) of a request: num_gpus, else one instance (`instance_gpus`,
    the catalog's), else 1; the instance's GPUs, else gpus_per_instance, else min(GPUs, 8)."""
    num_gpus = req.num_gpus if req.num_gpus is not None else (instance_gpus or 1)
    per_instance = instance_gpus or req.gpus_per_instance or min(num_gpus, MAX_DEFAULT_GPUS_PER_INSTANCE)
    return num_gpus, per_instance


def request_layout(req: ConfigRequest, num_gpus: int) -> Layout:
    """The training layout of a request over `num_gpus` GPUs: dp = GPUs / (tp × pp × cp), and
    the gradient accumulation that makes global_batch (1 when none is given).

    Raises:
        ConfigError: "--global-batch: 100 is not a multiple of dp × micro-batch = 8 × 3".
    """
    dp = num_gpus // (req.tp * req.pp * req.context_parallel)
    grad_accum = 1 if req.global_batch is None else grad_accum_of(req.global_batch, dp, req.micro_batch)
    if grad_accum is None:
        raise ConfigError(
            f"--global-batch: {req.global_batch} is not a multiple of dp × micro-batch = "
            f"{dp} × {req.micro_batch}"
        )
    return Layout(
        dp=dp,
        tp=req.tp,
        pp=req.pp,
        zero_stage=req.zero_stage,
        checkpointing=req.activation_checkpointing,
        micro_batch=req.micro_batch,
        grad_accum=grad_accum,
        cp=req.context_parallel,
        vp=req.virtual_stages,
        ep=req.expert_parallel,
    )
