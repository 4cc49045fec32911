"""The one shape of a configuration request: a model on some hardware, split one way, with one
batch, precision, optimizer and training kind (or one serving workload).

`ccopt estimate` and `ccopt calibrate` take it (their shared options are generated from its
fields: the description is the option's help, the range and allowed values are stated from
the lists that define them), `estimate --from-plan` builds it from a plan's row, `ccopt sizing`
prints it back as flags (`request_flags`) and the calibration store records it.

Field names are the job files' and the flags' (`--context-parallel` is `context_parallel`);
a bad value is one line naming the flag and the allowed values.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from optimizer.errors import ConfigError
from optimizer.inputs.aliases import warn_renamed
from optimizer.inputs.jobs.serve import ServeWorkload
from optimizer.inputs.validation import allowed_range, check_number, format_validation_error
from optimizer.model.layout import ZERO_STAGES
from optimizer.model.setup import (
    ATTENTION_KERNELS,
    CHECKPOINTING,
    KV_PRECISIONS,
    METHODS,
    OPTIMIZERS,
    TRAIN_PRECISIONS,
    WEIGHT_PRECISIONS,
)
from optimizer.model.spec import LINEAR_MODULES

__all__ = [
    "ConfigRequest",
    "RequestOption",
    "KIND_METHODS",
    "MODES",
    "OLD_NAMES",
    "SERVE_FIELDS",
    "MAX_SERVE_BATCH",
    "DEFAULT_TRAIN_PRECISION",
    "SERVE_DEFAULT_PRECISION",
    "DEFAULT_SEQ_LEN",
    "flag_of",
    "choice",
    "kind_of_method",
    "method_of_kind",
    "request_from_options",
    "request_options",
    "request_flags",
]

#: a job file's workload.kind -> the training method it means (pretrain and finetune: full)
KIND_METHODS: dict[str, str] = {"pretrain": "full", "finetune": "full", "lora": "lora", "qlora": "qlora"}
#: what a request estimates: a training step or a serving replica
MODES: tuple[str, ...] = ("train", "serve")
#: old spelling -> current field (hidden flags and API keywords; warn once, a clash is bad input)
OLD_NAMES: dict[str, str] = {
    "gpus": "num_gpus",
    "zero": "zero_stage",
    "checkpointing": "activation_checkpointing",
    "quantization": "precision",
    "gpus_per_node": "gpus_per_instance",
    "method": "kind",
}
#: the serving workload's fields (estimate --mode serve only; a calibration is of training)
SERVE_FIELDS: tuple[str, ...] = (
    "mode",
    "batch",
    "prompt_tokens",
    "output_tokens",
    "context",
    "kv_cache_precision",
)
#: upper end of --batch (concurrent sequences of a serving replica)
MAX_SERVE_BATCH = 2**20
_SEQUENCES = "sequences (samples for per-sample models)"
#: training precision when none is given (as a job file's workload.precision)
DEFAULT_TRAIN_PRECISION = "bf16"
#: weight format of a serving request that names none: a serving job file's default
SERVE_DEFAULT_PRECISION: str = ServeWorkload.model_construct().weight_precision
#: sequence length of an LM request when neither it nor the model gives one
DEFAULT_SEQ_LEN = 2048


def flag_of(field: str) -> str:
    """The flag of a request field: context_parallel -> --context-parallel."""
    return "--" + field.replace("_", "-")


def choice(flag: str, value: str, allowed: tuple[str, ...] | list[str]) -> str:
    """`value` normalised (stripped, lower case) when it is one of `allowed`.

    Raises:
        ConfigError: "--optimizer: 'adamx' is not allowed; allowed: adamw, adam-8bit, ...".
    """
    v = value.strip().lower()
    if v not in allowed:
        raise ConfigError(f"{flag}: {value!r} is not allowed; allowed: {', '.join(allowed)}")
    return v


def method_of_kind(kind: str, flag: str = "--kind") -> str:
    """The training method (full | lora | qlora) of a workload kind (pretrain | finetune | lora
    | qlora, as in a job file)."""
    return KIND_METHODS[choice(flag, kind, tuple(KIND_METHODS))]


def kind_of_method(method: str) -> str:
    """The workload kind of a training method (its old spelling): full -> pretrain."""
    m = choice("method (--kind)", method, METHODS)
    return next(k for k, v in KIND_METHODS.items() if v == m)


def _extra(allowed: Any = None, short: str | None = None, default_text: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if allowed is not None:
        out["allowed"] = [str(a) for a in allowed]
    if short:
        out["short"] = short
    if default_text:
        out["default_text"] = default_text
    return out


class ConfigRequest(BaseModel):
    """One configuration to estimate or to calibrate against (field = flag, `_` -> `-`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    # ---- the model and the hardware ----
    model: Any = Field(
        description="Preset name or path of a Hugging Face config.json (estimate --from-plan, "
        "calibrate --from: the file's, unless it names none)",
        json_schema_extra=_extra(short="-m"),
    )
    head: str | None = Field(
        default=None,
        description="The output layer: lm (a vocabulary projection on every token) or task (a "
        "classification / QA head: no vocabulary logits)",
        json_schema_extra=_extra(allowed=("lm", "task"), default_text="the model's own (lm)"),
    )
    gpu: str | None = Field(
        default=None,
        description="GPU id or alias (A100-80GB, h100, 4090, ...); not needed with --instance",
        json_schema_extra=_extra(short="-g"),
    )
    instance: str | None = Field(
        default=None,
        description="PROVIDER:INSTANCE from the catalog (e.g. aws:p5.48xlarge): its GPU, GPUs per "
        "instance, links and network, as the planner uses them",
    )
    num_gpus: int | None = Field(
        default=None,
        gt=0,
        le=10**6,
        description="Total GPUs",
        json_schema_extra=_extra(default_text="one instance, or 1"),
    )
    gpus_per_instance: int | None = Field(
        default=None,
        gt=0,
        le=1024,
        description="GPUs per instance (node)",
        json_schema_extra=_extra(default_text="the instance's, else min(num-gpus, 8)"),
    )
    inter_node_gbps: float | None = Field(
        default=None,
        gt=0,
        le=100_000,
        allow_inf_nan=False,
        description="Network per instance, Gbit/s",
        json_schema_extra=_extra(default_text="the instance's, else the GPU class's"),
    )
    # ---- the layout ----
    tp: int = Field(default=1, gt=0, le=1024, description="Tensor-parallel degree")
    pp: int = Field(default=1, gt=0, le=1024, description="Pipeline-parallel degree")
    context_parallel: int = Field(
        default=1, gt=0, le=1024, description="Context-parallel degree (sequence split, ring attention)"
    )
    virtual_stages: int = Field(
        default=1, gt=0, le=64, description="Virtual pipeline stages per GPU (interleaved 1F1B)"
    )
    expert_parallel: int = Field(
        default=1,
        gt=0,
        le=1024,
        description="Expert-parallel degree (an MoE model's experts split over that many data-parallel GPUs)",
    )
    sequence_parallel: bool | None = Field(
        default=None,
        description="Megatron sequence parallelism with tp > 1",
        json_schema_extra=_extra(default_text="the stack's"),
    )
    zero_stage: int = Field(
        default=0,
        description=f"ZeRO stage {ZERO_STAGES[0]}-{ZERO_STAGES[-1]}, 3 = FSDP",
    )
    activation_checkpointing: str = Field(
        default="none",
        description="Activation checkpointing",
        json_schema_extra=_extra(allowed=CHECKPOINTING),
    )
    offload_optimizer: bool = Field(default=False, description="ZeRO-Offload: optimizer state in CPU RAM")
    offload_params: bool = Field(default=False, description="ZeRO-Infinity: parameters in CPU RAM (ZeRO 3)")
    fused_kernels: bool = Field(
        default=False, description="Liger Kernel's fused RMSNorm, SwiGLU and linear cross-entropy"
    )
    # ---- the batch ----
    micro_batch: int = Field(
        default=1, gt=0, le=2**20, description=f"{_SEQUENCES.capitalize()} per GPU per micro-step"
    )
    global_batch: int | None = Field(
        default=None,
        gt=0,
        le=2**24,
        description=f"{_SEQUENCES.capitalize()} per optimizer step (sets grad accumulation)",
        json_schema_extra=_extra(default_text="dp × micro-batch"),
    )
    seq_len: int | None = Field(
        default=None,
        gt=0,
        le=2**22,
        description="Tokens per sequence; not for per-sample models",
        json_schema_extra=_extra(default_text=f"the model's sample length; {DEFAULT_SEQ_LEN} for LMs"),
    )
    # ---- what is trained ----
    precision: str | None = Field(
        default=None,
        description=f"train: {' | '.join(TRAIN_PRECISIONS)} (default {DEFAULT_TRAIN_PRECISION}); "
        f"serve (weights): {' | '.join(WEIGHT_PRECISIONS)} "
        f"(default: a serving job file's, {SERVE_DEFAULT_PRECISION})",
    )
    optimizer: str = Field(
        default="adamw", description="Optimizer", json_schema_extra=_extra(allowed=OPTIMIZERS)
    )
    kind: str = Field(
        default="pretrain",
        description="Training kind, as workload.kind of a job file (pretrain and finetune: full training)",
        json_schema_extra=_extra(allowed=KIND_METHODS),
    )
    lora_rank: int = Field(default=16, gt=0, le=65_536, description="LoRA rank (kind lora | qlora)")
    lora_targets: tuple[str, ...] | None = Field(
        default=None,
        description="LoRA modules, comma-separated",
        json_schema_extra=_extra(allowed=LINEAR_MODULES, default_text="all"),
    )
    attention: str | None = Field(
        default=None,
        description="Attention kernel",
        json_schema_extra=_extra(allowed=ATTENTION_KERNELS, default_text="the stack's"),
    )
    stack: str = Field(default="generic", description="Software stack profile (ccopt stacks)")
    # ---- the serving workload (mode serve) ----
    mode: str = Field(
        default="train", description="What to estimate", json_schema_extra=_extra(allowed=MODES)
    )
    batch: int | str = Field(
        default=1,
        description="serve: concurrent sequences per replica, or max (the largest that fits)",
        json_schema_extra=_extra(allowed=None),
    )
    prompt_tokens: int | None = Field(
        default=None,
        gt=0,
        le=2**22,
        description="serve: prompt tokens per request",
        json_schema_extra=_extra(default_text="1024"),
    )
    output_tokens: int = Field(default=256, gt=0, le=2**22, description="serve: output tokens per request")
    context: int | None = Field(
        default=None,
        gt=0,
        le=2**22,
        description="serve: KV tokens per sequence",
        json_schema_extra=_extra(default_text="prompt + output"),
    )
    kv_cache_precision: str = Field(
        default="fp16", description="serve: KV-cache format", json_schema_extra=_extra(allowed=KV_PRECISIONS)
    )

    @field_validator("model", mode="before")
    @classmethod
    def _model(cls, value: object) -> Any:
        if isinstance(value, str) and value.strip():
            return value
        if hasattr(value, "name") and hasattr(value, "layers"):  # a ModelSpec (Python API)
            return value
        raise ConfigError(f"--model: {value!r} is not allowed; allowed: a preset name or a config.json path")

    @field_validator(
        "head",
        "activation_checkpointing",
        "optimizer",
        "kind",
        "attention",
        "mode",
        "kv_cache_precision",
        mode="before",
    )
    @classmethod
    def _one_of_allowed(cls, value: object, info: ValidationInfo) -> Any:
        """A named choice: one of the allowed values its Field states (normalised to lower case)."""
        if not isinstance(value, str) or info.field_name is None:
            return value
        extra = cls.model_fields[info.field_name].json_schema_extra
        allowed = extra.get("allowed") if isinstance(extra, dict) else None
        assert isinstance(allowed, list)  # every choice field states its allowed values (_extra)
        return choice(flag_of(info.field_name), value, [str(a) for a in allowed])

    @field_validator("lora_targets", mode="before")
    @classmethod
    def _targets(cls, value: str | Sequence[str] | None) -> Any:
        if isinstance(value, str):
            value = [t.strip() for t in value.split(",") if t.strip()]
        if value is None or len(value) == 0:
            return None
        bad = [t for t in value if t not in LINEAR_MODULES]
        if bad:
            raise ConfigError(
                f"--lora-targets: {', '.join(map(str, bad))} not allowed; "
                f"allowed: {', '.join(LINEAR_MODULES)}"
            )
        return tuple(value)

    @field_validator("batch", mode="before")
    @classmethod
    def _batch(cls, value: str | int | float) -> Any:
        if isinstance(value, str):
            text = value.strip().lower()
            if text == "max":
                return text
            try:
                value = int(text)
            except ValueError:
                raise ConfigError(
                    f"--batch: {value!r} is not allowed; allowed: an integer > 0 or max"
                ) from None
        check_number(value, "--batch", gt=0, le=MAX_SERVE_BATCH, integer=True)
        return int(value)

    @model_validator(mode="after")
    def _precision(self) -> ConfigRequest:
        if isinstance(self.precision, str):  # the list depends on the mode: weights to serve
            allowed = list(WEIGHT_PRECISIONS) if self.mode == "serve" else list(TRAIN_PRECISIONS)
            object.__setattr__(self, "precision", choice("--precision", self.precision, allowed))
        return self

    @property
    def method(self) -> str:
        """The training method of `kind`: full | lora | qlora."""
        return KIND_METHODS[self.kind]

    @property
    def model_name(self) -> str:
        return self.model if isinstance(self.model, str) else str(self.model.name)

    def recorded(self) -> dict[str, Any]:
        """The fields given (or resolved), JSON-ready: what the calibration store keeps."""
        out = self.model_dump(exclude_none=True, exclude_unset=True)
        out["model"] = self.model_name
        if "lora_targets" in out:
            out["lora_targets"] = list(out["lora_targets"])
        return out


def _error_line(exc: ValidationError) -> str:
    """A pydantic error of the request, in flag words: "--tp: 0 is not allowed; allowed: ..."."""
    err = exc.errors()[0]
    raised = (err.get("ctx") or {}).get("error")
    if isinstance(raised, ConfigError):  # a validator's own line, already naming the flag
        return str(raised)
    line = format_validation_error(exc, model=ConfigRequest)
    field = str(err["loc"][0]) if err["loc"] else ""
    if field and line.startswith(f"{field}:"):
        return flag_of(field) + line[len(field) :]
    return line


def request_from_options(values: Mapping[str, Any]) -> ConfigRequest:
    """The request of options given by name (None: not given); old names (OLD_NAMES) still
    work: each warns once, and a clash with the current name is bad input.

    Raises:
        ConfigError: a value out of range or not allowed (names the flag and the allowed values).
    """
    given = {k: v for k, v in values.items() if v is not None}
    for old, new in OLD_NAMES.items():
        if old not in given:
            continue
        old_value = given.pop(old)
        warn_renamed(flag_of(old), flag_of(new))
        if old == "method":  # --kind speaks the job files' words, --method the method's
            method = str(old_value).strip().lower()
            if new in given:
                if method_of_kind(str(given[new])) != method:
                    raise ConfigError(
                        f"--kind {given[new]} and --method {old_value} disagree; give only --kind"
                    )
                continue
            given[new] = kind_of_method(str(old_value))
            continue
        if new in given and given[new] != old_value:
            raise ConfigError(
                f"{flag_of(new)} {given[new]} and {flag_of(old)} {old_value} disagree; "
                f"give only {flag_of(new)}"
            )
        given[new] = old_value
    unknown = sorted(set(given) - set(ConfigRequest.model_fields))
    if unknown:
        raise ConfigError(
            f"{flag_of(unknown[0])}: unknown option; allowed: "
            f"{', '.join(map(flag_of, ConfigRequest.model_fields))}"
        )
    try:
        return ConfigRequest.model_validate(given)
    except ValidationError as exc:
        raise ConfigError(_error_line(exc)) from None


@dataclass(frozen=True)
class RequestOption:
    """One command-line option of a request field (or of an old name of one)."""

    name: str  # the field (or old) name: the command's parameter
    flags: tuple[str, ...]  # "--tp"; a bool "--x/--no-x"; with a short alias "--model", "-m"
    value_type: type  # int, float, str or bool as the command line takes it
    help: str
    hidden: bool = False


def _value_type(annotation: Any) -> type:
    """int, float or bool when the field is one (optionally None); else str."""
    kinds = set(typing.get_args(annotation)) or {annotation}
    kinds.discard(type(None))
    return next((k for k in (bool, int, float) if kinds == {k}), str)


def _help(name: str) -> str:
    """An option's help: the field's description, its allowed values or range, its default."""
    info = ConfigRequest.model_fields[name]
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    parts: list[str] = []
    allowed = extra.get("allowed")
    if isinstance(allowed, list) and allowed:
        parts.append(" | ".join(map(str, allowed)))
    bounds = {
        key: getattr(m, key) for m in info.metadata for key in ("gt", "ge", "lt", "le") if hasattr(m, key)
    }
    if bounds:
        parts.append(allowed_range(**bounds, integer=_value_type(info.annotation) is int))
    default = extra.get("default_text")
    if default is None and not info.is_required() and info.default is not None and info.default is not False:
        default = str(info.default)
    if default is not None:
        parts.append(f"default {default}")
    return f"{info.description} ({'; '.join(parts)})" if parts else str(info.description)


def request_options() -> tuple[RequestOption, ...]:
    """The options of every request field, then the hidden old names (one definition each)."""
    out: list[RequestOption] = []
    for name, info in ConfigRequest.model_fields.items():
        kind = _value_type(info.annotation)
        flag = flag_of(name)
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        flags: tuple[str, ...] = (f"{flag}/--no-{name.replace('_', '-')}",) if kind is bool else (flag,)
        if extra.get("short"):
            flags = (*flags, str(extra["short"]))
        out.append(RequestOption(name, flags, kind, _help(name)))
    types = {o.name: o.value_type for o in out}
    for old, new in OLD_NAMES.items():
        out.append(
            RequestOption(old, (flag_of(old),), types[new], f"old name of {flag_of(new)}", hidden=True)
        )
    return tuple(out)


def _flag_value(value: object) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (tuple, list)):
        return ",".join(map(str, value))
    return str(getattr(value, "name", value))


def request_flags(request: ConfigRequest) -> list[str]:
    """The command-line flags that give `request` back: its fields set, in field order."""
    out: list[str] = []
    for name in ConfigRequest.model_fields:
        value = getattr(request, name)
        if name not in request.model_fields_set or value is None:
            continue
        if isinstance(value, bool):
            out.append(flag_of(name) if value else f"--no-{name.replace('_', '-')}")
        else:
            out += [flag_of(name), _flag_value(value)]
    return out
