"""The JSON contract of `ccopt calibrate` (a stored run) and `ccopt calibrate --list`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, RootModel

from optimizer.model.memory_breakdown import MEMORY_KINDS
from optimizer.report.contract.common import SCHEMA_VERSION, Contract

__all__ = [
    "PredictionOut",
    "CalibrateOutput",
    "CalibrationFitOut",
    "CalibrationMemoryOut",
    "CalibrationRunOut",
    "CalibrationListOutput",
    "CalibrationLogOut",
]


class PredictionOut(Contract):
    """A per-sample model's predicted speed on one GPU and its P10-P90 step-time band."""

    samples_per_s: float = Field(description="samples/s of one GPU at the run's micro-batch")
    band: list[float] = Field(description="(P10, P90) multipliers of the step time")


class CalibrationFitOut(Contract):
    """The calibration of one GPU × precision × stack fitted to its stored runs
    (optimizer.model.calibrated)."""

    model: str = Field(description="the fitted model in words (kriging in log space)")
    level: float = Field(description="the shared part's base efficiency at size factor 1")
    size_exponent: float = Field(
        description="of the shared part's achieved efficiency in the size factor: 1 with one run "
        "(the model's own size curve)"
    )
    size_range: list[float] = Field(description="the size factors the runs span (the slope holds there)")
    runs: int = Field(description="stored runs the curve is fitted to")
    uncalibrated_efficiency: float | None = Field(
        default=None, description="the base efficiency before calibration the corrections are relative to"
    )
    transfer: float | None = Field(
        default=None,
        description="share of the runs' mean log correction a layout of another size factor gets "
        "(the rest belongs to the measured layouts)",
    )
    comm_model: str | None = Field(default=None, description="the communication split in words")
    comm_multiplier: float | None = Field(
        default=None, description="× the modelled communication on this run's fabric (1: not fitted)"
    )
    fabric: str | None = Field(default=None, description="the fabric of this run (GPUs per node, network)")
    fabric_runs: int | None = Field(default=None, description="stored runs of this GPU type on that fabric")
    comm_share: float | None = Field(default=None, description="communication share of this run's step")
    shared_change_pct: float | None = Field(
        default=None,
        description="the change of every other layout's compute efficiency at size factor 1, in %",
    )


class CalibrationRunOut(Contract):
    """One stored run of the fitted group: what it measured and what is predicted now."""

    id: str
    model: str | None = None
    layout: str | None = Field(default=None, description="dp/tp/pp/cp, micro-batch, sequence length")
    size_factor: float = Field(description="of its micro-batch (optimizer.model.efficiency.size_factor)")
    measured_efficiency: float = Field(description="achieved fraction of the dense peak that reproduces it")
    comm_share: float | None = Field(
        default=None, description="exposed communication's share of its step (the model's split)"
    )
    fitted_efficiency: float = Field(description="the curve's efficiency at its size factor")
    measured_step_s: float | None = None
    predicted_step_s: float | None = Field(default=None, description="estimate of its request now")
    error_pct: float | None = Field(default=None, description="predicted / measured − 1, in %")


class CalibrationMemoryOut(Contract):
    """A measured peak memory stored for a model × stack: the activation factor it implies."""

    id: str = Field(description="the stored peak's id (--remove ID)")
    replaced: list[str] = Field(description="ids of stored peaks of the same request and kind it replaced")
    model: str
    stack: str
    kind: Literal[MEMORY_KINDS] = Field(  # type: ignore[valid-type]
        description="what the peak measures: torch.cuda.max_memory_allocated, "
        "max_memory_reserved, or the device as nvidia-smi shows it"
    )
    kind_source: Literal["given", "default", "file"] = Field(
        description="given (--memory-kind), default (nvidia-smi: none given), file (a `ccopt measure` point)"
    )
    measured_gib: float = Field(description="the measured peak per GPU")
    activation_factor: float = Field(description="× the model's activation bytes that reproduces this peak")
    group_activation_factor: float = Field(
        description="the factor estimates and plans of this model × stack now use "
        "(geometric mean of its peaks)"
    )
    peaks: int = Field(description="stored peaks of this model × stack")
    states_gib: float = Field(description="weights + gradients + optimizer states of the run (exact)")
    activations_before_gib: float = Field(description="activations of the run, uncalibrated")
    activations_after_gib: float = Field(description="… and now")
    predicted_before_gib: float = Field(description="the run's peak of this kind, uncalibrated")
    previous_gib: float | None = Field(
        default=None, description="… under the peaks stored before (absent: none of this model × stack)"
    )
    calibrated_gib: float = Field(description="the run's peak of this kind that estimate now reports")
    scope: str = Field(description="which predictions the stored peaks change, in words")


class CalibrationLogOut(Contract):
    """What `ccopt calibrate --from-log` read from a training log and handed to the fit."""

    file: str
    format: str = Field(
        description="torchtitan | megatron | nemo | deepspeed | hf-trainer | lightning | composer"
    )
    steps_logged: int = Field(description="timed steps (or logged batches) the log prints")
    steps_used: int = Field(description="after the warm-up: the medians are of these")
    warmup_steps: int = Field(description="steps numbered up to this are skipped (--warmup-steps)")
    lines: list[int] = Field(description="first and last line of the steps used")
    measured: dict[str, float] = Field(
        description="the medians the log prints (step_time_s, tokens_per_s, tokens_per_s_per_gpu, "
        "samples_per_s, batch_time_s, tflops_per_gpu, mfu_pct), as printed"
    )
    used: dict[str, float] = Field(
        description="what calibrate was given, as if typed: tokens_per_s or step_time_s, peak_memory_gib"
    )
    conversion: str = Field(description="how the printed figure became the one given, in words")
    memory_kind: str | None = Field(
        default=None, description="the kind of the peak read (allocated | reserved)"
    )
    memory_line: int | None = None
    from_plan: list[str] | None = Field(
        default=None, description="options taken from --from-plan (the flags given win)"
    )
    notes: list[str] = Field(default_factory=list)


