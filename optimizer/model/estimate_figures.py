"""The figures of a one-configuration estimate (`ccopt estimate`) that its JSON shows beside
the memory and the step: the model's size, whether the memory fits the card, and for serving
the totals over the replicas the GPUs hold (optimizer.report.estimate formats them)."""

from __future__ import annotations

from dataclasses import dataclass

from optimizer.model.hardware import GpuSpec
from optimizer.model.memory_breakdown import MemoryBreakdown
from optimizer.model.serving import ServePerf
from optimizer.model.spec import ModelSpec

__all__ = ["EstimateFigures", "train_estimate_figures", "serve_estimate_figures"]


@dataclass(frozen=True)
class EstimateFigures:
    params: float
    active_params: float
    fits: bool  # the device memory (nvidia-smi) fits the card
    replicas: int = 1  # serving: replicas of tp GPUs among the GPUs estimated
    output_tokens_per_s: float | None = None  # serving: over all replicas
    requests_per_s: float | None = None  # serving: over all replicas


def train_estimate_figures(spec: ModelSpec, gpu: GpuSpec, mem: MemoryBreakdown) -> EstimateFigures:
    return EstimateFigures(spec.params(), spec.active_params(), mem.fits(gpu.memory_gib))


def serve_estimate_figures(
    spec: ModelSpec, gpu: GpuSpec, gpus: int, tp: int, mem: MemoryBreakdown, perf: ServePerf
) -> EstimateFigures:
    replicas = gpus // tp
    return EstimateFigures(
        spec.params(),
        spec.active_params(),
        mem.fits(gpu.memory_gib),
        replicas,
        perf.output_tokens_per_s * replicas,
        perf.requests_per_s * replicas,
    )
