"""The search space of the single-job planner: which instance counts, layouts and memory a
candidate may use (pure arithmetic on the model's shape, the batch and the job's limits)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from optimizer.model.layout import (
    BatchRule,
    Shape,
    pipeline_zero_stages,
    split_sizes,
    stack_zero_stages,
    training_layouts,
)
from optimizer.model.profile import is_profile
from optimizer.model.setup import Layout
from optimizer.model.stacks import StackProfile

__all__ = [
    "BatchRule",
    "Headroom",
    "NO_HEADROOM",
    "MICRO_BATCHES",
    "PROFILE_MICRO_BATCHES",
    "instance_counts",
    "micro_batches_of",
    "effective_zero_stages",
    "layouts_for",
]

# The micro-batch ladders are search policy (which sizes to try and in what order), not rules of
# a valid layout (model/layout.py): any micro-batch ≥ 1 is valid.
MICRO_BATCHES = (32, 16, 8, 4, 2, 1)  # largest first: the fastest layouts are found early
#: per-sample models (CNNs, UNets) train with hundreds of samples per GPU (ResNet-50 recipes:
#: 256 per GPU, NVIDIA DeepLearningExamples configs.yml)
PROFILE_MICRO_BATCHES = (1024, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1)


def micro_batches_of(model: Shape) -> tuple[int, ...]:
    """The micro-batch ladder searched for `model` (per-sample profiles get the larger one)."""
    return PROFILE_MICRO_BATCHES if is_profile(model) else MICRO_BATCHES


def instance_counts(
    low: int,
    high: int,
    gpus_per_node: int = 1,
    batch: BatchRule | None = None,
    model: Shape | None = None,
    stack: StackProfile | None = None,
) -> list[int]:
    """Every instance count in [low, high] on which some layout realises the global batch.

    n instances hold n·g GPUs = dp·tp·pp (the rulebook's split sizes, model/layout.py); the
    batch is realisable when some multiple m·dp (micro-batch × accumulation) lies within the
    tolerance of the global batch, and micro-batch 1 gives every multiple, so dp alone decides.
    Without `batch` every count is returned; `stack` drops the splits it cannot run. (MPT-7B's
    440 A100s are 55 nodes: dp = 440 divides its 1,760-sequence batch; no power-of-two ladder
    contains 55.)
    """
    if batch is None:
        return list(range(max(1, low), high + 1))
    sizes = split_sizes(model, gpus_per_node, stack)
    return list(_counts(max(1, low), high, gpus_per_node, batch.sequences, batch.tolerance, sizes))


@lru_cache(maxsize=4096)
def _counts(
    low: int,
    high: int,
    gpn: int,
    sequences: int,
    tolerance: float,
    splits: tuple[int, ...],
) -> tuple[int, ...]:
    lo, hi = sequences * (1 - tolerance), sequences * (1 + tolerance)
    # dp realises the batch iff a multiple of dp lies in [lo, hi]
    ok = {dp for dp in range(1, int(hi + 1e-9) + 1) if math.ceil(lo / dp - 1e-9) * dp <= hi + 1e-9}
    # n·gpn = split × dp for some split and realisable dp: built from the (few) products rather
    # than by testing every count up to `high` against every split
    gpus = {k * dp for k in set(splits) for dp in ok}
    return tuple(sorted(g // gpn for g in gpus if g % gpn == 0 and low <= g // gpn <= high))


def effective_zero_stages(zero_stages: Sequence[int], stack: StackProfile | None = None) -> tuple[int, ...]:
    """Stages worth trying among those the job allows and the stack runs: of 0, 1, 2 only the
    highest, plus 3.

    In this model ZeRO-1/2 move the same bytes as plain DP (reduce-scatter + all-gather =
    all-reduce, Rajbhandari et al. 2020 §7) and shard the optimizer update, so a higher stage
    among 0-2 is never slower and never uses more memory: it dominates the lower ones.
    """
    runnable = stack_zero_stages(stack, zero_stages)
    low = [z for z in runnable if z < 3]
    # with pipeline stages the stack may allow fewer (layout.pipeline_zero_stages): keep its
    # highest too, so that pipelines are still searched
    piped = [z for z in pipeline_zero_stages(stack, zero_stages) if z < 3]
    best = sorted({max(low)} | ({max(piped)} if piped else set())) if low else []
    return tuple(best + ([3] if 3 in runnable else []))


def layouts_for(
    model: Shape,
    gpus: int,
    gpus_per_node: int,
    batch: BatchRule,
    zero_stages: Sequence[int],
    virtual_stages: int = 1,
    stack: StackProfile | None = None,
) -> tuple[Layout, ...]:
    """The rulebook's layouts for `gpus` GPUs (model/layout.py training_layouts) that `stack`
    can run, over this planner's micro-batch ladder; checkpointing "none" (the planner tries
    the others)."""
    return training_layouts(
        model, gpus, gpus_per_node, batch, zero_stages, micro_batches_of(model), virtual_stages, stack
    )


@dataclass(frozen=True)
class Headroom:
    """Device memory kept free per GPU: a fixed GiB plus a share of the card. Device memory
    already counts the CUDA context and the allocator cache (model/memory.py); the headroom
    covers what the model does not see (spikes at the loss, NCCL buffers growing, a longer
    batch). Defaults in the job file: 1 GiB + 5% (GUESS, constraints.min_memory_headroom_*)."""

    gib: float = 0.0
    fraction: float = 0.0
    #: the memory band's multiplier at constraints.memory_confidence (1: the point): a layout's
    #: predicted device peak times this must fit in what the headroom leaves
    memory_factor: float = 1.0

    def usable_gib(self, card_gib: float) -> float:
        """What a plan's predicted device peak may be on a `card_gib` card."""
        return (card_gib * (1.0 - self.fraction) - self.gib) / self.memory_factor

    def kept_gib(self, card_gib: float) -> float:
        return card_gib - self.usable_gib(card_gib)


NO_HEADROOM = Headroom()
