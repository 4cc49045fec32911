"""What every job-file kind shares: the strict base model, hardware, calibration, assumptions."""

from __future__ import annotations

from dataclasses import MISSING, fields, replace
from pathlib import Path
from typing import Any, get_args, get_type_hints

from pydantic import ConfigDict, Field, ValidationError, create_model, model_validator

from optimizer.errors import ConfigError
from optimizer.inputs.aliases import rename_old_fields
from optimizer.inputs.jobs.profile import MeasuredIn, ProfileIn
from optimizer.inputs.jobs.strict import STRICT, StrictModel
from optimizer.inputs.models import load_hf_config
from optimizer.inputs.profiles import resolve_profile
from optimizer.inputs.validation import format_validation_error
from optimizer.model.presets import get_preset
from optimizer.model.profile import MeasuredPoint, SampleProfile
from optimizer.model.setup import Checkpointing, PerfAssumptions
from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import get_stack

__all__ = ["MAX_TOKENS", "MAX_DAYS", "MAX_USD", "StrictModel", "ModelRef", "STRICT", "HardwareEntry",
           "Hardware", "Calibration",
           "AssumptionOverrides", "JobFile", "stack_name", "format_validation_error", "coerce_document"]

#: every job-file table: unknown keys rejected, no NaN/inf, no bool or string where a number is
#: meant (strict), immutable once read
#: upper ends of the stated ranges (far beyond any real job; they keep hours, cents and CP-SAT's
#: integers finite): 10^15 tokens (~70× the largest published pretraining run), ten years, $10^10
MAX_TOKENS = 1e15
MAX_DAYS = 3650.0
MAX_USD = 1e10

class ModelRef(StrictModel):
    """`[model]`: a preset, a Hugging Face config.json path, an explicit shape, or a per-sample
    profile (`[model.profile]`); measured runs of a profile in `[model.measured]`."""

    model_config = ConfigDict(**{**STRICT, "extra": "allow"})
    preset: str | None = Field(default=None, description="a preset name (`ccopt models`)")
    hf_config: str | None = Field(default=None,
                                  description="path of a Hugging Face config.json (relative to the job file)")
    profile: ProfileIn | None = Field(default=None, description="a model known per sample: "
                                      "parameters, FLOPs and activation size per sample")
    measured: MeasuredIn | tuple[MeasuredIn, ...] | None = Field(
        default=None, description="measured training runs of a per-sample model (preset or "
        "profile): they fix its speed and memory")

    def _measured_points(self) -> tuple[MeasuredPoint, ...]:
        if self.measured is None:
            return ()
        runs = self.measured if isinstance(self.measured, tuple) else (self.measured,)
        return tuple(r.point() for r in runs)

    def resolve(self, base_dir: Path | None = None) -> ModelSpec | SampleProfile:
        given = [k for k in ("preset", "hf_config", "profile") if getattr(self, k) is not None]
        if given and self.model_extra:
            raise ConfigError(f"model: give one of preset, hf_config or an explicit shape "
                              f"(or profile); got {given[0]} and {', '.join(sorted(self.model_extra))}")
        if len(given) > 1:
            raise ConfigError(f"model: give one of preset, hf_config or profile, not "
                              f"{' and '.join(given)}")
        model: ModelSpec | SampleProfile
        if self.profile is not None:
            return resolve_profile(self.profile.profile(), self._measured_points())
        if self.preset:
            model = get_preset(self.preset, "model.preset")
            if isinstance(model, SampleProfile):
                return resolve_profile(model, self._measured_points())
        elif self.hf_config:
            path = Path(self.hf_config)
            if base_dir is not None and not path.is_absolute():
                path = base_dir / path
            model = load_hf_config(path)
        else:
            shape = dict(self.model_extra or {})
            if not shape:
                raise ConfigError("model: give one of preset, hf_config, profile, or an explicit "
                                  "shape (layers, hidden, heads, ffn, vocab, ...)")
            try:
                model = ModelSpec(**shape)
            except ValidationError as exc:
                raise ConfigError(format_validation_error(exc, "model")) from None
        if self.measured is not None:
            raise ConfigError(f"model.measured: measured runs describe a per-sample model "
                              f"(`ccopt models` kind profile, or [model.profile]); {model.name} is "
                              "a transformer shape: use [calibration] or `ccopt calibrate`")
        return model


