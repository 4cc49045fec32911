"""A model known by what it costs per sample (not by transformer shape): `SampleProfile`.

A CNN, a diffusion UNet or any network someone measured is described by its trained and
frozen parameters, forward FLOPs per sample, the activation bytes one sample keeps for the
backward pass, and optionally measured points {GPU, precision, micro-batch, samples/s, peak
memory}. One sample plays the part of one sequence of seq_len 1 in the planners (a "token" of
the token-based code is one sample), so planning, compare and batch take such a model as they
take a transformer. The layout search reads `layers`/`heads`: a profile has one "layer" and
one head, so only data parallelism (with ZeRO) is searched — no tensor or pipeline split.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from optimizer.model.hardware import GpuSpec
from optimizer.model.spec import ModelSpec

if TYPE_CHECKING:
    from typing_extensions import TypeIs

__all__ = ["MeasuredPoint", "SampleProfile", "AnyModel", "is_profile", "as_planned", "SAMPLE_UNITS"]

#: what one sample of a profile is (job files say `samples` or `images`)
SAMPLE_UNITS = ("sample", "image", "sequence", "clip", "latent")


@dataclass(frozen=True)
class MeasuredPoint:
    """One measured training run of the profile: `samples_per_s` over all `num_gpus` GPUs.

    `peak_memory_gib` is read as the framework states it (`memory_metric`: allocated =
    torch.cuda.max_memory_allocated, reserved = max_memory_reserved, device = nvidia-smi).
    `gpu` is the catalog GpuSpec of `gpu_id` (resolved by optimizer.inputs).
    """

    gpu_id: str
    precision: str
    micro_batch: int
    samples_per_s: float
    num_gpus: int = 1
    peak_memory_gib: float | None = None
    memory_metric: str = "device"
    checkpointing: str = "none"
    optimizer: str = "adamw"
    source: str = ""
    gpu: GpuSpec | None = None


@dataclass(frozen=True)
class SampleProfile:
    """Per-sample costs of a model; sizes in parameters, FLOPs and bytes (not GiB).

    `forward_gflops_per_sample` counts true FLOPs (2 per multiply-add) of the trained part;
    `frozen_forward_gflops_per_sample` the frozen parts that only run forward (a diffusion
    model's text encoder and VAE). Activation bytes are per sample at `activation_precision`
    without recomputation; `checkpointed_activation_bytes_per_sample` with full activation
    checkpointing (None: unknown, so that mode is not planned). None means unknown.
    """

    name: str
    family: str
    sample_unit: str
    trained_params: int
    frozen_params: int = 0
    forward_gflops_per_sample: float | None = None
    frozen_forward_gflops_per_sample: float = 0.0
    activation_bytes_per_sample: float | None = None
    checkpointed_activation_bytes_per_sample: float | None = None
    activation_precision: str = "bf16"
    measured: tuple[MeasuredPoint, ...] = ()
    source: str = ""
    notes: str = ""

    # the layout search's view of the shape: one block, one head (data parallelism only)
    layers: int = 1
    heads: int = 1
    kv_heads: int = 1
    max_seq_len: int | None = None

    @property
    def n_kv_heads(self) -> int:
        return 1

    @property
    def is_moe(self) -> bool:
        return False

    def params(self) -> int:
        """All parameters held on the GPU (trained + frozen)."""
        return self.trained_params + self.frozen_params

    def active_params(self) -> int:
        return self.params()

    @property
    def plannable(self) -> bool:
        """Step time needs FLOPs or a measured point; memory needs activations somewhere."""
        timed = self.forward_gflops_per_sample is not None or any(p.gpu is not None for p in self.measured)
        sized = (
            self.activation_bytes_per_sample is not None
            or self.checkpointed_activation_bytes_per_sample is not None
            or any(p.peak_memory_gib is not None and p.gpu is not None for p in self.measured)
        )
        return timed and sized


#: what a job trains: a token-shaped LM / encoder (ModelSpec) or a per-sample profile (CNN, UNet)
AnyModel = ModelSpec | SampleProfile


def is_profile(model: object) -> TypeIs[SampleProfile]:
    """True for a SampleProfile (the token-shaped ModelSpec code paths do not apply)."""
    return isinstance(model, SampleProfile)


def as_planned(model: AnyModel) -> ModelSpec:
    """`model` as the planner code paths type it: unchanged (a cast, not a conversion).

    The model and solve functions are typed `ModelSpec`; a SampleProfile travels them
    duck-typed (it has the shape fields the layout search reads: layers, heads, params(), ...)
    and the functions that differ dispatch on `is_profile`. Typing every one of them AnyModel
    would not narrow their ModelSpec branches (`is_profile` is a TypeGuard), so the type is
    stated once, where a job's model is resolved (ModelRef.resolve, load_model).
    """
    return cast(ModelSpec, model)
