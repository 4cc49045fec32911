"""Owned / purchasable GPU boxes: capital, power and effective USD per GPU-hour."""

from __future__ import annotations

import csv
import functools
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from optimizer.errors import ConfigError, did_you_mean
from optimizer.inputs.gpus import data_path, load_gpus, resolve_gpu_id
from optimizer.pricing.schema import row_error
from optimizer.units import HOURS_PER_MONTH

__all__ = [
    "HOURS_PER_MONTH",
    "HardwareSpec",
    "default_hardware",
    "hardware_from_overrides",
    "box_price_usd",
    "power_usd_per_hour",
    "capital_usd",
    "capital_usd_per_hour",
    "effective_usd_per_gpu_hour",
]


#: used for GPUs without a row in pricing_data/hardware.csv (same choices as those rows;
#: reasons in pricing_data/README.md "Owned hardware")
_GENERIC_DEFAULTS: dict[str, Any] = {
    "host_power_w": 300.0,  # GUESS: one-socket server host under load
    "electricity_usd_per_kwh": 0.15,  # CHOICE within EIA 2024 figures (residential 15.45 c)
    "pue": 1.0,  # CHOICE: office box; 1.58 = Uptime Institute 2023 data-centre average
    "amortisation_months": 36,  # CHOICE: IREN 36-month leases (shortest horizon in reference)
    "resale_fraction": 0.25,  # GUESS: no GPU resale curve was found
    "accounting": "amortised",
    "max_boxes": None,
}


class HardwareSpec(BaseModel):
    """A purchasable (or already owned) box of identical GPUs; units in field names."""

    # built on first validation: only a job with owned or bought boxes reads one
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False, defer_build=True)

    gpu: str
    gpus_per_box: int = Field(ge=1, le=16)
    price_per_gpu_usd: float = Field(ge=0)
    host_price_usd: float = Field(ge=0)  # CPU, board, RAM, PSU, chassis, risers, NVMe
    gpu_power_w: float = Field(gt=0)  # average draw per GPU while busy
    host_power_w: float = Field(ge=0)  # draw of the rest of the box while busy
    electricity_usd_per_kwh: float = Field(ge=0)
    pue: float = Field(ge=1.0, le=3.0)  # facility / IT power; >1 adds cooling overhead
    amortisation_months: float = Field(gt=0)
    resale_fraction: float = Field(ge=0, lt=1)  # of the purchase price, at the end
    accounting: Literal["upfront", "amortised"] = "amortised"
    max_boxes: int | None = Field(default=None, ge=1)
    #: host / colocation / operations fee of one box a month, paid busy or idle (default none)
    ops_usd_per_month: float = Field(default=0.0, ge=0)
    #: the host (pricing_data/hardware_host.csv; None = unknown, set them in the job file)
    vcpus: float | None = Field(default=None, gt=0, le=100_000)
    ram_gib: float | None = Field(default=None, gt=0, le=1e6)
    local_nvme_gb: float | None = Field(default=None, ge=0, le=1e8)


def _first_error(exc: ValidationError) -> tuple[str, str]:
    """(field, message) of the first pydantic error."""
    err = exc.errors()[0]
    return (str(err["loc"][0]) if err["loc"] else "?"), err["msg"]


def _hardware_file() -> str:

    return str(data_path("hardware.csv"))


@functools.lru_cache(maxsize=2)
def _defaults(path: str) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        for line, raw in enumerate(reader, start=2):
            fields = {k: v.strip() for k, v in raw.items() if k != "notes" and v.strip()}
            try:
                spec = HardwareSpec.model_validate(fields)
            except ValidationError as exc:
                column, message = _first_error(exc)
                raise row_error(path, line, column, message) from None
            rows[spec.gpu] = spec.model_dump()
    host_path = str(data_path("hardware_host.csv"))
    with open(host_path, newline="", encoding="utf-8") as handle:
        for line, raw in enumerate(csv.DictReader(handle), start=2):
            known = {
                k: v.strip()
                for k, v in raw.items()
                if k in ("vcpus", "ram_gib", "local_nvme_gb") and v and v.strip()
            }
            gpu = raw["gpu"].strip()
            if gpu in rows and known:
                try:
                    rows[gpu] = HardwareSpec.model_validate({**rows[gpu], **known}).model_dump()
                except ValidationError as exc:
                    column, message = _first_error(exc)
                    raise row_error(host_path, line, column, message) from None
    return rows


def default_hardware(gpu_id: str) -> HardwareSpec:
    """The bundled default box for a GPU (RTX4090: 8 per box, RTX3090: 4 per box).

    Raises:
        ConfigError: no default for that GPU (use hardware_from_overrides with prices).
    """

    gpu = resolve_gpu_id(gpu_id, field="hardware.gpu")
    defaults = _defaults(_hardware_file())
    if gpu not in defaults:
        raise ConfigError(
            f"hardware.gpu: no default box for {gpu!r}; defaults exist for "
            f"{', '.join(defaults)} — give gpus_per_box, price_per_gpu_usd and host_price_usd"
        )
    return HardwareSpec.model_validate(defaults[gpu])


