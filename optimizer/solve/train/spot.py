"""Wall hours of a whole run on one offering and instance count (model/goodput.py): compute,
start-up, checkpoints and the loss to interruptions — hardware failures on any pricing model,
plus spot reclaims on spot capacity (model/preemption.py, or the fixed extra wall time of the
old spot rule)."""

from __future__ import annotations

from dataclasses import replace

from optimizer.model.goodput import Goodput, RunOverheads, failure_rate, whole_run
from optimizer.model.host import checkpoint_gb
from optimizer.model.preemption import Preemption
from optimizer.model.setup import PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.pricing.offering import Offering
from optimizer.units import GB, SECONDS_PER_HOUR

__all__ = ["spot_hours", "run_hours", "mix_run_hours", "checkpoint_bytes"]


def run_hours(
    off: Offering,
    instances: int,
    work_h: float,
    model: ModelSpec,
    setup: TrainingSetup,
    a: PerfAssumptions,
    spot: tuple[Offering, int] | None = None,
    ckpt_bytes: float | None = None,
) -> tuple[float, Preemption | None, Goodput]:
    """(expected wall hours, the spot interruption estimate or None, the goodput breakdown) of
    `work_h` hours of training on `instances` of `off`; `spot` = (spot offering, how many of
    the instances are spot) for a mixed cluster (else: all of them when `off` is spot);
    `ckpt_bytes` the job's checkpoint (checkpoint_bytes) when a loop has it already."""
    spot_off, spot_n = spot if spot is not None else (off, instances if off.pricing == "spot" else 0)
    spot_rate = 0.0
    if spot_n and spot_off.pricing == "spot":
        if spot_off.spot_interruptions_per_day is None:
            work_h *= 1.0 + spot_off.spot_overhead  # the fixed rule: extra compute-equivalent hours
        else:
            # reclaims of spot_n instances spread over all `instances` (rates add)
            spot_rate = spot_off.spot_interruptions_per_day * spot_n / instances
    gpus = instances * off.gpus_per_instance
    ckpt = _bytes(ckpt_bytes, model, setup, a)
    goodput, p = _whole_run(work_h, instances, gpus, spot_rate, ckpt, a, (off.gpu.generation,))
    # the spot estimate names the reclaims alone (its expected wall time has the failures too)
    spot_only = replace(p, interruptions_per_instance_day=spot_rate) if spot_rate > 0 else None
    return goodput.wall_h, spot_only, goodput


def mix_run_hours(
    work_h: float,
    instances: int,
    gpus: int,
    model: ModelSpec,
    setup: TrainingSetup,
    a: PerfAssumptions,
    ckpt_bytes: float | None = None,
    generations: tuple[str, ...] = (),
) -> tuple[float, Goodput]:
    """(expected wall hours, goodput breakdown) of `work_h` hours on a cluster of two GPU types
    (`instances` instances, `gpus` GPUs in all; no spot capacity)."""
    goodput, _ = _whole_run(work_h, instances, gpus, 0.0, _bytes(ckpt_bytes, model, setup, a), a, generations)
    return goodput.wall_h, goodput


def checkpoint_bytes(model: ModelSpec, setup: TrainingSetup, a: PerfAssumptions) -> float:
    """Bytes of one resumable checkpoint (weights + optimizer states: model/host.checkpoint_gb)."""
    return checkpoint_gb(model, setup, a) * GB


def _bytes(ckpt_bytes: float | None, model: ModelSpec, setup: TrainingSetup, a: PerfAssumptions) -> float:
    return checkpoint_bytes(model, setup, a) if ckpt_bytes is None else ckpt_bytes


def _whole_run(
    work_h: float,
    instances: int,
    gpus: int,
    spot_per_instance_day: float,
    ckpt_bytes: float,
    a: PerfAssumptions,
    generations: tuple[str, ...],
) -> tuple[Goodput, Preemption]:
    """model/goodput.whole_run with the job's checkpoint size and assumptions, at the failure
    rate of the GPUs' generations."""
    conversion_s = ckpt_bytes / GB / a.checkpoint_conversion_gb_s if a.checkpoint_conversion_gb_s > 0 else 0.0
    return whole_run(
        work_h * SECONDS_PER_HOUR,
        instances,
        gpus,
        spot_per_instance_day,
        failure_rate(generations, a.failures_per_gpu_day),
        ckpt_bytes,
        a.checkpoint_write_gb_s_per_instance,
        a.restart_s,
        RunOverheads(a.provisioning_s + a.startup_s, a.evaluation_share, conversion_s),
    )


def spot_hours(
    off: Offering, instances: int, work_h: float, model: ModelSpec, setup: TrainingSetup, a: PerfAssumptions
) -> tuple[float, Preemption | None]:
    """(expected wall hours, the spot interruption estimate or None) of `work_h` hours of
    training: run_hours without the breakdown."""
    hours, p, _ = run_hours(off, instances, work_h, model, setup, a)
    return hours, p
