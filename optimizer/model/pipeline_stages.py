"""Pipeline stages' activation counts: how many micro-batches of its layers' activations each
stage holds at its peak under 1F1B and interleaved 1F1B (memory.py)."""

from __future__ import annotations

from optimizer.model.setup import Layout

__all__ = ["in_flight_microbatches", "interleave_factor", "last_stage_layer_microbatches"]


def in_flight_microbatches(layout: Layout) -> int:
    """1F1B keeps up to pp micro-batches of activations on the first stage (Narayanan 2021 §2.2)."""
    return min(layout.pp, layout.grad_accum) if layout.pp > 1 else 1


def last_stage_layer_microbatches(layout: Layout, layers_per_stage: int) -> float:
    """Layers × micro-batches of activations the last pipeline stage holds at its peak: 1F1B's
    last stage runs each micro-batch's backward right after its forward (one in flight;
    Narayanan et al. 2021 §2.2); interleaved, the last rank warms up with (v − 1)·p chunk
    forwards before its first backward (Megatron-LM schedules.py get_pp_rank_microbatches:
    (p − rank − 1)·2 + (v − 1)·microbatch_group_size_per_vp_stage, p by default, at rank
    p − 1), each a chunk of layers / v, capped by the chunk-micro-batches there are (ga·v)."""
    v = max(1, layout.vp)
    chunks = min((v - 1) * layout.pp + 1, max(1, layout.grad_accum) * v)
    return chunks * layers_per_stage / v


def interleave_factor(layout: Layout) -> float:
    """Interleaved 1F1B stores 1 + (p−1)/(p·v) times the 1F1B activations on the first stage
    (Korthikanti et al. 2022 §4.2.3)."""
    if layout.pp <= 1 or layout.vp <= 1:
        return 1.0
    return 1.0 + (layout.pp - 1) / (layout.pp * layout.vp)
