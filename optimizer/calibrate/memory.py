"""`ccopt calibrate --peak-memory-gib X --memory-kind K`: a measured peak memory per GPU of a
transformer run calibrates the activation bytes of that model × stack (optimizer.model.
memory_fit: weights, gradients and optimizer states are exact byte counts, activations are the
least-known term). Every later estimate and plan of that model × stack, any layout and GPU,
multiplies the activations it counts by the stored factor."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from optimizer.configuration.build import Built
from optimizer.inputs.calibration import base_assumptions
from optimizer.inputs.calibration_file import check_activation_factor, check_memory
from optimizer.inputs.calibration_store import add_memory_point, load_memory_points
from optimizer.inputs.request import ConfigRequest
from optimizer.model.memory import training_memory
from optimizer.model.memory_fit import MemoryFit, fit_activation_factor
from optimizer.model.setup import PerfAssumptions

__all__ = ["MemoryPoint", "check_memory_point", "store_memory_point"]


@dataclass(frozen=True)
class MemoryPoint:
    """A measured peak checked against the model, not stored yet."""

    peak_gib: float
    kind: str
    #: "given" (--memory-kind), "default" (none given: calibration_file.DEFAULT_MEMORY_KIND),
    #: "file" (a `ccopt measure` point)
    kind_source: str
    fit: MemoryFit
    #: the prediction of this run under the peaks stored before (None: none of this model × stack)
    previous_gib: float | None


def check_memory_point(
    built: Built, peak_gib: float, kind: str, kind_source: str, force: bool, stored: PerfAssumptions
) -> MemoryPoint:
    """Fit the activation factor of `built`'s run to its measured peak and refuse what cannot be
    (above the card, below the exact states, no room for activations) or is implausible
    (calibration_file.check_activation_factor; `force` stores the latter)."""
    check_memory(peak_gib, built.gpu)
    setup, layout = built.setup, built.layout
    assert setup is not None and layout is not None  # a training configuration (caller checks)
    fit = fit_activation_factor(built.spec, setup, layout, peak_gib, kind, stored)
    check_activation_factor(fit.factor, peak_gib, kind, fit.model.states, fit.without_activations_gib, force)
    key = (built.spec.name, setup.stack)
    previous = (
        training_memory(built.spec, setup, layout, stored).metric(kind)
        if key in stored.memory_calibrated
        else None
    )
    return MemoryPoint(peak_gib, kind, kind_source, fit, previous)


def store_memory_point(
    built: Built, req: ConfigRequest, point: MemoryPoint, layout_dict: Any
) -> dict[str, Any]:
    """Store a checked peak with its request; the `memory` block of `ccopt calibrate --json`."""
    setup, layout = built.setup, built.layout
    assert setup is not None and layout is not None
    model, stack = built.spec.name, setup.stack
    stored, replaced = add_memory_point(
        {
            "model": model,
            "stack": stack,
            "gpu": built.gpu.gpu_id,
            "precision": built.precision,
            "kind": point.kind,
            "peak_gib": point.peak_gib,
            "activation_factor": point.fit.factor,
            "measured": {
                "model": model,
                "num_gpus": built.num_gpus,
                "layout": layout_dict,
                "seq_len": built.seq_len,
                "stack": built.stack,
                "request": {**req.recorded(), "precision": built.precision},
            },
        }
    )
    now = base_assumptions()
    after = training_memory(built.spec, setup, layout, now)
    group = now.memory_calibrated[(model, stack)]
    peaks = [p for p in load_memory_points() if (p["model"], p["stack"]) == (model, stack)]
    plain = point.fit.model
    scope = _scope(model, stack, group, len(peaks))
    return {
        "id": stored["id"],
        "replaced": replaced,
        "model": model,
        "stack": stack,
        "kind": point.kind,
        "kind_source": point.kind_source,
        "measured_gib": point.peak_gib,
        "activation_factor": round(point.fit.factor, 6),
        "group_activation_factor": round(group, 6),
        "peaks": len(peaks),
        "states_gib": round(plain.states, 3),
        "activations_before_gib": round(plain.activations, 3),
        "activations_after_gib": round(after.activations, 3),
        "predicted_before_gib": round(point.fit.predicted_gib, 3),
        **({"previous_gib": round(point.previous_gib, 3)} if point.previous_gib is not None else {}),
        "calibrated_gib": round(after.metric(point.kind), 3),
        "scope": scope,
    }


def _scope(model: str, stack: str, group_factor: float, n_peaks: int) -> str:
    """Which predictions the stored peaks of `model` × `stack` change, in words."""
    how = (
        "this peak's factor"
        if n_peaks == 1
        else f"the geometric mean of the factors of its {n_peaks} stored peaks"
    )
    return (
        f"affects the memory of training estimates and plans of {model} with stack {stack}, every "
        f"layout and GPU type: the activations the model counts × {group_factor:.3f} ({how}); weights, "
        "gradients and optimizer states stay exact byte counts; other models and stacks keep "
        "the model's own count"
    )
