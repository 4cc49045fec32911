"""Job files (TOML) and their validation: model, workload, constraints, hardware, calibration."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import Field, field_validator, model_validator

from optimizer.errors import ConfigError
from optimizer.inputs.jobs.common import (
    MAX_DAYS,
    MAX_TOKENS,
    AssumptionOverrides,
    Calibration,
    Hardware,
    HardwareEntry,
    JobFile,
    ModelRef,
    StrictModel,
    coerce_document,
    confidence_field,
    format_validation_error,
    stack_name,
)
from optimizer.inputs.jobs.constraint_fields import (
    AllowedNames,
    BudgetUsd,
    CloudAllowed,
    DutyCycle,
    GpuTypes,
    JobsPerMonth,
    PricingModels,
)
from optimizer.inputs.jobs.data import DataSpec
from optimizer.inputs.jobs.kind import job_of_kind
from optimizer.inputs.jobs.limits import MAX_GPUS_PER_INSTANCE, MAX_USD_PER_GPU_HOUR
from optimizer.inputs.jobs.progress import Progress
from optimizer.inputs.jobs.search import Search
from optimizer.inputs.jobs.strict import RenamedFieldsModel
from optimizer.inputs.toml_file import read_toml_as
from optimizer.inputs.validation import check_number
from optimizer.model.bands import CONFIDENCE_RANGE
from optimizer.model.profile import SAMPLE_UNITS, SampleProfile
from optimizer.model.setup import (
    CHECKPOINTING,
    Attention,
    Optimizer,
    TrainingSetup,
    TrainPrecision,
)
from optimizer.model.spec import LINEAR_MODULES, ModelSpec
from optimizer.vocabulary import RL_KINDS

__all__ = [
    "Job",
    "ModelRef",
    "Workload",
    "Constraints",
    "HardwareEntry",
    "Calibration",
    "AssumptionOverrides",
    "load_job",
    "job_from_dict",
    "fit_job_to_model",
    "format_validation_error",
    "coerce_document",
    "Search",
    "Hardware",
    "JobFile",
    "stack_name",
    "DataSpec",
    "ReservedHeld",
]


class Workload(RenamedFieldsModel):
    """`[workload]`: what is trained and how much."""

    OLD_NAMES_OF = "workload"

    kind: Literal["pretrain", "finetune", "lora", "qlora"] = Field(
        default="pretrain", description="pretrain | finetune (full) | lora | qlora"
    )
    tokens: float | None = Field(
        default=None, gt=0, le=MAX_TOKENS, description="tokens to process (× epochs); or give steps"
    )
    samples: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TOKENS,
        description="samples to process (× epochs): images, clips or "
        "sequences of seq_len (old name: images); or give tokens/steps",
    )
    steps: int | None = Field(default=None, gt=0, le=10**9, description="optimizer steps; or give tokens")
    sample_unit: Literal[SAMPLE_UNITS] | None = Field(  # type: ignore[valid-type]
        default=None,
        description="what one sample is (image, clip, sequence, ...); default: "
        "the model's, when the job counts samples",
    )
    epochs: float = Field(
        default=1.0,
        gt=0,
        le=10_000,
        description="passes over `tokens` or `samples` (the amount is multiplied by it; not with steps)",
    )
    seq_len: int = Field(default=2048, gt=0, le=2**22, description="tokens per sequence")
    global_batch: int | None = Field(
        default=None,
        gt=0,
        le=2**24,
        description="samples per optimizer step: sequences of "
        "seq_len, or images / clips of a per-sample model (or "
        "global_batch_tokens)",
    )
    global_batch_tokens: int | None = Field(
        default=None, gt=0, le=2**36, description="tokens per optimizer step (alternative to global_batch)"
    )
    batch_tolerance: float = Field(
        default=0.0, ge=0, lt=1, description="allowed relative deviation of the global batch"
    )
    precision: TrainPrecision = Field(
        default="bf16", description="compute precision (mixed precision with fp32 master weights)"
    )
    optimizer: Optimizer = Field(default="adamw", description="optimizer (its state bytes per parameter)")
    lora_rank: int = Field(default=16, gt=0, le=65_536, description="LoRA / QLoRA rank")
    lora_targets: tuple[str, ...] = Field(default=LINEAR_MODULES, description="modules with adapters")
    attention: Attention | None = Field(
        default=None, description="flash | eager (default: the stack's kernel)"
    )
    offload_optimizer: bool = Field(default=False, description="ZeRO-Offload: optimizer in CPU RAM")
    offload_params: bool = Field(default=False, description="ZeRO-Infinity: params in CPU RAM")
    fused_kernels: bool = Field(
        default=False,
        description="Liger Kernel's fused RMSNorm, SwiGLU and linear cross-entropy patched into the "
        "model (use_liger_kernel / enable_liger_kernel): no fp32 norm copies or saved silu outputs, "
        "the logits one chunk of tokens at a time",
    )
    stack: str = Field(
        default="generic",
        description="training stack profile: megatron-core, "
        "deepspeed, fsdp, torchtitan, llm-foundry, hf-trainer, torchtune, unsloth, "
        "... (`ccopt stacks`); plans use only the parallelisms and ZeRO stages it runs",
    )

    @field_validator("stack")
    @classmethod
    def _stack(cls, v: str) -> str:
        return stack_name(v)

    @model_validator(mode="after")
    def _check(self) -> Workload:
        amounts = [k for k in ("tokens", "steps", "samples") if getattr(self, k) is not None]
        if len(amounts) != 1:
            raise ValueError("give exactly one of tokens or steps (or samples / images instead of tokens)")
        self.require_one_of(
            "global_batch", "global_batch_tokens", "global_batch (sequences) or global_batch_tokens"
        )
        if self.global_batch_tokens is not None:
            self._check_batch_tokens(self.global_batch_tokens)
        bad = [t for t in self.lora_targets if t not in LINEAR_MODULES]
        if bad:
            raise ValueError(f"lora_targets: unknown {bad}; allowed: {', '.join(LINEAR_MODULES)}")
        return self

    def _check_batch_tokens(self, tokens: int) -> None:
        """global_batch_tokens must be whole sequences of seq_len, within batch_tolerance."""
        seqs = max(1, round(tokens / self.seq_len))
        off = abs(seqs * self.seq_len - tokens) / tokens
        if off > self.batch_tolerance + 1e-12:
            raise ValueError(
                f"global_batch_tokens = {tokens} is not a multiple of seq_len = {self.seq_len}: the "
                f"nearest batch, {seqs} sequence{'s' if seqs > 1 else ''} = {seqs * self.seq_len} tokens, "
                f"is {off:.1%} off and batch_tolerance = {self.batch_tolerance:g}; allowed: a "
                f"multiple of {self.seq_len}, or raise batch_tolerance"
            )

    @property
    def method(self) -> str:
        return {"lora": "lora", "qlora": "qlora"}.get(self.kind, "full")

    @property
    def batch_sequences(self) -> int:
        if self.global_batch is not None:
            return self.global_batch
        return max(1, round((self.global_batch_tokens or 0) / self.seq_len))

    def total_tokens(self) -> float:
        """Tokens processed over the job (tokens × epochs, or steps × batch × seq_len)."""
        if self.tokens is not None:
            return self.tokens * self.epochs
        if self.samples is not None:
            return self.samples * self.epochs * self.seq_len
        return float(self.steps or 0) * self.batch_sequences * self.seq_len

    def steps_for_batch(self, batch_sequences: int) -> int:
        """Optimizer steps for an actual global batch (tokens fixed; or steps as given)."""
        if self.steps is not None:
            return self.steps
        return math.ceil(self.total_tokens() / (batch_sequences * self.seq_len))

    def setup(self) -> TrainingSetup:
        return TrainingSetup(
            seq_len=self.seq_len,
            precision=self.precision,
            optimizer=self.optimizer,
            method=self.method,
            lora_rank=self.lora_rank,
            lora_targets=self.lora_targets,
            attention=self.attention,
            offload_optimizer=self.offload_optimizer,
            offload_params=self.offload_params,
            stack=self.stack,
            fused_kernels=self.fused_kernels,
            loss_kernel="liger" if self.fused_kernels else None,
        )


class Availability(StrictModel):
    """How many instances of a provider's offering one can actually get."""

    provider: str = Field(min_length=1, description="provider (aws, gcp, lambda, ...)")
    instance: str | None = Field(default=None, description="instance type; all when omitted")
    max_instances: int = Field(gt=0, le=10**5, description="at most this many at once")


