"""Job files (TOML) and their validation: model, workload, constraints, hardware, calibration."""

from __future__ import annotations

import math
from dataclasses import MISSING, fields, replace
from pathlib import Path
from typing import Any, Literal, get_args, get_type_hints

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
    field_validator,
    model_validator,
)

from optimizer.errors import ConfigError
from optimizer.inputs.aliases import rename_old_fields
from optimizer.inputs.models import load_hf_config
from optimizer.inputs.toml_file import read_toml
from optimizer.model.presets import get_preset
from optimizer.model.setup import (
    CHECKPOINTING,
    Attention,
    Checkpointing,
    Optimizer,
    PerfAssumptions,
    TrainingSetup,
    TrainPrecision,
)
from optimizer.model.spec import LINEAR_MODULES, ModelSpec
from optimizer.model.stacks import get_stack
from optimizer.vocabulary import PricingModel

__all__ = ["Job", "ModelRef", "Workload", "Constraints", "HardwareEntry", "Calibration",
           "AssumptionOverrides", "load_job", "job_from_dict", "format_validation_error",
           "coerce_document"]

_STRICT = ConfigDict(extra="forbid", frozen=True)


class ModelRef(BaseModel):
    """`[model]`: a preset, a Hugging Face config.json path, or an explicit shape."""

    model_config = ConfigDict(extra="allow", frozen=True)
    preset: str | None = Field(default=None, description="a preset name (`ccopt models`)")
    hf_config: str | None = Field(default=None,
                                  description="path of a Hugging Face config.json (relative to the job file)")

    def resolve(self, base_dir: Path | None = None) -> ModelSpec:

        if (self.preset or self.hf_config) and self.model_extra:
            raise ConfigError(f"model: give one of preset, hf_config or an explicit shape; got "
                              f"{'preset' if self.preset else 'hf_config'} and "
                              f"{', '.join(sorted(self.model_extra))}")
        if self.preset and self.hf_config:
            raise ConfigError("model: give one of preset or hf_config, not both")
        if self.preset:
            return get_preset(self.preset, "model.preset")
        if self.hf_config:
            path = Path(self.hf_config)
            if base_dir is not None and not path.is_absolute():
                path = base_dir / path
            return load_hf_config(path)
        shape = dict(self.model_extra or {})
        if not shape:
            raise ConfigError("model: give one of preset, hf_config, or an explicit shape "
                              "(layers, hidden, heads, ffn, vocab, ...)")
        try:
            return ModelSpec(**shape)
        except ValidationError as exc:
            raise ConfigError(format_validation_error(exc, "model")) from None


