"""The activation factor a measured peak memory implies (`ccopt calibrate --peak-memory-gib`).

Of the training-memory terms (optimizer.model.memory.training_memory) weights, gradients and
optimizer states are exact byte counts of the model, the precision and the layout (Rajbhandari
et al. 2020, §3); what a stack saves for backward is the least-known term (what eager modules,
fused kernels and the loss keep: optimizer/model/activations.py). So a measured peak corrects the
activation bytes alone: every metric a framework reports (allocated, reserved, nvidia-smi) is
affine in them (reserved = allocated × (1 + cache), device = reserved + context:
MemoryBreakdown), so the factor f that reproduces the peak is exact:
f = (measured − metric without activations) / (metric with activations − metric without).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from optimizer.model.memory import training_memory
from optimizer.model.memory_breakdown import MemoryBreakdown
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec

__all__ = ["MemoryFit", "fit_activation_factor"]


@dataclass(frozen=True)
class MemoryFit:
    """What a measured peak implies for one configuration (GiB per GPU)."""

    #: multiplier of the model's activation bytes that reproduces the measured peak
    factor: float
    #: the uncalibrated model's breakdown of the configuration
    model: MemoryBreakdown
    #: the measured metric with no activations at all (states + workspace, cache, context)
    without_activations_gib: float
    #: the same metric of the uncalibrated model (factor 1)
    predicted_gib: float


def fit_activation_factor(
    model: ModelSpec,
    setup: TrainingSetup,
    layout: Layout,
    measured_gib: float,
    kind: str,
    assumptions: PerfAssumptions,
) -> MemoryFit:
    """The activation factor that makes training_memory(...).metric(kind) equal `measured_gib`,
    relative to the model under `assumptions` without a calibrated factor for this model ×
    stack (the fitted stack multiplier kept)."""
    key = (model.name, setup.stack)
    others = {k: v for k, v in assumptions.memory_calibrated.items() if k != key}
    plain = training_memory(model, setup, layout, replace(assumptions, memory_calibrated=others))
    empty = training_memory(
        model, setup, layout, replace(assumptions, memory_calibrated={**others, key: 0.0})
    )
    base, full = empty.metric(kind), plain.metric(kind)
    # the metric is affine in the activation bytes (module docstring): solve for the factor
    factor = (measured_gib - base) / (full - base) if full > base else 1.0
    return MemoryFit(factor=factor, model=plain, without_activations_gib=base, predicted_gib=full)
