"""The hardware a layout runs on (`Cluster`) and one timed optimizer step (`StepTime`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from optimizer.model.hardware import GpuSpec

__all__ = ["Cluster", "StepTime"]


@dataclass(frozen=True)
class Cluster:
    """The hardware a layout runs on: `nodes` instances of `gpus_per_node` GPUs each."""

    gpu: GpuSpec
    gpus_per_node: int
    nodes: int = 1
    inter_node_gbps: float = 100.0  # Gbit/s per node (NIC aggregate)

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes


@dataclass(frozen=True)
class StepTime:
    """One optimizer step in seconds, with its parts and throughput figures."""

    time_s: float
    compute_s: float
    communication_s: float
    bubble_s: float
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    mfu: float
    hfu: float
    efficiency: float
    calibrated: bool
    parts_s: dict[str, float] = field(default_factory=dict)
    #: (P10, P90) multipliers of time_s when the model states its own band (a SampleProfile);
    #: None: the fitted interval of the stack and GPU class applies
    interval: tuple[float, float] | None = None
    #: the model's MFU before the plausibility ceiling clipped it (optimizer/model/ceilings.py);
    #: None: not clipped. `ceiling_note` says which ceiling
    mfu_unclipped: float | None = None
    ceiling_note: str = ""
    #: the fitted band's P50 the time carries (optimizer/model/bands.py): time_s = the parts'
    #: sum (compute, communication, bubble, host wait) × centre (the parts are the model's
    #: physics); 1 when calibrated or not fitted
    centre: float = 1.0
    #: the GPU idle while the host launches an eager step's kernels (optimizer/model/dispatch.py)
    host_wait_s: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return {
            "time_s": round(self.time_s, 4),
            "compute_s": round(self.compute_s, 4),
            "communication_s": round(self.communication_s, 4),
            "bubble_s": round(self.bubble_s, 4),
            "host_wait_s": round(self.host_wait_s, 4),
        }