class CalibrateOutput(Contract):
    """`ccopt calibrate --json`."""

    schema_version: int = SCHEMA_VERSION
    status: Literal["calibrated"] | None = Field(default=None, description="calibrated: the run is stored")
    kind: str = Field(
        default="efficiency",
        description="efficiency (a transformer: the GPU "
        "type's base efficiency is fitted; with --peak-memory-gib also `memory`) | memory (a "
        "transformer's measured peak alone: `memory`) | profile_point (a per-sample model: "
        "the run is stored as a measured point)",
    )
    gpu: str
    precision: str
    efficiency: float | None = Field(
        default=None,
        description="stored BASE efficiency of the "
        "GPU type × precision (kind efficiency; = base_efficiency; "
        "estimate's `efficiency` is the effective one)",
    )
    base_efficiency: float | None = Field(
        default=None, description="kind efficiency: the stored efficiency before the size factor"
    )
    effective_efficiency: float | None = Field(
        default=None, description="what estimate reports for this run: base × size factor"
    )
    default_prediction_step_s: float | None = None
    calibrated_prediction_step_s: float | None = None
    measured_step_s: float | None = None
    measured_tokens_per_s: float | None = Field(default=None, description="over all GPUs")
    gpus: int | None = Field(default=None, description="GPUs of the measured run")
    gpus_per_instance: int | None = None
    inter_node_gbps: float | None = Field(default=None, description="network the fit used")
    inter_node_is_default: bool | None = None
    instance: str | None = Field(default=None, description="--instance as PROVIDER:INSTANCE")
    provider: str | None = None
    instance_type: str | None = None
    file: str
    id: str | None = Field(default=None, description="kind efficiency: the stored run's id (--remove ID)")
    stack: str | None = Field(default=None, description="kind efficiency: the software stack of the run")
    replaced: list[str] | None = Field(
        default=None, description="ids of stored runs of the same request this one replaced"
    )
    scope: str | None = Field(
        default=None, description="kind efficiency: which predictions the stored runs change, in words"
    )
    efficiency_before: float | None = Field(
        default=None, description="this run's effective efficiency under the uncalibrated model"
    )
    efficiency_after: float | None = Field(default=None, description="… and now (= effective_efficiency)")
    efficiency_change_pct: float | None = Field(default=None, description="after / before − 1, in %")
    previous_prediction_step_s: float | None = Field(
        default=None, description="this run's step under the runs stored before it (absent: none)"
    )
    peak_memory_gib: float | None = Field(default=None, description="measured peak memory per GPU")
    fit: CalibrationFitOut | None = None
    from_log: CalibrationLogOut | None = Field(
        default=None, description="--from-log: what was read from the training log"
    )
    memory: CalibrationMemoryOut | None = Field(
        default=None,
        description="a measured peak memory of a transformer run, stored (kind efficiency or memory)",
    )
    runs: list[CalibrationRunOut] | None = Field(
        default=None, description="kind efficiency: every stored run of the GPU × precision × stack"
    )
    model: str | None = Field(default=None, description="kind profile_point: the model name")
    samples_per_s: float | None = Field(
        default=None, description="kind profile_point: measured over all num_gpus GPUs"
    )
    num_gpus: int | None = Field(default=None, description="kind profile_point: GPUs of the run")
    samples_per_s_per_gpu: float | None = Field(
        default=None, description="kind profile_point: measured per GPU (the basis of before/after)"
    )
    micro_batch: int | None = None
    before: PredictionOut | None = Field(
        default=None, description="kind profile_point: the prediction on that GPU before the run was stored"
    )
    after: PredictionOut | None = Field(default=None, description="kind profile_point: after")


class CalibrationRowOut(Contract):
    """One stored run (`ccopt calibrate --list --json`)."""

    schema_version: int = SCHEMA_VERSION
    id: str = Field(description="what --remove takes")
    kind: Literal["speed", "memory"] = Field(
        default="speed", description="speed (a measured step: efficiency) | memory (a measured peak)"
    )
    gpu: str
    precision: str
    stack: str = Field(description="any: an entry stored before runs were kept per stack")
    model: str | None = None
    layout: str | None = None
    measured_step_s: float | None = None
    measured_tokens_per_s: float | None = None
    efficiency: float | None = Field(
        default=None, description="kind speed: base efficiency fitted to the run (before the size factor)"
    )
    measured_peak_gib: float | None = Field(
        default=None, description="kind memory: the measured peak per GPU"
    )
    memory_kind: str | None = Field(
        default=None, description="kind memory: allocated | reserved | nvidia-smi"
    )
    activation_factor: float | None = Field(
        default=None, description="kind memory: × the model's activation bytes it implies"
    )
    size_factor: float | None = Field(default=None, description="null: an old entry")
    when: str | None = Field(default=None, description="UTC time it was stored (null: an old entry)")
    file: str


class CalibrationListOutput(RootModel[list[CalibrationRowOut]]):
    """`ccopt calibrate --list --json`: every stored run of a transformer, oldest first."""
