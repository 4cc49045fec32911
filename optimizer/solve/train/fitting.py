"""Layouts that fit a GPU's memory: for one GPU count and capacity, the layouts worth timing
(the least checkpointing that fits each), with the memory of each kept for the next capacity.
"""

from __future__ import annotations

from collections.abc import Sequence

from optimizer.model.memory import MemoryBreakdown, MemoryModel
from optimizer.model.profile import AnyModel
from optimizer.model.setup import CHECKPOINTING, Layout, TrainingSetup
from optimizer.model.stacks import setup_stack
from optimizer.solve.train.search_space import BatchRule, effective_zero_stages, layouts_for

__all__ = ["FitList", "MemoryEntry", "LayoutRow", "fitting_layouts"]

FitList = list[tuple[Layout, MemoryBreakdown]]
MemoryEntry = tuple[float, MemoryBreakdown, Layout]  # (device GiB, breakdown, the layout it is of)
#: a layout, its pp and grad_accum, (tp, zero, dp), its memory-cache key without the
#: checkpointing level and the cache entry of each level once read (fitting_layouts)
LayoutRow = tuple[Layout, int, int, tuple[int, int, int], tuple[int, ...], list[MemoryEntry | None]]


def fitting_layouts(
    model: AnyModel,
    setup: TrainingSetup,
    gpus: int,
    gpus_per_node: int,
    capacity_gib: float,
    batch: BatchRule,
    zero_stages: Sequence[int],
    checkpointing: Sequence[str],
    memory_model: MemoryModel,
    memory_cache: dict[tuple, tuple[float, MemoryBreakdown, Layout]],
    virtual_stages: int = 1,
    layout_rows: dict[tuple, list[LayoutRow]] | None = None,
) -> tuple[FitList, tuple[float, Layout] | None]:
    """Layouts worth timing on `gpus` GPUs of `capacity_gib`, and the smallest memory seen
    (each layout's from `memory_model`, the job's MemoryModel).

    Per (tp, pp, zero, micro-batch) only the least checkpointing that fits is kept (more
    recompute never speeds a step). With pp = 1 and micro-batches tried largest first, a
    smaller micro-batch at the same or more checkpointing is never faster (lower matmul
    efficiency, less DP overlap, more TP latency) and is dropped. None of this depends on the
    network, so the list is shared by every offering with the same GPU memory and count.
    With `virtual_stages` v > 1 only pipelined layouts whose stages split into v chunks are
    kept (interleaved 1F1B, Narayanan et al. 2021 §2.2; pp = 1 is the v = 1 search's).
    `layout_rows` keeps the layouts of each GPU count with their memory-cache keys and entries
    (EnumerationMemo.rows): the next capacity of the same count reads them without a lookup.
    """
    ordered = tuple(c for c in CHECKPOINTING if c in checkpointing)
    levels = len(ordered)
    fits: FitList = []
    smallest: tuple[float, Layout] | None = None
    fitted_level: dict[tuple[int, int, int], int] = {}
    rows_key = (gpus, gpus_per_node, ordered, tuple(zero_stages), virtual_stages)
    rows = None if layout_rows is None else layout_rows.get(rows_key)
    if rows is None:
        rows = _layout_rows(model, setup, gpus, gpus_per_node, batch, zero_stages, ordered, virtual_stages)
        if layout_rows is not None:
            layout_rows[rows_key] = rows
    for base, pp, ga, tp_zero_dp, shape, slots in rows:
        for level in range(levels):
            cached = slots[level]
            if cached is None:
                key = (shape, ordered[level])
                cached = memory_cache.get(key)
                if cached is None:
                    ckpt = ordered[level]
                    layout = base if ckpt == base.checkpointing else _with_checkpointing(base, ckpt)
                    memory = memory_model.memory(layout)
                    # the fit test is what the device holds (nvidia-smi): allocated + allocator
                    # cache + CUDA context (MemoryBreakdown.device, model/memory.py)
                    cached = memory_cache[key] = (memory.device, memory, layout)
                slots[level] = cached
            total, memory, layout = cached
            if smallest is None or total < smallest[0]:
                smallest = (total, layout)
            if total > capacity_gib:
                continue
            if pp == 1:
                previous = fitted_level.get(tp_zero_dp, levels)
                fitted_level[tp_zero_dp] = level
                if level >= previous:
                    break
            if layout.grad_accum != ga:
                ckpt = ordered[level]
                layout = base if ckpt == base.checkpointing else _with_checkpointing(base, ckpt)
            fits.append((layout, memory))
            break
    return fits, smallest


def _layout_rows(
    model: AnyModel,
    setup: TrainingSetup,
    gpus: int,
    gpus_per_node: int,
    batch: BatchRule,
    zero_stages: Sequence[int],
    ordered: tuple[str, ...],
    virtual_stages: int,
) -> list[LayoutRow]:
    """The layouts of `gpus` GPUs the stack can run, each with what fitting_layouts reads: its
    shape (tp, pp, dp, zero, micro-batch, micro-batches in flight = min(pp, grad_accum), v),
    which with a checkpointing level is the memory-cache key, and a slot per level for the
    cache entry."""
    stack = setup_stack(setup)  # only the layouts the software stack can run for this workload
    levels = len(ordered)
    rows: list[LayoutRow] = []
    append = rows.append
    for base in layouts_for(
        model, gpus, gpus_per_node, batch, effective_zero_stages(zero_stages, stack), virtual_stages, stack
    ):
        tp, pp, dp, zero, mb, ga = (
            base.tp,
            base.pp,
            base.dp,
            base.zero_stage,
            base.micro_batch,
            base.grad_accum,
        )
        in_flight = pp if pp <= ga else ga  # min(pp, grad_accum)
        # one shape per row, the per-level keys built only when read (~40,000 rows here)
        shape = (tp, pp, dp, zero, mb, in_flight, virtual_stages)
        append((base, pp, ga, (tp, zero, dp), shape, [None] * levels))
    return rows


def _with_checkpointing(base: Layout, checkpointing: str) -> Layout:
    """`base` with another checkpointing (built directly: dataclasses.replace costs ~4x more on
    this hot path, measured with cProfile on examples/gpt3_175b_a100_90days.toml)."""
    return Layout(
        dp=base.dp,
        tp=base.tp,
        pp=base.pp,
        zero_stage=base.zero_stage,
        checkpointing=checkpointing,
        micro_batch=base.micro_batch,
        grad_accum=base.grad_accum,
        cp=base.cp,
        vp=base.vp,
        ep=base.ep,
    )