class HardwareEntry(StrictModel):
    """`[[hardware.owned]]` / `[[hardware.buy]]`: boxes we have or may buy; any HardwareSpec
    field overrides the defaults of pricing_data/hardware.csv."""

    model_config = ConfigDict(**{**STRICT, "extra": "allow"})
    gpu: str = Field(description="GPU type of the box (pricing_data/hardware.csv defaults for it)")
    boxes: int | None = Field(default=None, gt=0, le=10_000, description="owned: boxes we have")
    max_count: int | None = Field(default=None, gt=0, le=100_000, description="buy: max GPUs to buy")
    inter_node_gbps: float = Field(default=10.0, gt=0, le=100_000, description="network between boxes")
    charge_capital: bool = Field(default=False, description="owned: also charge amortised capital")


class Hardware(StrictModel):
    owned: tuple[HardwareEntry, ...] = ()
    buy: tuple[HardwareEntry, ...] = ()


class Calibration(StrictModel):
    """`[calibration]`: one measured run that fixes the efficiency of a GPU type."""

    gpu: str
    tokens_per_s: float | None = Field(default=None, gt=0, le=1e12,
                                       description="measured tokens/s of the whole run (or step_time_s)")
    step_time_s: float | None = Field(default=None, gt=0, le=1e6,
                                      description="measured seconds per optimizer step")
    num_gpus: int = Field(default=1, gt=0, le=10**6, description="GPUs of the measured run (old: gpus)")
    gpus_per_node: int | None = Field(default=None, gt=0, le=1024,
                                      description="GPUs per node of the measured run")
    tp: int = Field(default=1, gt=0, le=1024, description="tensor-parallel degree of the measured run")
    pp: int = Field(default=1, gt=0, le=1024, description="pipeline stages of the measured run")
    zero_stage: int = Field(default=0, ge=0, le=3, description="ZeRO stage of the measured run")
    activation_checkpointing: Checkpointing = Field(default="none",
                                                    description="checkpointing of the measured run (old "
                                                    "name: checkpointing)")
    micro_batch: int = Field(default=1, gt=0, le=2**20,
                             description="sequences per GPU per micro-step of the measured run")
    grad_accum: int = Field(default=1, gt=0, le=2**20,
                            description="micro-steps per optimizer step of the measured run")
    inter_node_gbps: float = Field(default=100.0, gt=0, le=100_000,
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


class _Overrides(StrictModel):
    """`[assumptions]`: override any guessed constant of the performance model
    (optimizer/model/setup.py PerfAssumptions; unset fields keep the model's default)."""

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
    "samples_per_s_per_vcpu_image": {"gt": 0, "le": 1e7},
    "samples_per_s_per_vcpu_text": {"gt": 0, "le": 1e7},
    "loader_reserve_vcpus_per_gpu": {"ge": 0, "le": 64},
    "pinned_buffer_gib_per_gpu": {"ge": 0, "le": 1024},
    "loader_worker_ram_gib": {"ge": 0, "le": 1024},
    "checkpoint_every_hours": {"gt": 0, "le": 87600}, "checkpoints_kept": {"ge": 1, "le": 10**6},
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


class JobFile(StrictModel):
    """What every job file has: a name, a model, owned/buyable hardware and assumption overrides."""

    name: str = Field(default="job", description="a label for the job in outputs")
    model: ModelRef
    hardware: Hardware = Hardware()
    assumptions: AssumptionOverrides = AssumptionOverrides()



def stack_name(value: str) -> str:
    """The canonical name of a stack profile (aliases such as "nemo" accepted).

    Raises:
        ValueError: unknown stack (with the allowed names), for pydantic to report.
    """
    try:
        return get_stack(value, "stack").name
    except ConfigError as exc:
        raise ValueError(str(exc).removeprefix("stack: ")) from None


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