class Workload(BaseModel):
    """`[workload]`: what is trained and how much."""

    model_config = _STRICT
    kind: Literal["pretrain", "finetune", "lora", "qlora"] = Field(default="pretrain",
                                                                   description="pretrain | finetune "
                                                                   "(full) | lora | qlora")
    tokens: float | None = Field(default=None, gt=0,
                                 description="tokens to process (× epochs); or give steps")
    steps: int | None = Field(default=None, gt=0, description="optimizer steps; or give tokens")
    epochs: float = Field(default=1.0, gt=0, description="passes over `tokens`")
    seq_len: int = Field(default=2048, gt=0, description="tokens per sequence")
    global_batch: int | None = Field(default=None, gt=0, description="sequences per step")
    global_batch_tokens: int | None = Field(default=None, gt=0,
                                            description="tokens per optimizer step (alternative to "
                                            "global_batch)")
    batch_tolerance: float = Field(default=0.0, ge=0, lt=1,
                                   description="allowed relative deviation of the global batch")
    precision: TrainPrecision = Field(default="bf16",
                                      description="compute precision (mixed precision with fp32 master "
                                      "weights)")
    optimizer: Optimizer = Field(default="adamw", description="optimizer (its state bytes per parameter)")
    lora_rank: int = Field(default=16, gt=0, description="LoRA / QLoRA rank")
    lora_targets: tuple[str, ...] = Field(default=LINEAR_MODULES, description="modules with adapters")
    attention: Attention | None = Field(default=None, description="flash | eager "
                                        "(default: the stack's kernel)")
    offload_optimizer: bool = Field(default=False, description="ZeRO-Offload: optimizer in CPU RAM")
    offload_params: bool = Field(default=False, description="ZeRO-Infinity: params in CPU RAM")
    stack: str = Field(default="generic", description="training stack profile: megatron-core, "
                       "deepspeed, fsdp, torchtitan, llm-foundry, hf-trainer, torchtune, unsloth, "
                       "... (`ccopt stacks`)")

    @field_validator("stack")
    @classmethod
    def _stack(cls, v: str) -> str:
        return stack_name(v)

    @model_validator(mode="after")
    def _check(self) -> Workload:
        if (self.tokens is None) == (self.steps is None):
            raise ValueError("give exactly one of tokens or steps")
        if (self.global_batch is None) == (self.global_batch_tokens is None):
            raise ValueError("give exactly one of global_batch (sequences) or global_batch_tokens")
        bad = [t for t in self.lora_targets if t not in LINEAR_MODULES]
        if bad:
            raise ValueError(f"lora_targets: unknown {bad}; allowed: {', '.join(LINEAR_MODULES)}")
        return self

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
        return float(self.steps or 0) * self.batch_sequences * self.seq_len

    def steps_for_batch(self, batch_sequences: int) -> int:
        """Optimizer steps for an actual global batch (tokens fixed; or steps as given)."""
        if self.steps is not None:
            return self.steps
        return math.ceil(self.total_tokens() / (batch_sequences * self.seq_len))

    def setup(self) -> TrainingSetup:
        return TrainingSetup(seq_len=self.seq_len, precision=self.precision,
                             optimizer=self.optimizer, method=self.method,
                             lora_rank=self.lora_rank, lora_targets=self.lora_targets,
                             attention=self.attention, offload_optimizer=self.offload_optimizer,
                             offload_params=self.offload_params, stack=self.stack)


class Constraints(BaseModel):
    """`[constraints]`: deadline, budget and what may be used."""

    model_config = _STRICT
    deadline_days: float | None = Field(default=None, gt=0,
                                        description="finish within this many days (or deadline_hours)")
    deadline_hours: float | None = Field(default=None, gt=0, description="finish within this many hours")
    budget_usd: float | None = Field(default=None, gt=0, description="spend at most this (USD)")
    gpu_types: tuple[str, ...] | None = Field(default=None, description="GPU types allowed "
                                              "(ids or aliases; old name: gpus)")
    providers: tuple[str, ...] | None = Field(default=None,
                                              description="providers allowed (aws, gcp, azure, lambda, "
                                              "oci, runpod, vast, coreweave)")
    regions: tuple[str, ...] | None = Field(default=None,
                                            description="regions allowed (as in `ccopt prices`)")
    pricing: tuple[PricingModel, ...] = Field(default=("on_demand",), description="pricing models allowed")
    max_gpus: int | None = Field(default=None, gt=0,
                                 description="at most this many GPUs in total (searched up to 4,096 "
                                 "without it)")
    min_instances: int = Field(default=1, gt=0, description="at least this many instances")
    max_instances: int | None = Field(default=None, gt=0, description="at most this many instances")
    spot_interruption_overhead: float = Field(
        default=0.15, ge=0, le=2,
        description="GUESS: extra wall time from preemptions + restarts from checkpoints")
    reservation_prepaid: bool = Field(
        default=False, description="reserved capacity already paid/shared: charge hours used")
    zero_stages: tuple[int, ...] = Field(default=(0, 1, 2, 3), description="ZeRO stages the planner may use")
    activation_checkpointing: tuple[str, ...] = Field(
        default=CHECKPOINTING, description="modes allowed (old name: checkpointing)")
    jobs_per_month: float | None = Field(
        default=None, gt=0, description="compare: how often this job runs, for the months to "
        "break even of buying (default: back to back)")
    cloud: bool = Field(default=True, description="consider cloud offerings")
    trust_guessed_network: bool = Field(
        default=True, description="false: offerings whose inter-node bandwidth is a documented "
        "guess (pricing_data/README.md) are used as a single instance only")

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return rename_old_fields(data, "constraints")

    @model_validator(mode="after")
    def _check(self) -> Constraints:
        if self.deadline_days is not None and self.deadline_hours is not None:
            raise ValueError("give deadline_days or deadline_hours, not both")
        bad = [z for z in self.zero_stages if z not in (0, 1, 2, 3)]
        if bad:
            raise ValueError(f"zero_stages: {bad} not allowed; allowed: 0, 1, 2, 3")
        badc = [c for c in self.activation_checkpointing if c not in CHECKPOINTING]
        if badc:
            raise ValueError(f"activation_checkpointing: {badc} not allowed; allowed: "
                             f"{', '.join(CHECKPOINTING)}")
        return self

    @property
    def deadline_h(self) -> float | None:
        if self.deadline_hours is not None:
            return self.deadline_hours
        return self.deadline_days * 24 if self.deadline_days is not None else None