def hardware_from_overrides(gpu_id: str, *, priced: bool = True, **fields: Any) -> HardwareSpec:
    """A HardwareSpec from the default box of `gpu_id` with `fields` replaced (job-file overrides).

    For a GPU without a default box, gpus_per_box, price_per_gpu_usd and host_price_usd are
    required; price_per_gpu_usd defaults to the GPU catalog's street price and gpu_power_w to
    its TDP where the catalog has them; the rest to the generic defaults. `priced` False (an
    owned box already paid for, power only): the prices default to 0 and are never required.

    Raises:
        ConfigError: unknown field, missing required field or invalid value (names the field).
    """

    gpu = resolve_gpu_id(gpu_id, field="hardware.gpu")
    allowed = [f for f in HardwareSpec.model_fields if f != "gpu"]
    for name in fields:
        if name not in allowed:
            raise ConfigError(
                f"hardware.{name}: unknown field{did_you_mean(name, allowed)} Allowed: {', '.join(allowed)}"
            )
    defaults = _defaults(_hardware_file())
    if gpu in defaults:
        base = dict(defaults[gpu])
    else:
        base = dict(_GENERIC_DEFAULTS, gpu=gpu)
        spec = load_gpus()[gpu]
        if spec.tdp_w:
            base["gpu_power_w"] = spec.tdp_w
        if spec.street_price_usd:  # the catalog's sourced street price (gpus*.csv notes)
            base["price_per_gpu_usd"] = spec.street_price_usd
    if not priced:  # an owned box already paid for: its price is never used
        base.setdefault("price_per_gpu_usd", 0.0)
        base.setdefault("host_price_usd", 0.0)
    base.update({k: v for k, v in fields.items() if v is not None})
    missing = [
        f for f in ("gpus_per_box", "price_per_gpu_usd", "host_price_usd", "gpu_power_w") if f not in base
    ]
    if missing:
        raise ConfigError(
            f"hardware.{missing[0]}: required for {gpu!r} (no default box); give {', '.join(missing)}"
        )
    try:
        return HardwareSpec.model_validate(base)
    except ValidationError as exc:
        column, message = _first_error(exc)
        raise ConfigError(f"hardware.{column}: {message} (got {base.get(column)!r})") from None


def _check_boxes(spec: HardwareSpec, boxes: int) -> None:
    if boxes < 0:
        raise ConfigError(f"boxes: must be >= 0, got {boxes}")
    if spec.max_boxes is not None and boxes > spec.max_boxes:
        raise ConfigError(f"boxes: {boxes} exceeds max_boxes = {spec.max_boxes} for {spec.gpu}")


def box_price_usd(spec: HardwareSpec) -> float:
    """Purchase price of one box: GPUs × price per GPU + host, USD."""
    return spec.gpus_per_box * spec.price_per_gpu_usd + spec.host_price_usd


def power_usd_per_hour(spec: HardwareSpec, boxes: int, utilisation: float = 1.0) -> float:
    """Electricity USD per wall-clock hour for `boxes` busy a fraction `utilisation` of the time.

    kW = (gpus × gpu_power_w + host_power_w) / 1000 × PUE; idle draw is not modelled
    (boxes assumed off when idle — a stated simplification).
    """
    _check_boxes(spec, boxes)
    if not 0 <= utilisation <= 1:
        raise ConfigError(f"utilisation: must be within [0, 1], got {utilisation}")
    kw = (spec.gpus_per_box * spec.gpu_power_w + spec.host_power_w) / 1000 * spec.pue
    return boxes * kw * spec.electricity_usd_per_kwh * utilisation


def capital_usd(spec: HardwareSpec, boxes: int) -> float:
    """Net capital of buying `boxes`: purchase price minus resale value at the end, USD."""
    _check_boxes(spec, boxes)
    return boxes * box_price_usd(spec) * (1 - spec.resale_fraction)


def capital_usd_per_hour(spec: HardwareSpec, boxes: int) -> float:
    """Straight-line amortised capital per wall-clock hour: (price − resale) / amortised hours."""
    return capital_usd(spec, boxes) / (spec.amortisation_months * HOURS_PER_MONTH)


def effective_usd_per_gpu_hour(spec: HardwareSpec, utilisation: float = 1.0) -> float:
    """USD per *used* GPU-hour: amortised capital spread over utilised hours, plus power.

    = capital_usd_per_hour(1 box) / (gpus_per_box × utilisation)
      + power of one busy box per hour / gpus_per_box.

    Raises:
        ConfigError: utilisation outside (0, 1].
    """
    if not 0 < utilisation <= 1:
        raise ConfigError(f"utilisation: must be within (0, 1], got {utilisation}")
    capital = capital_usd_per_hour(spec, 1) / (spec.gpus_per_box * utilisation)
    power = power_usd_per_hour(spec, 1, 1.0) / spec.gpus_per_box
    return capital + power
