"""What every job-file kind shares: the strict base model, hardware, calibration, assumptions."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import MISSING, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args, get_origin, get_type_hints

from pydantic import ConfigDict, Field, ValidationError, create_model, field_validator, model_validator

from optimizer.errors import ConfigError
from optimizer.inputs.jobs.hardware import HARDWARE_OVERRIDES, Hardware, HardwareEntry, entries_old_names
from optimizer.inputs.jobs.kind import workload_kind
from optimizer.inputs.jobs.limits import MAX_DAYS, MAX_TOKENS, MAX_USD
from optimizer.inputs.jobs.pricing import PriceOverlay
from optimizer.inputs.jobs.profile import MeasuredIn, ProfileIn
from optimizer.inputs.jobs.strict import STRICT, RenamedFieldsModel, StrictModel
from optimizer.inputs.models import load_hf_config
from optimizer.inputs.profiles import resolve_profile
from optimizer.inputs.validation import format_validation_error
from optimizer.model.bands import CONFIDENCE_RANGE, DEFAULT_CONFIDENCE
from optimizer.model.presets import get_preset
from optimizer.model.profile import MeasuredPoint, SampleProfile, as_planned
from optimizer.model.setup import Checkpointing, PerfAssumptions
from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import get_stack

#: the validated document type coerce_document returns (Job, ServeJob, BatchFile)
DocT = TypeVar("DocT")
#: a job document as the API takes it: a TOML path, a decoded dict (or the validated object)
DocumentSource = str | Path | dict[str, Any]

__all__ = [
    "DocumentSource",
    "MAX_TOKENS",
    "MAX_DAYS",
    "MAX_USD",
    "StrictModel",
    "ModelRef",
    "STRICT",
    "HardwareEntry",
    "HARDWARE_OVERRIDES",
    "Hardware",
    "Calibration",
    "entries_old_names",
    "AssumptionOverrides",
    "JobFile",
    "stack_name",
    "format_validation_error",
    "coerce_document",
    "workload_kind",
]


class ModelRef(StrictModel):
    """`[model]`: a preset, a Hugging Face config.json path, an explicit shape, or a per-sample
    profile (`[model.profile]`); measured runs of a profile in `[model.measured]`."""

    model_config = ConfigDict(**{**STRICT, "extra": "allow"})
    preset: str | None = Field(default=None, description="a preset name (`ccopt models`)")
    hf_config: str | None = Field(
        default=None, description="path of a Hugging Face config.json (relative to the job file)"
    )
    profile: ProfileIn | None = Field(
        default=None, description="a model known per sample: parameters, FLOPs and activation size per sample"
    )
    measured: MeasuredIn | tuple[MeasuredIn, ...] | None = Field(
        default=None,
        description="measured training runs of a per-sample model (preset or "
        "profile): they fix its speed and memory",
    )
    head: Literal["lm", "task"] | None = Field(
        default=None,
        description="the output layer: lm (a vocabulary projection on every token) or task "
        "(a classification / QA head: no vocabulary logits); default: the model's own (lm)",
    )

    def _measured_points(self) -> tuple[MeasuredPoint, ...]:
        if self.measured is None:
            return ()
        runs = self.measured if isinstance(self.measured, tuple) else (self.measured,)
        return tuple(r.point() for r in runs)

    def reference(self, base_dir: Path | None = None) -> str | None:
        """What `ccopt estimate --model` / `calibrate --model` take for this model: the preset,
        or the config.json's path resolved against the job file's folder; None for an inline
        shape or profile (no name a command could look up)."""
        if self.hf_config:
            path = Path(self.hf_config)
            return str(base_dir / path if base_dir is not None and not path.is_absolute() else path)
        return self.preset

    def resolve(self, base_dir: Path | None = None) -> ModelSpec:
        """The model; a per-sample profile is returned as the planner types it (see
        optimizer.model.profile.as_planned; tell it apart with `is_profile`)."""
        given = [k for k in ("preset", "hf_config", "profile") if getattr(self, k) is not None]
        if given and self.model_extra:
            raise ConfigError(
                f"model: give one of preset, hf_config or an explicit shape "
                f"(or profile); got {given[0]} and {', '.join(sorted(self.model_extra))}"
            )
        if len(given) > 1:
            raise ConfigError(f"model: give one of preset, hf_config or profile, not {' and '.join(given)}")
        model: ModelSpec | SampleProfile
        if self.profile is not None:
            return as_planned(resolve_profile(self.profile.profile(), self._measured_points()))
        if self.preset:
            model = get_preset(self.preset, "model.preset")
            if isinstance(model, SampleProfile):
                return as_planned(resolve_profile(model, self._measured_points()))
        elif self.hf_config:
            path = Path(self.hf_config)
            if base_dir is not None and not path.is_absolute():
                path = base_dir / path
            model = load_hf_config(path)
        else:
            shape = dict(self.model_extra or {})
            if not shape:
                raise ConfigError(
                    "model: give one of preset, hf_config, profile, or an explicit "
                    "shape (layers, hidden, heads, ffn, vocab, ...)"
                )
            try:
                model = ModelSpec(**shape)
            except ValidationError as exc:
                raise ConfigError(format_validation_error(exc, "model")) from None
        if self.measured is not None:
            raise ConfigError(
                f"model.measured: measured runs describe a per-sample model "
                f"(`ccopt models` kind profile, or [model.profile]); {model.name} is "
                "a transformer shape: use [calibration] or `ccopt calibrate`"
            )
        if self.head is not None:
            model = model.with_head(self.head)
        return model


class Calibration(RenamedFieldsModel):
    """`[calibration]`: one measured run that fixes the efficiency of a GPU type."""

    OLD_NAMES_OF = "calibration"

    gpu: str = Field(
        description="GPU type of the measured run (id or alias, `ccopt gpus`): the "
        "efficiency it fixes applies to this type at the workload's precision"
    )
    tokens_per_s: float | None = Field(
        default=None, gt=0, le=1e12, description="measured tokens/s of the whole run (or step_time_s)"
    )
    step_time_s: float | None = Field(
        default=None, gt=0, le=1e6, description="measured seconds per optimizer step"
    )
    num_gpus: int = Field(default=1, gt=0, le=10**6, description="GPUs of the measured run (old: gpus)")
    gpus_per_instance: int | None = Field(
        default=None,
        gt=0,
        le=1024,
        description="GPUs per instance (node) of the measured "
        "run (old name: gpus_per_node); default min(num_gpus, 8)",
    )
    tp: int = Field(default=1, gt=0, le=1024, description="tensor-parallel degree of the measured run")
    pp: int = Field(default=1, gt=0, le=1024, description="pipeline stages of the measured run")
    zero_stage: int = Field(default=0, ge=0, le=3, description="ZeRO stage of the measured run")
    activation_checkpointing: Checkpointing = Field(
        default="none", description="checkpointing of the measured run (old name: checkpointing)"
    )
    micro_batch: int = Field(
        default=1, gt=0, le=2**20, description="sequences per GPU per micro-step of the measured run"
    )
    grad_accum: int = Field(
        default=1, gt=0, le=2**20, description="micro-steps per optimizer step of the measured run"
    )
    inter_node_gbps: float = Field(
        default=100.0, gt=0, le=100_000, description="network per node of the measured run, Gbit/s"
    )

    @model_validator(mode="after")
    def _check(self) -> Calibration:
        self.require_one_of("tokens_per_s", "step_time_s")
        return self


class _Overrides(StrictModel):
    """`[assumptions]`: override any guessed constant of the performance model
    (optimizer/model/setup.py PerfAssumptions; unset fields keep the model's default)."""

    def apply(self, base: PerfAssumptions) -> PerfAssumptions:
        changes = {k: v for k, v in self.model_dump().items() if v is not None}
        return replace(base, **changes)


#: the plausible range of every overridable constant, stated once (a constant without one is
#: refused at import: _override_fields). Chosen bounds, not facts: each is orders of magnitude
#: beyond any measured value, so a typo (1e300 seconds, 1e-300 GB/s) is bad input, not a plan.
#: Shares of a peak stay in [0.01, 1]: below 1% of a link or a GPU is a unit mistake.
_BOUNDS: dict[str, dict[str, float]] = {
    "overhead_gib": {"ge": 0, "le": 1024},
    "fragmentation": {"ge": 0, "lt": 1},
    "logits_bytes_per_value": {"ge": 0, "le": 64},
    "workspace_gib": {"ge": 0, "le": 1024},
    "zero3_prefetch_layers": {"ge": 0, "le": 10_000},
    "offload_resident_layers": {"ge": 0, "le": 10_000},
    "efficiency": {"ge": 0.001, "le": 1},
    "dp_overlap": {"ge": 0, "le": 1},
    "tp_overlap": {"ge": 0, "le": 1},
    "pp_overlap": {"ge": 0, "le": 1},
    "cp_overlap": {"ge": 0, "le": 1},
    "link_efficiency": {"ge": 0.01, "le": 1},
    "host_staged_fraction": {"ge": 0.01, "le": 1},
    "qlora_dequant_factor": {"ge": 1, "le": 100},
    "bw_efficiency": {"ge": 0.01, "le": 1},
    "small_message_latency_s": {"ge": 0, "le": 1},
    "moe_expert_half_tokens": {"ge": 0, "le": 1e7},
    "ep_overlap": {"ge": 0, "le": 1},
    "cpu_adam_slowdown": {"ge": 0.01, "le": 1e4},
    "sample_batch_half": {"ge": 0, "le": 1e6},
    "activation_traffic": {"ge": 0.01, "le": 1e3},
    "fp8_gemm_factor": {"ge": 0.01, "le": 1},
    "band_prior_cases": {"gt": 0, "le": 1e12},
    "band_cases_per_source": {"gt": 0, "le": 1e6},
    "mfu_ceiling_unmeasured": {"ge": 0.01, "le": 1},
    "mfu_ceiling_unmeasured_fp8": {"ge": 0.01, "le": 1},
    "eager_score_bytes": {"ge": 0, "le": 1e4},
    "host_s_per_kernel": {"ge": 0, "le": 0.01},
    "samples_per_s_per_vcpu_image": {"ge": 0.001, "le": 1e7},
    "samples_per_s_per_vcpu_text": {"ge": 0.001, "le": 1e7},
    "loader_reserve_vcpus_per_gpu": {"ge": 0, "le": 64},
    "pinned_buffer_gib_per_gpu": {"ge": 0, "le": 1024},
    "loader_worker_ram_gib": {"ge": 0, "le": 1024},
    "checkpoint_every_hours": {"ge": 0.01, "le": 87600},
    "checkpoint_write_gb_s_per_instance": {"ge": 0.001, "le": 1e5},
    "restart_s": {"ge": 0, "le": 30 * 86_400},
    "checkpoints_kept": {"ge": 1, "le": 10**6},
    "failures_per_gpu_day": {"ge": 0, "le": 10},
    "provisioning_s": {"ge": 0, "le": 30 * 86_400},
    "startup_s": {"ge": 0, "le": 30 * 86_400},
    "evaluation_share": {"ge": 0, "le": 10},
    "checkpoint_conversion_gb_s": {"ge": 0, "le": 1e5},
    "scarce_on_demand_instances": {"ge": 0, "le": 10**6},
    "fewer_gpus_within_share": {"ge": 0, "le": 1},
}

#: what each overridable constant means, with its unit (optimizer/model/setup.py
#: PerfAssumptions); a constant missing here has no description (tests/jobs/test_field_docs.py)
_MEANINGS: dict[str, str] = {
    "overhead_gib": "device memory outside the allocator (CUDA context, cuBLAS/NCCL), GiB per GPU",
    "fragmentation": "allocator cache as a share of allocated memory: (reserved − allocated) ÷ allocated",
    "logits_bytes_per_value": "bytes per logit at the start of backward (14: eager fp32 loss)",
    "workspace_gib": "allocated temporaries (cuBLAS workspace, communication buckets), GiB per GPU",
    "zero3_prefetch_layers": "layers ZeRO-3 / FSDP keep gathered ahead (prefetch), layers",
    "offload_resident_layers": "layers of checkpointed inputs kept on the GPU with activation "
    "offloading, layers",
    "efficiency": "achieved share of the GPU's peak FLOP/s in compute (0..1]; replaces the model's own",
    "dp_overlap": "share of data-parallel communication hidden behind compute, 0..1",
    "tp_overlap": "share of tensor-parallel communication hidden behind compute, 0..1",
    "ep_overlap": "share of the expert-parallel all-to-all hidden behind compute, 0..1",
    "pp_overlap": "share of pipeline-parallel transfers hidden behind compute, 0..1",
    "cp_overlap": "share of context-parallel communication hidden behind compute, 0..1",
    "link_efficiency": "achieved ÷ nominal bandwidth of collectives, (0, 1]",
    "host_staged_fraction": "share of the PCIe link per direction reached by GPU-to-GPU copies "
    "staged through host memory (no peer-to-peer), (0, 1]",
    "qlora_dequant_factor": "slowdown of the base matmuls by 4-bit dequantisation (QLoRA), a factor ≥ 1",
    "bw_efficiency": "achieved share of HBM bandwidth in decode (serving), (0, 1]",
    "small_message_latency_s": "launch latency of one collective, seconds",
    "moe_expert_half_tokens": "tokens per expert at which a grouped expert GEMM reaches half its "
    "dense efficiency, tokens",
    "cpu_adam_slowdown": "CPU Adam over PCIe (ZeRO-Offload) ÷ on-GPU optimizer update time, a factor",
    "sample_batch_half": "per-sample models: a micro-batch of b samples takes (1 + h/b) × the "
    "per-sample time of a large one; h, samples",
    "activation_traffic": "per-sample models: HBM bytes moved per saved activation byte in a "
    "training step, a factor",
    "profile_band_same_gpu": "per-sample models: [P10, P90] of measured ÷ predicted step time on "
    "the GPU type (and precision) it was measured on; [low, high] with "
    "low ≤ 1 ≤ high",
    "profile_band_same_generation": "per-sample models: [P10, P90] of measured ÷ predicted step "
    "time on another GPU type of the same generation; [low, "
    "high] with low ≤ 1 ≤ high",
    "profile_band_cross_generation": "per-sample models: [P10, P90] of measured ÷ predicted step "
    "time across GPU generations; [low, high] with low ≤ 1 ≤ "
    "high",
    "profile_band_unmeasured": "per-sample models: [P10, P90] of measured ÷ predicted step time "
    "with no measured point (FLOPs only); [low, high] with low ≤ 1 ≤ "
    "high",
    "fp8_gemm_factor": "fp8 GEMMs reach this share of the bf16 efficiency (at twice the peak), (0, 1]",
    "band_prior": "[P10, P90] of measured ÷ predicted step time where no training run of the "
    "GPU generation × precision was measured (the wide prior the fitted bands shrink toward); "
    "[low, high] with low ≤ 1 ≤ high",
    "band_prior_cases": "cases of evidence at which a fitted band and the prior weigh the same",
    "band_cases_per_source": "independent cases one source counts as at most (band shrinkage)",
    "mfu_ceiling_unmeasured": "ceiling on predicted MFU (16-bit, fp32) of a GPU generation "
    "with fewer than 10 published full-training runs, (0, 1]",
    "mfu_ceiling_unmeasured_fp8": "ceiling on predicted fp8 MFU (of the fp8 peak) of a GPU "
    "generation with fewer than 10 published fp8 full-training runs, (0, 1]",
    "eager_score_bytes": "bytes moved per attention-score element (forward + backward) by an "
    "eager softmax kernel",
    "host_s_per_kernel": "host seconds per kernel an eager training step launches (the floor of a "
    "micro-batch on a fast GPU; 0: off)",
    "samples_per_s_per_vcpu_image": 'samples/s one vCPU decodes and augments for [data] kind = "image"',
    "samples_per_s_per_vcpu_text": 'samples/s one vCPU serves for [data] kind = "text" '
    "(pre-tokenized shards)",
    "loader_reserve_vcpus_per_gpu": "vCPUs each GPU process keeps (not available to loader "
    "workers), vCPUs per GPU",
    "pinned_buffer_gib_per_gpu": "page-locked host RAM per GPU process, GiB per GPU",
    "loader_worker_ram_gib": "host RAM per busy data-loader worker, GiB",
    "checkpoint_every_hours": "hours between checkpoints when [data] does not say",
    "checkpoint_write_gb_s_per_instance": "checkpoint write speed of one instance, GB/s",
    "restart_s": "seconds from an interruption to training again (re-provision, load the "
    "checkpoint, warm up)",
    "checkpoints_kept": "checkpoints kept in object storage when [data] does not say",
    "failures_per_gpu_day": "unexpected job interruptions (hardware, network, software) per "
    "GPU-day, any pricing model; rates add over the job's GPUs",
    "provisioning_s": "seconds from asking for the instances to all of them reachable (billed)",
    "startup_s": "seconds from booted to the first training step (image, data staging, first "
    "compile; billed)",
    "evaluation_share": "evaluation time as a share of the steps' time (forward-only passes "
    "between steps; 0: no evaluation)",
    "checkpoint_conversion_gb_s": "GB/s at which the final checkpoint is converted once at the "
    "end (0: no conversion)",
    "scarce_on_demand_instances": "more on-demand instances of a Hopper or Blackwell GPU type "
    "than this in one plan raise a line that it usually needs a capacity reservation",
    "fewer_gpus_within_share": "plans within this share of the cheapest plan's cost count as the "
    "same price, and the one with the fewest GPUs is chosen; 0 turns the rule off",
}

#: "None" defaults of PerfAssumptions: what the model uses instead
_NONE_DEFAULT = {
    "efficiency": "fitted per GPU type and precision",
    "overhead_gib": "the stack's context_gib",
    "fragmentation": "the stack's",
    "logits_bytes_per_value": "the stack's",
    "failures_per_gpu_day": "the GPU generation's published rate: Hopper 4.74e-4 (Llama 3 "
    "§3.3.4), data-centre Ampere 5.58e-4 (BLOOM); Hopper's for the others",
}


def _band(value: object) -> Any:
    """A [low, high] band of multipliers around 1 (TOML array), as a tuple."""
    if value is None:
        return None
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 2
        or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value
        )
    ):
        raise ValueError(
            f"{_toml_value(value)} is not allowed; allowed: two numbers [low, high] "
            "with 0 < low ≤ 1 ≤ high ≤ 100"
        )
    low, high = float(value[0]), float(value[1])
    if not 0 < low <= 1 <= high <= 100:
        raise ValueError(
            f"[{low:g}, {high:g}] is not allowed; allowed: two numbers [low, high] "
            "with 0 < low ≤ 1 ≤ high ≤ 100"
        )
    return (low, high)


