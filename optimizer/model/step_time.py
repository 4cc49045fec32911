"""Training step time of a layout on a cluster: compute, communication, pipeline bubble.

The arithmetic lives in the step model of the model's kind (optimizer/model/step_model.py),
built once per GPU type by the planner; these functions build one for a single question.
"""

from __future__ import annotations

from optimizer.model.ceilings import mfu_ceiling
from optimizer.model.cluster import Cluster, StepTime
from optimizer.model.efficiency import base_efficiency, hidden_half, size_factor
from optimizer.model.hardware import GpuSpec
from optimizer.model.pcie import dp_bus_bandwidth_gb_s, p2p_bandwidth_gb_s
from optimizer.model.profile import AnyModel
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.step_model import (
    MicrobatchTimes,
    comm_multiplier,
    step_model_for,
)
from optimizer.model.step_model import (
    clip_to_ceiling as _clip,
)

__all__ = [
    "Cluster",
    "StepTime",
    "training_step_time",
    "compute_efficiency",
    "bubble_fraction",
    "dp_bus_bandwidth_gb_s",
    "p2p_bandwidth_gb_s",
    "microbatch_times_s",
    "microbatch_size_factor",
    "comm_multiplier",
    "clip_to_ceiling",
]


def bubble_fraction(pp: int, microbatches: int) -> float:
    """1F1B pipeline bubble (p−1)/(m+p−1) of the step (Narayanan et al. 2021, §2.2.1)."""
    return (pp - 1) / (microbatches + pp - 1) if pp > 1 else 0.0


def compute_efficiency(
    gpu: GpuSpec, precision: str, assumptions: PerfAssumptions, stack: str = "generic"
) -> tuple[float, bool]:
    """(efficiency, calibrated?): explicit override > user calibration > default table × fit.

    An upper bound of the achieved efficiency of any layout (the size curve is ≤ 1)."""
    return base_efficiency(gpu, precision, assumptions, stack)


def microbatch_size_factor(
    model: ModelSpec, setup: TrainingSetup, layout: Layout, assumptions: PerfAssumptions
) -> float:
    """The size factor (efficiency.size_factor) of one micro-batch on one GPU: its b·s/cp
    tokens and the model's hidden size (what a calibrated curve is a function of)."""
    tokens_mb = layout.micro_batch * setup.seq_len / layout.cp
    return size_factor(tokens_mb, model.hidden, hidden_half(assumptions))


def microbatch_times_s(
    model: AnyModel,
    setup: TrainingSetup,
    layout: Layout,
    cluster: Cluster,
    assumptions: PerfAssumptions | None = None,
) -> MicrobatchTimes:
    """(compute, exposed tensor/context-parallel comm, exposed pipeline p2p, efficiency) of one
    micro-batch on one GPU (StepModel.microbatch_times_s of the model's kind)."""
    a = assumptions or PerfAssumptions()
    return step_model_for(model, setup, cluster.gpu, a).microbatch_times_s(layout, cluster)


def training_step_time(
    model: AnyModel,
    setup: TrainingSetup,
    layout: Layout,
    cluster: Cluster,
    assumptions: PerfAssumptions | None = None,
    microbatch: MicrobatchTimes | None = None,
) -> StepTime:
    """Seconds per optimizer step of `layout` on `cluster`, with breakdown
    (StepModel.step_time of the model's kind; `microbatch`: precomputed micro-batch times)."""
    a = assumptions or PerfAssumptions()
    return step_model_for(model, setup, cluster.gpu, a).step_time(layout, cluster, microbatch)


def clip_to_ceiling(step: StepTime, gpu: GpuSpec, precision: str, a: PerfAssumptions) -> StepTime:
    """`step` slowed to the MFU ceiling of `gpu` × `precision` when it predicts more, flagged."""
    return _clip(step, gpu, precision, mfu_ceiling(gpu, precision, a))