class ReservedHeld(StrictModel):
    """`[[constraints.reserved_held]]`: reserved instances the team already holds (a term
    bought earlier), which a plan may use beside rented ones (solve/train/mix/search.py)."""

    provider: str = Field(min_length=1, description="provider of the reservation (aws, gcp, ...)")
    instance: str = Field(min_length=1, description="instance type held (as in `ccopt prices`)")
    region: str | None = Field(
        default=None, description="region of the reservation (needed when the catalog lists several)"
    )
    count: int = Field(gt=0, le=10**5, description="instances held and free for this job")
    pricing: Literal["reserved_1y", "reserved_3y"] = Field(
        default="reserved_1y", description="term held: its catalog rate is charged per hour used"
    )
    usd_per_hour: float | None = Field(
        default=None,
        ge=0,
        le=MAX_USD_PER_GPU_HOUR * MAX_GPUS_PER_INSTANCE,
        description="what an hour of one held instance costs this job (default: the term's "
        "catalog rate per hour used, as reservation_prepaid; 0: a sunk cost)",
    )


class Constraints(RenamedFieldsModel):
    """`[constraints]`: deadline, budget and what may be used."""

    OLD_NAMES_OF = "constraints"

    deadline_days: float | None = Field(
        default=None, gt=0, le=MAX_DAYS, description="finish within this many days (or deadline_hours)"
    )
    deadline_hours: float | None = Field(
        default=None, gt=0, le=MAX_DAYS * 24, description="finish within this many hours"
    )
    budget_usd: BudgetUsd = None
    confidence: float = confidence_field(
        "the deadline and the budget are met, and the cost minimised is the cost,"
    )
    gpu_types: GpuTypes = None
    providers: AllowedNames = Field(
        default=None, description="providers allowed (aws, gcp, azure, lambda, oci, runpod, vast, coreweave)"
    )
    regions: AllowedNames = Field(default=None, description="regions allowed (as in `ccopt prices`)")
    pricing: PricingModels = ("on_demand",)
    max_gpus: int | None = Field(
        default=None,
        gt=0,
        le=10**6,
        description="at most this many GPUs in total (searched up to 4,096 without it)",
    )
    min_instances: int = Field(default=1, gt=0, le=10**5, description="at least this many instances")
    max_instances: int | None = Field(default=None, gt=0, le=10**5, description="at most this many instances")
    spot_interruption_overhead: float | None = Field(
        default=None,
        ge=0,
        le=2,
        description="a fixed extra wall time on spot (the old rule) instead of the interruption "
        "model (rate × instances, checkpoint every Daly 2006 interval, restart time)",
    )
    spot_interruptions_per_instance_day: float | None = Field(
        default=None,
        ge=0,
        le=100,
        description="spot interruptions per instance-day for every spot offering (default: "
        "pricing_data/spot_interruptions.csv, published bands where known, else a guess)",
    )
    availability: tuple[Availability, ...] = Field(
        default=(),
        description="instances obtainable per offering: replaces the catalog's "
        "max_instances for a provider (and instance)",
    )
    reservation_prepaid: bool = Field(
        default=False, description="reserved capacity already paid/shared: charge hours used"
    )
    reserved_held: tuple[ReservedHeld, ...] = Field(
        default=(),
        description="`[[constraints.reserved_held]]`: reserved instances already held; a plan "
        "may use them and top up with the pricing models allowed (a mixed cluster)",
    )
    mix: bool = Field(
        default=True,
        description="`ccopt plan`: also plan mixed clusters (pricing models on one instance "
        "type, two GPU types on one fabric) and show one when it is cheaper or the only way to "
        "meet the job (a batch shares capacity between jobs instead)",
    )
    zero_stages: tuple[int, ...] = Field(
        min_length=1,
        default=(0, 1, 2, 3),
        description="ZeRO stages the planner may use (of those the stack runs: `ccopt stacks` zero_stages)",
    )
    activation_checkpointing: tuple[str, ...] = Field(
        min_length=1, default=CHECKPOINTING, description="modes allowed (old name: checkpointing)"
    )
    jobs_per_month: JobsPerMonth = Field(
        default=None,
        description="how often this job runs: the boxes of [[hardware.buy]] (and owned ones "
        "with charge_capital) carry their net capital over these jobs, and rent-or-buy compares "
        "at this rate (default: back to back; or give duty_cycle)",
    )
    duty_cycle: DutyCycle = Field(
        default=None,
        description="instead of jobs_per_month: the share of the month the boxes are busy with "
        "such jobs (1 = back to back)",
    )
    cloud: CloudAllowed = True
    trust_guessed_network: bool = Field(
        default=True,
        description="false: offerings whose inter-node bandwidth is a documented "
        "guess (pricing_data/README.md) are used as a single instance only",
    )
    min_memory_headroom_gib: float = Field(
        default=1.0,
        ge=0,
        le=64,
        description="at least this much device memory kept free per GPU, GiB (CUDA context "
        "spikes, fragmentation; old name: memory_headroom_gib)",
    )
    min_memory_headroom_fraction: float = Field(
        default=0.05,
        ge=0,
        lt=0.5,
        description="at least this share of device memory kept free per GPU, on top of "
        "min_memory_headroom_gib (old name: memory_headroom_fraction)",
    )
    memory_confidence: float | None = Field(
        default=None,
        ge=CONFIDENCE_RANGE[0],
        le=CONFIDENCE_RANGE[1],
        description="each GPU's predicted device memory must fit at this quantile of the memory "
        "band (measured ÷ predicted peak, widened for stacks the model was never shaped on: "
        "0.9 asks ×1.57 of the prediction to fit, 0.8 ×1.34), inside the headroom, also where "
        "`ccopt calibrate --peak-memory-gib` calibrated the model (the band is not narrowed "
        "by it); unset: the prediction itself (`ccopt estimate` shows the band)",
    )
    allow_internet_multi_node: bool = Field(
        default=False,
        description="true: instances without a cluster interconnect (internet-grade "
        "networking between them) may be joined into a multi-node plan",
    )
    start_after: dt.date | None = Field(
        default=None,
        description="the job starts on or after this day (YYYY-MM-DD): a capacity block must be "
        "bookable to start in [start_after, start_before] (pricing_data/clusters.csv)",
    )
    start_before: dt.date | None = Field(
        default=None,
        description="the job starts on or before this day (YYYY-MM-DD); with start_after, the "
        "window a capacity block must start in",
    )

    @field_validator("start_after", "start_before", mode="before")
    @classmethod
    def _iso_date(cls, value: Any) -> Any:
        """A TOML date, or its ISO text (JSON, the API): 2026-12-10."""
        if isinstance(value, str):
            try:
                return dt.date.fromisoformat(value)
            except ValueError:
                raise ValueError(f"not a date: {value!r}; allowed: YYYY-MM-DD, e.g. 2026-12-10") from None
        return value

    @model_validator(mode="after")
    def _check(self) -> Constraints:
        if self.deadline_days is not None and self.deadline_hours is not None:
            raise ValueError("give deadline_days or deadline_hours, not both")
        if self.start_after and self.start_before and self.start_before < self.start_after:
            raise ValueError(
                f"start_before ({self.start_before}) is before start_after ({self.start_after}); "
                "give a window whose end is on or after its start"
            )
        if self.jobs_per_month is not None and self.duty_cycle is not None:
            raise ValueError("duty_cycle: give jobs_per_month or duty_cycle, not both")
        bad = [z for z in self.zero_stages if z not in (0, 1, 2, 3)]
        if bad:
            raise ValueError(f"zero_stages: {bad} not allowed; allowed: 0, 1, 2, 3")
        badc = [c for c in self.activation_checkpointing if c not in CHECKPOINTING]
        if badc:
            raise ValueError(
                f"activation_checkpointing: {badc} not allowed; allowed: {', '.join(CHECKPOINTING)}"
            )
        return self

    @property
    def deadline_h(self) -> float | None:
        if self.deadline_hours is not None:
            return self.deadline_hours
        return self.deadline_days * 24 if self.deadline_days is not None else None