class HardwareEntry(BaseModel):
    """`[[hardware.owned]]` / `[[hardware.buy]]`: boxes we have or may buy; any HardwareSpec
    field overrides the defaults of pricing_data/hardware.csv."""

    model_config = ConfigDict(extra="allow", frozen=True)
    gpu: str = Field(description="GPU type of the box (pricing_data/hardware.csv defaults for it)")
    boxes: int | None = Field(default=None, gt=0, description="owned: boxes we have")
    max_count: int | None = Field(default=None, gt=0, description="buy: max GPUs to buy")
    inter_node_gbps: float = Field(default=10.0, gt=0, description="network between boxes")
    charge_capital: bool = Field(default=False, description="owned: also charge amortised capital")


class Hardware(BaseModel):
    model_config = _STRICT
    owned: tuple[HardwareEntry, ...] = ()
    buy: tuple[HardwareEntry, ...] = ()


class Calibration(BaseModel):
    """`[calibration]`: one measured run that fixes the efficiency of a GPU type."""

    model_config = _STRICT
    gpu: str
    tokens_per_s: float | None = Field(default=None, gt=0,
                                       description="measured tokens/s of the whole run (or step_time_s)")
    step_time_s: float | None = Field(default=None, gt=0, description="measured seconds per optimizer step")
    num_gpus: int = Field(default=1, gt=0, description="GPUs of the measured run (old: gpus)")
    gpus_per_node: int | None = Field(default=None, gt=0, description="GPUs per node of the measured run")
    tp: int = Field(default=1, gt=0, description="tensor-parallel degree of the measured run")
    pp: int = Field(default=1, gt=0, description="pipeline stages of the measured run")
    zero_stage: int = Field(default=0, ge=0, le=3, description="ZeRO stage of the measured run")
    activation_checkpointing: Checkpointing = Field(default="none",
                                                    description="checkpointing of the measured run (old "
                                                    "name: checkpointing)")
    micro_batch: int = Field(default=1, gt=0,
                             description="sequences per GPU per micro-step of the measured run")
    grad_accum: int = Field(default=1, gt=0, description="micro-steps per optimizer step of the measured run")
    inter_node_gbps: float = Field(default=100.0, gt=0,
                                   description="network per node of the measured run, Gbit/s")

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return rename_old_fields(data, "calibration")

    @model_validator(mode="after")
    def _check(self) -> Calibration:
        if (self.tokens_per_s is None) == (self.step_time_s is None):
            raise ValueError("give exactly one of tokens_per_s or step_time_s")
        return self

    @property
    def gpus(self) -> int:
        """Old name of num_gpus (read by optimizer.inputs.calibration)."""
        return self.num_gpus

    @property
    def checkpointing(self) -> str:
        """Old name of activation_checkpointing."""
        return self.activation_checkpointing


class _Overrides(BaseModel):
    """`[assumptions]`: override any guessed constant of the performance model
    (optimizer/model/setup.py PerfAssumptions; unset fields keep the model's default)."""

    model_config = _STRICT

    def apply(self, base: PerfAssumptions) -> PerfAssumptions:
        changes = {k: v for k, v in self.model_dump().items() if v is not None}
        return replace(base, **changes)


