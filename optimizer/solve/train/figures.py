"""The figures of one training plan that reports and the JSON show, computed once by the solve
layer (optimizer.solve.train.plan_figures) and attached to the Candidate: the report formats
them and does no arithmetic of its own.

This module holds the types only (no import of Candidate), so the Candidate can name them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["PlanFigures", "DataLines", "JobFigures"]


@dataclass(frozen=True)
class JobFigures:
    """The job as planned: what `ccopt estimate --model` takes for its model, its parameters
    and the tokens it processes."""

    model_ref: str | None  # None: an inline shape or profile
    params: float
    tokens: float


@dataclass(frozen=True)
class DataLines:
    """The [data] lines of a plan's cost (what `cost_usd` added for the data), USD."""

    egress_usd: float  # moving the dataset to the offering once
    dataset_storage_usd: float
    checkpoint_storage_usd: float
    storage_usd: float  # dataset copy + checkpoints
    total_usd: float  # transfer + dataset copy + checkpoints over the plan's hours
    share_of_cost: float  # total_usd / the plan's cost_usd (0 for a free plan)


@dataclass(frozen=True)
class PlanFigures:
    """Every derived figure of one plan (unrounded; the report rounds)."""

    #: the step-time band: P10, P50 and P90 multipliers (a profile's own, else the band of the
    #: GPU generation × precision × stack, optimizer/model/bands.py) and what they make of the
    #: step, the hours, days and cost
    p10: float
    p50: float
    p90: float
    step_time_s_p10: float
    step_time_s_p50: float
    step_time_s_p90: float
    hours_p10: float
    hours_p50: float
    hours_p90: float
    days: float  # at the plan's confidence (the hours the deadline was checked with)
    days_p10: float
    days_p50: float
    days_p90: float
    cost_usd_p10: float  # cost_usd of the same offering and instances over hours_p10
    cost_usd_p50: float
    cost_usd_p90: float
    confidence: float | None  # the quantile `days` and the plan's cost are at (None: the point)
    band_cases: int  # measured runs the band rests on (0: the wide prior alone)
    band_sources: int
    band_basis: str  # the evidence group ("hopper/16/megatron-core"), "prior" or "profile"
    #: the cost lines of the expected plan (pricing.offering.cost_usd): running (GPU time,
    #: reserved commitment, or an owned box's power), capital, data; their sum is cost_usd
    running_usd: float
    data_usd: float
    gpu_hours: float
    data: DataLines | None  # None: the job has no [data] section
    #: memory per GPU: the card minus what the device holds, and that as a share of the card
    memory_headroom_gib: float
    memory_headroom_fraction: float
    memory_headroom_required_gib: float | None  # the headroom the job keeps (None: no job)
    #: the device peak at the memory band's P10 and P90 (bands.memory_band: measured ÷
    #: predicted, widened for sources the model was never shaped on)
    memory_device_gib_p10: float
    memory_device_gib_p90: float
    memory_confidence: float | None  # the band quantile memory was fitted at (None: the point)
    intra_node_path: str
    intra_node_bw_gb_s: float
    tokens: int  # tokens processed over the job (0 without a job)
    sample_unit: str | None  # a job that counts samples: what one is; None: tokens
    samples_per_s: float | None
    options: dict[str, Any]  # the searched options chosen (solve/train/variants.options_of)
    warnings: tuple[str, ...]  # what to double-check before spending money
    host_unit: str  # the unit of the loader rates: img/s or samples/s
    loader_bound: bool  # the data loader, not the GPUs, sets the step rate
    #: an alternative: what it costs over the chosen plan (None: not an alternative)
    extra_cost_usd: float | None = None