class Job(JobFile):
    """One training job file."""

    workload: Workload = Field(description="`[workload]`: what is trained and how much")
    constraints: Constraints = Field(
        default=Constraints(), description="`[constraints]`: deadline, budget and what the planner may use"
    )
    calibration: Calibration | None = Field(
        default=None, description="`[calibration]`: one measured run that fixes the efficiency of a GPU type"
    )
    data: DataSpec | None = Field(
        default=None,
        description="the dataset: size, loader rate, where it lives (transfer, storage and loader checks)",
    )
    search: Search | None = Field(
        default=None,
        description="what the planner may search beyond the "
        "workload's own choices (issue 14; not used by the planner yet)",
    )
    progress: Progress | None = Field(
        default=None,
        description="a job under way: tokens done, hours elapsed, spent, what it runs on "
        "(`ccopt replan`; `plan` ignores it)",
    )

    def named_regions(self) -> tuple[str, ...]:
        """The regions this job names (its region filter, its data's region, its held
        reservations): a reduced large price table keeps every row of them."""
        named = list(self.constraints.regions or ())
        named += [h.region for h in self.constraints.reserved_held if h.region]
        if self.data is not None and self.data.region:
            named.append(self.data.region)
        return tuple(named)


_J = TypeVar("_J", bound=Job)