def _toml_value(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return str(value).lower() if isinstance(value, bool) else repr(value)


def _description(name: str, default: Any) -> str:
    meaning = _MEANINGS.get(name)
    if not meaning:
        return ""
    if default is None:
        shown = _NONE_DEFAULT.get(name, "the stack's (stacks.toml)")
    elif isinstance(default, tuple):
        shown = "[" + ", ".join(f"{v:g}" for v in default) + "]"
    else:
        shown = f"{default:g}" if isinstance(default, float) else repr(default)
    return f"{meaning} (model default: {shown})"


def _override_fields() -> dict[str, Any]:
    """One optional field per numeric PerfAssumptions constant (the list lives there once);
    a (low, high) band is a two-number list."""
    hints = get_type_hints(PerfAssumptions)
    out: dict[str, Any] = {}
    for f in fields(PerfAssumptions):
        hint = hints[f.name]
        default = f.default if f.default is not MISSING else None
        if get_origin(hint) is tuple and get_args(hint) == (float, float):
            out[f.name] = (
                tuple[float, float] | None,
                Field(default=None, description=_description(f.name, default)),
            )
            continue
        scalar = [t for t in (hint, *get_args(hint)) if t in (bool, int, float)]
        kind = scalar[0] if scalar and set(get_args(hint)) <= {*scalar, type(None)} else None
        if kind is None or f.name == "use_fitted" or get_origin(hint) is tuple:
            continue  # calibrated / fitted tables are not job-file values
        if kind is not bool and f.name not in _BOUNDS:
            raise TypeError(f"PerfAssumptions.{f.name}: state its plausible range in _BOUNDS")
        bounds: dict[str, Any] = _BOUNDS[f.name] if kind is not bool else {}
        out[f.name] = (kind | None, Field(default=None, description=_description(f.name, default), **bounds))
    return out


def _band_fields() -> list[str]:
    hints = get_type_hints(PerfAssumptions)
    return [
        f.name
        for f in fields(PerfAssumptions)
        if get_origin(hints[f.name]) is tuple and get_args(hints[f.name]) == (float, float)
    ]


if TYPE_CHECKING:
    # its fields are generated from PerfAssumptions, so the type checker knows it by its base
    # (a sound supertype: what callers use of it, apply() and the BaseModel methods, is there)
    AssumptionOverrides = _Overrides
else:
    AssumptionOverrides = create_model(
        "AssumptionOverrides",
        __base__=_Overrides,
        **_override_fields(),
        __validators__={"_bands": field_validator(*_band_fields(), mode="before")(lambda cls, v: _band(v))},
    )


class JobFile(StrictModel):
    """What every job file has: a name, a model, owned/buyable hardware and assumption overrides."""

    name: str = Field(default="job", description="a label for the job in outputs")
    model: ModelRef = Field(
        description="`[model]`: what is trained or served (a preset, a "
        "Hugging Face config.json, an explicit shape or a per-sample profile)"
    )
    hardware: Hardware = Field(
        default=Hardware(), description="`[hardware]`: boxes we own or may buy, beside the cloud offerings"
    )
    assumptions: AssumptionOverrides = Field(
        default=AssumptionOverrides(),
        description="`[assumptions]`: overrides of the guessed "
        "constants of the performance model (unset: the model's defaults)",
    )
    pricing: PriceOverlay | None = Field(
        default=None,
        description="`[pricing]`: your prices for this job (discounts by provider and pricing "
        "model, fixed prices, extra rows), over ~/.config/ccopt/prices.toml",
    )


def stack_name(value: str) -> str:
    """The canonical name of a stack profile (aliases such as "nemo" accepted).

    Raises:
        ValueError: unknown stack (with the allowed names), for pydantic to report.
    """
    try:
        return get_stack(value, "stack").name
    except ConfigError as exc:
        raise ValueError(str(exc).removeprefix("stack: ")) from None


def coerce_document(
    doc: object,
    cls: type[DocT],
    load_file: Callable[[Path | str], tuple[DocT, Path | None]],
    from_dict: Callable[[dict[str, Any]], DocT],
    field: str = "job",
) -> tuple[DocT, Path | None]:
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
    raise ConfigError(f"{field}: expected a path, a dict or a {cls.__name__}, got {type(doc).__name__}")


def confidence_field(meets: str) -> Any:
    """The `constraints.confidence` field of a job kind: `meets` says what holds at it."""
    return Field(
        default=DEFAULT_CONFIDENCE,
        ge=CONFIDENCE_RANGE[0],
        le=CONFIDENCE_RANGE[1],
        description=f"{meets} at this quantile of the prediction band, {CONFIDENCE_RANGE[0]}-"
        f"{CONFIDENCE_RANGE[1]} (0.8: 4 runs in 5)",
    )