#: bounds of the overridable constants (others: ≥ 0); fractions stay in (0, 1]
_BOUNDS: dict[str, dict[str, float]] = {
    "efficiency": {"gt": 0, "le": 1}, "link_efficiency": {"gt": 0, "le": 1},
    "bw_efficiency": {"gt": 0, "le": 1}, "fp8_gemm_factor": {"gt": 0, "le": 1},
    "dp_overlap": {"ge": 0, "le": 1}, "tp_overlap": {"ge": 0, "le": 1},
    "pp_overlap": {"ge": 0, "le": 1}, "cp_overlap": {"ge": 0, "le": 1},
    "fragmentation": {"ge": 0, "lt": 1}, "qlora_dequant_factor": {"ge": 1},
}


def _override_fields() -> dict[str, Any]:
    """One optional field per numeric PerfAssumptions constant (the list lives there once)."""
    hints = get_type_hints(PerfAssumptions)
    out: dict[str, Any] = {}
    for f in fields(PerfAssumptions):
        hint = hints[f.name]
        scalar = [t for t in (hint, *get_args(hint)) if t in (bool, int, float)]
        kind = scalar[0] if scalar and set(get_args(hint)) <= {*scalar, type(None)} else None
        if kind is None or f.name == "use_fitted":
            continue  # calibrated / fitted tables are not job-file values
        default = f.default if f.default is not MISSING else None
        out[f.name] = (kind | None, Field(
            default=None, **_BOUNDS.get(f.name, {"ge": 0}) if kind is not bool else {},
            description=f"override PerfAssumptions.{f.name} (model default: {default!r})"))
    return out


AssumptionOverrides = create_model("AssumptionOverrides", __base__=_Overrides,
                                   **_override_fields())


class JobFile(BaseModel):
    """What every job file has: a name, a model, owned/buyable hardware and assumption overrides."""

    model_config = _STRICT
    name: str = Field(default="job", description="a label for the job in outputs")
    model: ModelRef
    hardware: Hardware = Hardware()
    assumptions: AssumptionOverrides = AssumptionOverrides()


class Job(JobFile):
    """One training job file."""

    workload: Workload
    constraints: Constraints = Constraints()
    calibration: Calibration | None = None


def stack_name(value: str) -> str:
    """The canonical name of a stack profile (aliases such as "nemo" accepted).

    Raises:
        ValueError: unknown stack (with the allowed names), for pydantic to report.
    """
    try:
        return get_stack(value, "stack").name
    except ConfigError as exc:
        raise ValueError(str(exc).removeprefix("stack: ")) from None


def format_validation_error(exc: ValidationError, prefix: str = "") -> str:
    """One line naming the field and the problem (and allowed values where pydantic gives them)."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"] if not isinstance(p, int) or True)
    field = ".".join(filter(None, [prefix, loc]))
    msg = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        msg = "unknown field"
    value = err.get("input")
    shown = f" (got {value!r})" if err["type"] != "missing" and not isinstance(value, dict) else ""
    return f"{field or 'job'}: {msg}{shown}"


def job_from_dict(data: dict[str, Any], source: str = "job") -> Job:
    """Validate a decoded job table; ConfigError with one line on failure."""
    try:
        return Job.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: {format_validation_error(exc)}") from None


def load_job(path: str | Path) -> tuple[Job, Path]:
    """Read and validate a job TOML file. Returns the job and its directory (for relative paths)."""
    file = Path(path)
    data = read_toml(file)
    return job_from_dict(data, str(file)), file.parent


def coerce_document(doc: Any, cls: type, load_file: Any, from_dict: Any,
                    field: str = "job") -> tuple[Any, Path | None]:
    """Accept a file path, a decoded dict or an already validated `cls` instance.

    Returns (validated object, directory for relative paths or None).
    Raises:
        ConfigError: anything else, or whatever loading/validation raises.
    """
    if isinstance(doc, (str, Path)):
        return load_file(doc)
    if isinstance(doc, dict):
        return from_dict(doc), None
    if isinstance(doc, cls):
        return doc, None
    raise ConfigError(f"{field}: expected a path, a dict or a {cls.__name__}, "
                      f"got {type(doc).__name__}")
