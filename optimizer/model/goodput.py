"""The whole run, not the step: the wall hours of a training job from its compute hours, plus
start-up, checkpoint writes and the work lost to interruptions (hardware failures of any
pricing model, and spot reclaims), with the expected goodput (compute ÷ wall hours).

Interruptions of any cause stop a synchronous job (one failed GPU restarts all of them: Dubey
et al. 2024, "The Llama 3 Herd of Models", §3.3.4), so their rates add over GPUs and instances;
the checkpoint interval and expected wall time are Daly's (model/preemption.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from optimizer.model.preemption import Preemption, preemption
from optimizer.units import SECONDS_PER_HOUR

__all__ = [
    "LLAMA3_INTERRUPTIONS",
    "LLAMA3_DAYS",
    "LLAMA3_GPUS",
    "PUBLISHED_FAILURES_PER_GPU_DAY",
    "BLOOM_FAILURES_PER_GPU_DAY",
    "MEASURED_FAILURE_RATES",
    "FailureRate",
    "Goodput",
    "RunOverheads",
    "failure_rate",
    "whole_run",
]

#: Dubey et al. 2024 §3.3.4 (Table 5): 419 unexpected interruptions in a 54-day snapshot of
#: Llama 3 405B pre-training on 16,384 H100 GPUs (47 planned interruptions are not counted)
LLAMA3_INTERRUPTIONS = 419
LLAMA3_DAYS = 54
LLAMA3_GPUS = 16_384
#: unexpected interruptions per GPU-day: 419 / (54 × 16,384) = 4.74e-4 (Dubey et al. 2024 §3.3.4)
PUBLISHED_FAILURES_PER_GPU_DAY = LLAMA3_INTERRUPTIONS / (LLAMA3_DAYS * LLAMA3_GPUS)
LLAMA3_SOURCE = "Dubey et al. 2024 (Llama 3) §3.3.4: 419 unexpected interruptions in 54 days on 16,384 H100"
#: BLOOM-176B on 384 A100 of Jean Zay: "on average we were getting 1-2 GPU failures a week"
#: (Bekman 2022, https://huggingface.co/blog/bloom-megatron-deepspeed, read 2026-12-05):
#: 1.5 / (7 × 384) = 5.58e-4 per GPU-day
BLOOM_FAILURES_PER_GPU_DAY = 1.5 / (7 * 384)
BLOOM_SOURCE = (
    "Bekman 2022, The Technology Behind BLOOM Training (huggingface.co/blog/bloom-megatron-deepspeed): "
    "1-2 GPU failures a week on 384 A100"
)


@dataclass(frozen=True)
class FailureRate:
    """Unexpected job interruptions per GPU-day of one GPU generation, and where it comes from."""

    per_gpu_day: float
    source: str


#: the generations with a published whole-job rate (GpuSpec.generation)
MEASURED_FAILURE_RATES: dict[str, FailureRate] = {
    "hopper": FailureRate(PUBLISHED_FAILURES_PER_GPU_DAY, LLAMA3_SOURCE),
    "ampere-dc": FailureRate(BLOOM_FAILURES_PER_GPU_DAY, BLOOM_SOURCE),
}


def failure_rate(generations: tuple[str, ...], override: float | None) -> FailureRate:
    """The interruption rate of a job on GPUs of `generations` (two for a mixed cluster: the
    higher rate, as any GPU stops the job): the job's [assumptions] override, else the
    generation's published rate, else Hopper's (a GUESS, said in the source)."""
    if override is not None:
        return FailureRate(override, "the job's [assumptions] failures_per_gpu_day")
    rates = [_generation_rate(g) for g in generations] or [_generation_rate("hopper")]
    return max(rates, key=lambda r: r.per_gpu_day)


def _generation_rate(generation: str) -> FailureRate:
    found = MEASURED_FAILURE_RATES.get(generation)
    if found is not None:
        return found
    return FailureRate(
        PUBLISHED_FAILURES_PER_GPU_DAY,
        f"GUESS: no published whole-job rate for {generation} GPUs; Hopper's ({LLAMA3_SOURCE})",
    )


@dataclass(frozen=True)
class Goodput:
    """Where a run's wall hours go: computing, writing checkpoints, redoing work lost to
    interruptions plus restarting, and starting up once (provisioning, image, data, compile)."""

    compute_h: float
    checkpoint_h: float
    failures_h: float
    startup_h: float
    failures_per_gpu_day: float
    gpus: int
    expected_interruptions: float
    checkpoint_interval_h: float
    #: forward-only evaluation passes between steps (RunOverheads.evaluation_share × compute)
    evaluation_h: float = 0.0
    #: converting the final checkpoint for release or serving (RunOverheads), once at the end
    conversion_h: float = 0.0
    failure_rate_source: str = LLAMA3_SOURCE

    @property
    def wall_h(self) -> float:
        """Expected wall-clock hours of the whole run (what the plan's `hours` is)."""
        return (
            self.compute_h
            + self.evaluation_h
            + self.checkpoint_h
            + self.failures_h
            + self.startup_h
            + self.conversion_h
        )

    @property
    def goodput(self) -> float:
        """Compute hours ÷ wall hours (Kokolis et al. 2024 call it the effective training time ratio)."""
        return self.compute_h / self.wall_h if self.wall_h > 0 else 1.0

    @property
    def hardware_failures_per_day(self) -> float:
        """Expected hardware interruptions per day of the whole cluster (rate × GPUs)."""
        return self.failures_per_gpu_day * self.gpus

    def scaled(self, ratio: float) -> Goodput:
        """The same run with `ratio` × the running hours (start-up unchanged): a row re-read at
        another quantile of its band (the loss to interruptions taken as proportional)."""
        return replace(
            self,
            compute_h=self.compute_h * ratio,
            evaluation_h=self.evaluation_h * ratio,
            checkpoint_h=self.checkpoint_h * ratio,
            failures_h=self.failures_h * ratio,
            expected_interruptions=self.expected_interruptions * ratio,
        )


@dataclass(frozen=True)
class RunOverheads:
    """What a run spends besides its steps, checkpoints and failures (PerfAssumptions): start-up
    once, evaluation in proportion to compute, and the final checkpoint's conversion."""

    startup_s: float = 0.0
    evaluation_share: float = 0.0
    conversion_s: float = 0.0


def whole_run(
    work_s: float,
    instances: int,
    gpus: int,
    spot_per_instance_day: float,
    rate: FailureRate,
    ckpt_bytes: float,
    write_gb_s_per_instance: float,
    restart_s: float,
    overheads: RunOverheads,
) -> tuple[Goodput, Preemption]:
    """The goodput breakdown of `work_s` seconds of computation on `instances` instances of
    `gpus` GPUs in all: the job is interrupted at spot_per_instance_day × instances +
    rate × gpus per day (rates add: Dubey et al. 2024 §3.3.4), checkpoints every Daly 2006
    interval, evaluates along the way (exposed to interruptions like the steps), starts up
    once and converts its last checkpoint once.

    Returns (the breakdown, the Daly estimate behind it)."""
    running_s = work_s * (1.0 + overheads.evaluation_share)
    hardware_per_instance_day = rate.per_gpu_day * gpus / instances
    p = preemption(
        running_s,
        instances,
        spot_per_instance_day + hardware_per_instance_day,
        ckpt_bytes,
        write_gb_s_per_instance,
        restart_s,
    )
    # writes between checkpoints of τ compute seconds: work/τ writes of δ each (Daly 2006 §2)
    tau_s = p.checkpoint_interval_s
    writes_s = 0.0 if math.isinf(tau_s) else running_s / tau_s * p.checkpoint_write_s
    lost_s = max(p.expected_wall_s - running_s - writes_s, 0.0)
    interruptions = 0.0 if p.interruptions_per_instance_day <= 0 else p.expected_interruptions
    goodput = Goodput(
        compute_h=work_s / SECONDS_PER_HOUR,
        checkpoint_h=writes_s / SECONDS_PER_HOUR,
        failures_h=lost_s / SECONDS_PER_HOUR,
        startup_h=overheads.startup_s / SECONDS_PER_HOUR,
        failures_per_gpu_day=rate.per_gpu_day,
        gpus=gpus,
        expected_interruptions=interruptions,
        checkpoint_interval_h=p.checkpoint_interval_h,
        evaluation_h=(running_s - work_s) / SECONDS_PER_HOUR,
        conversion_h=overheads.conversion_s / SECONDS_PER_HOUR,
        failure_rate_source=rate.source,
    )
    return goodput, p
