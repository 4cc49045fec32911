"""The user's own prices: the overlay file (~/.config/ccopt/prices.toml) or a job's `[pricing]`
table, validated at the edge like job files (one line naming file, field and allowed values).

```toml
as_of = 2026-11-15                 # when these prices were agreed (default: the file's date)

[discounts.aws]                    # fraction off the catalog price, by pricing model
on_demand = 0.30                   # 30 % committed-use discount
reserved_1y = 0.10

[[prices]]                         # a fixed price replaces the catalog's
provider = "lambda"
instance = "gpu_8x_h100_sxm5"      # or gpu = "H100" (every instance of that GPU)
usd_per_gpu_hour = 2.10            # or usd_per_hour (whole instance)
pricing = ["on_demand"]            # optional; default every pricing model

[[rows]]                           # an offering the catalog lacks (e.g. an internal cluster)
provider = "internal"
instance = "dgx-a100-pod"
gpu = "A100-80GB"
gpus_per_instance = 8
usd_per_gpu_hour = 1.10
inter_node_gbps = 800
inter_node_kind = "infiniband"
max_instances = 4
```
Names (providers, instances, GPUs) are checked against the price catalog when the overlay is
applied (optimizer/pricing/overlay.py), case-insensitively, with "did you mean".
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from optimizer.errors import did_you_mean
from optimizer.inputs.jobs.limits import (
    MAX_GPUS_PER_INSTANCE,
    MAX_INSTANCES,
    MAX_USD_PER_GPU_HOUR,
    MIN_USD_PER_GPU_HOUR,
)
from optimizer.inputs.jobs.strict import GpuName, StrictModel
from optimizer.inputs.toml_file import read_toml
from optimizer.inputs.validation import validated
from optimizer.vocabulary import PRICING_MODELS, InterNodeKind, PricingModel

__all__ = [
    "OVERLAY_ENV",
    "Discounts",
    "FixedPrice",
    "ExtraRow",
    "PriceOverlay",
    "overlay_path",
    "load_overlay",
    "overlay_from_dict",
]

#: the overlay file's path; set to "" for none (tests); unset: $XDG_CONFIG_HOME/ccopt/prices.toml
OVERLAY_ENV = "CCOPT_PRICES_OVERLAY"


class Discounts(StrictModel):
    """`[discounts.PROVIDER]`: the fraction taken off the catalog price of each pricing model."""

    on_demand: float | None = Field(
        default=None, ge=0, lt=1, description="fraction off on-demand prices (0.30 = 30 %)"
    )
    spot: float | None = Field(default=None, ge=0, lt=1, description="fraction off spot prices")
    reserved_1y: float | None = Field(
        default=None, ge=0, lt=1, description="fraction off 1-year reserved prices"
    )
    reserved_3y: float | None = Field(
        default=None, ge=0, lt=1, description="fraction off 3-year reserved prices"
    )

    @model_validator(mode="before")
    @classmethod
    def _known(cls, data: object) -> Any:
        if isinstance(data, dict):
            for key, value in data.items():
                if key not in PRICING_MODELS:
                    raise ValueError(
                        f"unknown pricing model {key!r}{did_you_mean(key, PRICING_MODELS)}; "
                        f"allowed: {', '.join(PRICING_MODELS)}"
                    )
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
                    raise ValueError(
                        f"{key} = {value!r} is not allowed; allowed: a fraction >= 0 and < 1 "
                        "(0.30 = 30 % off the catalog price)"
                    )
        return data

    def by_model(self) -> dict[str, float]:
        """pricing model -> fraction, for the models given."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class _Priced(StrictModel):
    usd_per_hour: float | None = Field(
        default=None,
        ge=MIN_USD_PER_GPU_HOUR,
        le=MAX_USD_PER_GPU_HOUR * MAX_GPUS_PER_INSTANCE,
        description="USD per instance-hour",
    )
    usd_per_gpu_hour: float | None = Field(
        default=None, ge=MIN_USD_PER_GPU_HOUR, le=MAX_USD_PER_GPU_HOUR, description="USD per GPU-hour"
    )

    @model_validator(mode="after")
    def _one_price(self) -> _Priced:
        self.require_one_of("usd_per_hour", "usd_per_gpu_hour")
        return self

    def instance_usd_per_hour(self, gpus_per_instance: int) -> float:
        """The price of one instance-hour (a per-GPU price times the GPUs in the instance)."""
        if self.usd_per_hour is not None:
            return self.usd_per_hour
        return float(self.usd_per_gpu_hour or 0.0) * gpus_per_instance


