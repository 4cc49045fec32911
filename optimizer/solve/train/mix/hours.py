"""A data-parallel mix's whole-run hours per instance-count pair (issue 43: model/goodput.py)."""

from __future__ import annotations

from collections.abc import Sequence

from optimizer.solve.train.mix.data import TypeGroup
from optimizer.solve.train.prepare import PreparedJob
from optimizer.solve.train.spot import checkpoint_bytes, mix_run_hours
from optimizer.units import SECONDS_PER_HOUR

__all__ = ["mix_hours"]


def mix_hours(
    prep: PreparedJob,
    types: tuple[TypeGroup, TypeGroup],
    counts: Sequence[tuple[int, int]],
    factors: Sequence[float],
    step_s: Sequence[float],
) -> list[float]:
    """Each instance-count pair's whole-run hours (spot.mix_run_hours: the steps at the band's
    factor, checkpoints, failures over all the mix's GPUs, start-up); `step_s` is each pair's
    slowest step in seconds."""
    w = prep.job.workload
    setup, steps = w.setup(), w.steps_for_batch(w.batch_sequences)
    per_instance = (types[0].first.gpus_per_instance, types[1].first.gpus_per_instance)
    ckpt = checkpoint_bytes(prep.model, setup, prep.assumptions)
    generations = (types[0].first.gpu.generation, types[1].first.gpu.generation)
    return [
        mix_run_hours(
            steps * step * f / SECONDS_PER_HOUR,
            sum(n),
            n[0] * per_instance[0] + n[1] * per_instance[1],
            prep.model,
            setup,
            prep.assumptions,
            ckpt,
            generations,
        )[0]
        for n, step, f in zip(counts, step_s, factors, strict=True)
    ]