def with_confidence(job: _J, confidence: float | None, flag: str = "--confidence") -> _J:
    """`job` planned at `confidence` instead of its constraints.confidence (None: unchanged).

    Raises:
        ConfigError: outside CONFIDENCE_RANGE (one line with the allowed range).
    """
    if confidence is None:
        return job
    check_number(confidence, flag, ge=CONFIDENCE_RANGE[0], le=CONFIDENCE_RANGE[1])
    constraints = job.constraints.model_copy(update={"confidence": float(confidence)})
    return job.model_copy(update={"constraints": constraints})


def fit_job_to_model(job: _J, model: ModelSpec | SampleProfile) -> _J:
    """The job in the model's units: a per-sample profile counts samples (seq_len 1, one
    "token" per sample); a transformer that reads fixed-length samples (ViT: 197 tokens)
    takes that length unless the workload sets seq_len. Raises ConfigError on tokens for a
    profile. The job keeps its class (a batch's BatchJob stays one)."""
    w = job.workload
    if isinstance(model, SampleProfile):
        if w.tokens is not None:
            raise ConfigError(
                f"workload.tokens: {model.name} is counted in samples "
                f"({model.sample_unit}s); allowed: samples (or images) or steps"
            )
        if "seq_len" in w.model_fields_set and w.seq_len != 1:
            raise ConfigError(
                f"workload.seq_len: {model.name} is counted per "
                f"{model.sample_unit}; allowed: leave seq_len out"
            )
        update: dict[str, Any] = {"seq_len": 1, "sample_unit": w.sample_unit or model.sample_unit}
    elif model.sample_tokens and "seq_len" not in w.model_fields_set:
        update = {"seq_len": model.sample_tokens, "sample_unit": w.sample_unit or "image"}
    elif w.samples is not None and w.sample_unit is None:
        update = {"sample_unit": "sequence"}
    else:
        return job
    return job.model_copy(update={"workload": w.model_copy(update=update)})


def job_from_dict(data: dict[str, Any], source: str = "job") -> Job:
    """Validate a decoded job table; ConfigError with one line on failure."""
    # an RL post-training job has its own planner (optimizer/solve/rl)
    return job_of_kind(
        Job,
        data,
        source,
        takes=lambda kind: kind not in RL_KINDS,
        refusal="is an RL post-training job; run `ccopt rl` on it",
    )


def load_job(path: str | Path) -> tuple[Job, Path]:
    """Read and validate a job TOML file. Returns the job and its directory (for relative paths)."""
    return read_toml_as(path, job_from_dict)
