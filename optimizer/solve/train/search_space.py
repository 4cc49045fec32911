"""The search space of the single-job planner: which instance counts, layouts and memory a
candidate may use (pure arithmetic on the model's shape, the batch and the job's limits)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from optimizer.model.profile import is_profile
from optimizer.model.setup import TP_DEGREES
from optimizer.model.spec import ModelSpec

__all__ = [
    "BatchRule",
    "Headroom",
    "NO_HEADROOM",
    "MICRO_BATCHES",
    "PROFILE_MICRO_BATCHES",
    "PIPELINE_DEGREES",
    "instance_counts",
    "tensor_degrees",
    "effective_zero_stages",
    "layouts_for",
]

MICRO_BATCHES = (32, 16, 8, 4, 2, 1)  # largest first: the fastest layouts are found early
#: per-sample models (CNNs, UNets) train with hundreds of samples per GPU (ResNet-50 recipes:
#: 256 per GPU, NVIDIA DeepLearningExamples configs.yml)
PROFILE_MICRO_BATCHES = (1024, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1)
PIPELINE_DEGREES = (1, 2, 4, 8, 16)


@dataclass(frozen=True)
class BatchRule:
    """Global batch (sequences) and the allowed relative deviation."""

    sequences: int
    tolerance: float = 0.0

    def grad_accum(self, dp: int, micro_batch: int) -> int | None:
        """Gradient accumulation that realises the batch within tolerance, or None."""
        per_step = dp * micro_batch
        if self.tolerance == 0:
            return self.sequences // per_step if self.sequences % per_step == 0 else None
        ga = max(1, round(self.sequences / per_step))
        if abs(ga * per_step - self.sequences) <= self.tolerance * self.sequences:
            return ga
        return None


def instance_counts(
    low: int,
    high: int,
    gpus_per_node: int = 1,
    batch: BatchRule | None = None,
    model: ModelSpec | None = None,
) -> list[int]:
    """Every instance count in [low, high] on which some layout realises the global batch.

    n instances hold n·g GPUs = dp·tp·pp (tp within a node, pp ≤ layers); the batch is
    realisable when some multiple m·dp (micro-batch × accumulation) lies within the tolerance
    of the global batch, and micro-batch 1 gives every multiple, so dp alone decides. Without
    `batch` every count is returned. (MPT-7B's 440 A100s are 55 nodes: dp = 440 divides its
    1,760-sequence batch; no power-of-two ladder contains 55.)
    """
    if batch is None:
        return list(range(max(1, low), high + 1))
    tps = tuple(
        tensor_degrees(model, gpus_per_node)
        if model is not None
        else [t for t in TP_DEGREES if gpus_per_node % t == 0]
    )
    pps = tuple(p for p in PIPELINE_DEGREES if model is None or p <= model.layers)
    return list(_counts(max(1, low), high, gpus_per_node, batch.sequences, batch.tolerance, tps, pps))


@lru_cache(maxsize=4096)
def _counts(
    low: int,
    high: int,
    gpn: int,
    sequences: int,
    tolerance: float,
    tps: tuple[int, ...],
    pps: tuple[int, ...],
) -> tuple[int, ...]:
    lo, hi = sequences * (1 - tolerance), sequences * (1 + tolerance)
    # dp realises the batch iff a multiple of dp lies in [lo, hi]
    ok = {dp for dp in range(1, int(hi + 1e-9) + 1) if math.ceil(lo / dp - 1e-9) * dp <= hi + 1e-9}
    splits = {t * p for t in tps for p in pps}
    return tuple(
        n for n in range(low, high + 1) if any((n * gpn) % k == 0 and (n * gpn) // k in ok for k in splits)
    )


def tensor_degrees(model: ModelSpec, gpus_per_node: int) -> list[int]:
    """TP degrees within one node that divide both the query and the KV heads."""
    return [
        t for t in TP_DEGREES if gpus_per_node % t == 0 and model.heads % t == 0 and model.n_kv_heads % t == 0
    ]


def effective_zero_stages(zero_stages: Sequence[int]) -> tuple[int, ...]:
    """Stages worth trying: of 0, 1, 2 only the highest allowed, plus 3.

    In this model ZeRO-1/2 move the same bytes as plain DP (reduce-scatter + all-gather =
    all-reduce, Rajbhandari et al. 2020 §7) and shard the optimizer update, so a higher stage
    among 0-2 is never slower and never uses more memory: it dominates the lower ones.
    """
    low = [z for z in zero_stages if z < 3]
    return tuple(([max(low)] if low else []) + ([3] if 3 in zero_stages else []))


def layouts_for(
    model: ModelSpec, gpus: int, gpus_per_node: int, batch: BatchRule, zero_stages: Sequence[int]
) -> Iterable[tuple[int, int, int, int, int, int]]:
    """(tp, pp, dp, zero, micro_batch, grad_accum) tuples for `gpus` GPUs (checkpointing apart)."""
    for tp in tensor_degrees(model, gpus_per_node):
        for pp in PIPELINE_DEGREES:
            if pp > model.layers or gpus % (tp * pp):
                continue
            dp = gpus // (tp * pp)
            for mb in PROFILE_MICRO_BATCHES if is_profile(model) else MICRO_BATCHES:
                ga = batch.grad_accum(dp, mb)
                if ga is None:
                    continue
                if dp == 1:  # nothing to shard over: every ZeRO stage is plain training
                    yield tp, pp, dp, 0, mb, ga
                    continue
                for zero in zero_stages:
                    yield tp, pp, dp, zero, mb, ga


@dataclass(frozen=True)
class Headroom:
    """Device memory kept free per GPU: a fixed GiB plus a share of the card. Device memory
    already counts the CUDA context and the allocator cache (model/memory.py); the headroom
    covers what the model does not see (spikes at the loss, NCCL buffers growing, a longer
    batch). Defaults in the job file: 1 GiB + 5% (GUESS, constraints.min_memory_headroom_*)."""

    gib: float = 0.0
    fraction: float = 0.0

    def usable_gib(self, card_gib: float) -> float:
        """What a plan may use of a `card_gib` card."""
        return card_gib * (1.0 - self.fraction) - self.gib

    def kept_gib(self, card_gib: float) -> float:
        return card_gib - self.usable_gib(card_gib)


NO_HEADROOM = Headroom()
