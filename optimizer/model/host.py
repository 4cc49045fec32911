"""The host around the GPUs: what lives in CPU RAM, how fast the vCPUs load data, checkpoints.

Pure arithmetic over the memory model's terms (optimizer/model/memory.py) and the guessed
constants of PerfAssumptions (every host constant there is a stated guess, overridable).
"""

from __future__ import annotations

import math
from dataclasses import replace

from optimizer.model.memory import (
    activation_bytes_per_layer,
    lora_params,
    params_per_gpu,
    qlora_bytes_per_param,
    setup_state_bytes,
)
from optimizer.model.pipeline_stages import in_flight_microbatches
from optimizer.model.profile import is_profile
from optimizer.model.profile_memory import ADAFACTOR_HIDDEN
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import knobs
from optimizer.model.states import model_state_bytes_per_param
from optimizer.model.step_time import StepTime
from optimizer.units import GIB

__all__ = [
    "offloaded_gib_per_gpu",
    "checkpoint_gb",
    "loader_vcpus",
    "loader_samples_per_s",
    "loader_workers",
    "host_ram_gib",
    "loader_bound_step",
    "samples_per_s_per_vcpu",
]


def _state_bytes(model: ModelSpec, setup: TrainingSetup, a: PerfAssumptions) -> tuple[float, float, float]:
    if is_profile(model):  # a per-sample profile: plain mixed-precision states (profile_memory)
        return model_state_bytes_per_param(setup.precision, setup.optimizer, ADAFACTOR_HIDDEN)
    return setup_state_bytes(model, setup, knobs(setup, a))


def offloaded_gib_per_gpu(
    model: ModelSpec, setup: TrainingSetup, layout: Layout, assumptions: PerfAssumptions | None = None
) -> float:
    """GiB one GPU process keeps in host RAM: what ZeRO-Offload / -Infinity and activation
    offloading move off the card.

    ZeRO-Offload (Ren et al. 2021, §4.1): the fp32 master, the optimizer moments and the
    16-bit gradients live in CPU memory, partitioned over the data-parallel ranks (ZeRO ≥ 1);
    ZeRO-Infinity parameter offload (Rajbhandari et al. 2021, §5) adds the 16-bit weights of
    the rank's ZeRO-3 shard; activation offloading (torchtune OffloadActivations) keeps the
    checkpointed inputs of all but `offload_resident_layers` layers on the host.
    """
    if not (setup.offload_optimizer or setup.offload_params or setup.offload_activations):
        return 0.0  # nothing offloaded (asked for every layout the planner times)
    a = assumptions or PerfAssumptions()
    dp, zero = layout.dp * layout.cp, layout.zero_stage
    w_b, g_b, o_b = _state_bytes(model, setup, a)
    shard = dp if zero >= 1 else 1
    out = 0.0
    if setup.is_adapter and not is_profile(model):
        n_adapter = lora_params(model, setup.lora_rank, setup.lora_targets) / (layout.tp * layout.pp)
        if setup.offload_optimizer:
            out += n_adapter * (o_b + g_b) / shard
        if setup.offload_params and zero >= 3:
            base_b = (
                qlora_bytes_per_param()
                if setup.method == "qlora"
                else {"fp32": 4.0}.get(setup.precision, 2.0)
            )
            out += params_per_gpu(model, layout) * base_b / dp
    else:
        # the trained parameters: a profile's (one block, data parallelism only) or this GPU's
        n = model.trained_params if is_profile(model) else params_per_gpu(model, layout)
        if setup.offload_optimizer:
            out += n * (o_b + g_b) / shard
        if setup.offload_params and zero >= 3:
            out += n * w_b / dp
        if is_profile(model):
            return out / GIB
    if setup.offload_activations and layout.checkpointing == "full":
        layers = math.ceil(model.layers / layout.pp)
        off_layers = max(0, layers - a.offload_resident_layers)
        out += activation_bytes_per_layer(model, setup, layout) * off_layers * in_flight_microbatches(layout)
    return out / GIB


def checkpoint_gb(
    model: ModelSpec, setup: TrainingSetup, assumptions: PerfAssumptions | None = None
) -> float:
    """GB one checkpoint writes: the trained weights and their optimizer state (a PyTorch /
    DeepSpeed checkpoint saves model and optimizer state_dicts, not gradients); a LoRA /
    QLoRA checkpoint holds only the adapters and their state (the frozen base is not saved)."""
    a = assumptions or PerfAssumptions()
    w_b, _g_b, o_b = _state_bytes(model, setup, a)
    if is_profile(model):
        trained = model.trained_params
    elif setup.is_adapter:
        trained = lora_params(model, setup.lora_rank, setup.lora_targets)
    else:
        trained = model.params()
    return trained * (w_b + o_b) / 1e9


def samples_per_s_per_vcpu(kind: str, assumptions: PerfAssumptions) -> float:
    """The guessed decode rate of one vCPU for a [data] kind (text | image)."""
    return {
        "image": assumptions.samples_per_s_per_vcpu_image,
        "text": assumptions.samples_per_s_per_vcpu_text,
    }[kind]


def loader_vcpus(vcpus: float, gpus_per_instance: int, reserve_per_gpu: float) -> float:
    """vCPUs left for loader workers after the GPU processes' reserve (never below 0)."""
    return max(0.0, vcpus - reserve_per_gpu * gpus_per_instance)


def loader_samples_per_s(
    vcpus: float, gpus_per_instance: int, per_vcpu: float, reserve_per_gpu: float
) -> float:
    """Samples/s one instance's loader delivers: free vCPUs × samples/s per vCPU (loading is
    embarrassingly parallel over DataLoader worker processes, one per vCPU)."""
    return loader_vcpus(vcpus, gpus_per_instance, reserve_per_gpu) * per_vcpu


def loader_workers(needed_samples_per_s: float, per_vcpu: float, free_vcpus: float) -> float:
    """Worker processes the loader keeps busy: enough to deliver the GPUs' rate, at most one
    per free vCPU."""
    return min(free_vcpus, math.ceil(needed_samples_per_s / per_vcpu)) if per_vcpu > 0 else 0.0


def host_ram_gib(
    offloaded_per_gpu_gib: float, gpus_per_instance: int, workers: float, assumptions: PerfAssumptions
) -> float:
    """Host RAM one instance needs: every GPU process's offloaded states and pinned buffers,
    plus the loader workers' RAM."""
    a = assumptions
    return (
        gpus_per_instance * (offloaded_per_gpu_gib + a.pinned_buffer_gib_per_gpu)
        + workers * a.loader_worker_ram_gib
    )


def loader_bound_step(step: StepTime, samples_per_step: int, loader_samples_per_s: float) -> StepTime:
    """The step when the loader is slower than the GPUs: a step cannot end before its batch is
    loaded, so time = max(GPU step, samples / loader rate); throughput figures scale with it."""
    if loader_samples_per_s <= 0:
        raise ValueError("loader_bound_step: the loader rate must be positive")
    loader_s = samples_per_step / loader_samples_per_s
    if loader_s <= step.time_s:
        return step
    scale = step.time_s / loader_s
    parts = dict(step.parts_s, loader_wait_s=loader_s - step.time_s)
    return replace(
        step,
        time_s=loader_s,
        tokens_per_s=step.tokens_per_s * scale,
        tokens_per_s_per_gpu=step.tokens_per_s_per_gpu * scale,
        mfu=step.mfu * scale,
        hfu=step.hfu * scale,
        parts_s=parts,
    )