class FixedPrice(_Priced):
    """`[[prices]]`: a fixed price for an instance type, or for every instance of a GPU type."""

    provider: str | None = Field(default=None, description="provider; unset: every provider (with gpu)")
    instance: str | None = Field(default=None, description="instance type (needs provider)")
    gpu: GpuName | None = Field(default=None, description="GPU id or alias: every instance of that GPU")
    region: str | None = Field(default=None, description="only this region; unset: every region")
    pricing: tuple[PricingModel, ...] = Field(default=(), description="pricing models; empty: every one")

    @model_validator(mode="after")
    def _target(self) -> FixedPrice:
        if self.instance is None and self.gpu is None:
            raise ValueError("name an instance (with its provider) or a gpu")
        if self.instance is not None and self.provider is None:
            raise ValueError("an instance needs its provider")
        return self


class ExtraRow(_Priced):
    """`[[rows]]`: an offering the catalog lacks (a private cluster, a negotiated contract)."""

    provider: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$", description="a provider name (yours)")
    instance: str = Field(min_length=1, description="the instance (or machine) name")
    region: str = Field(default="private", min_length=1, description="where it runs")
    gpu: GpuName = Field(description="GPU id or alias from the GPU catalog")
    gpus_per_instance: int = Field(gt=0, le=MAX_GPUS_PER_INSTANCE, description="GPUs in one instance")
    pricing: PricingModel = Field(default="on_demand", description="how it is billed")
    inter_node_gbps: float | None = Field(
        default=None,
        ge=0,
        le=100_000,
        description="Gbit/s between instances; unset: the GPU's default (a guess)",
    )
    inter_node_kind: InterNodeKind = Field(default="ethernet", description="the fabric between instances")
    max_instances: int | None = Field(
        default=None, ge=1, le=MAX_INSTANCES, description="instances available together"
    )
    vcpus: float | None = Field(default=None, gt=0, le=100_000, description="host vCPUs per instance")
    ram_gib: float | None = Field(default=None, gt=0, le=1e7, description="host RAM per instance, GiB")


class PriceOverlay(StrictModel):
    """The user's prices: discounts, fixed prices and extra rows (see the module docstring)."""

    as_of: dt.date | None = Field(default=None, description="when these prices were agreed")
    discounts: dict[str, Discounts] = Field(
        default_factory=dict, description="`[discounts.PROVIDER]`: fractions off by pricing model"
    )
    prices: tuple[FixedPrice, ...] = Field(default=(), description="`[[prices]]`: fixed prices")
    rows: tuple[ExtraRow, ...] = Field(default=(), description="`[[rows]]`: offerings the catalog lacks")

    @property
    def empty(self) -> bool:
        return not (self.discounts or self.prices or self.rows)


def overlay_path() -> Path | None:
    """The overlay file to read: $CCOPT_PRICES_OVERLAY ("" = none), else
    $XDG_CONFIG_HOME/ccopt/prices.toml (default ~/.config/ccopt/prices.toml) if it exists."""
    if OVERLAY_ENV in os.environ:
        value = os.environ[OVERLAY_ENV].strip()
        return Path(value).expanduser() if value else None
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    file = base / "ccopt" / "prices.toml"
    return file if file.is_file() else None


def overlay_from_dict(data: dict[str, Any], source: str, prefix: str = "") -> PriceOverlay:
    """Validate a decoded overlay table.

    Raises:
        ConfigError: one line naming `source`, the field and the allowed values.
    """
    return validated(PriceOverlay, data, source, prefix)


def load_overlay(path: Path) -> PriceOverlay:
    """Read and validate an overlay file; a file without as_of is dated by its modification day.

    Raises:
        ConfigError: missing file, invalid TOML or an invalid field (one line naming the file).
    """
    overlay = overlay_from_dict(read_toml(path, "price overlay"), str(path))
    if overlay.as_of is None:
        mtime = dt.datetime.fromtimestamp(path.stat().st_mtime, tz=dt.timezone.utc)  # noqa: UP017
        overlay = overlay.model_copy(update={"as_of": mtime.date()})
    return overlay
