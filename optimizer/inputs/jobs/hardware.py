"""`[[hardware.owned]]`, `[[hardware.buy]]` and `[[capacity.owned]]`: boxes we have or may buy."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from optimizer.inputs.aliases import rename_old_fields
from optimizer.inputs.jobs.constraint_fields import DutyCycle, JobsPerMonth
from optimizer.inputs.jobs.limits import MAX_USD
from optimizer.inputs.jobs.strict import GpuName, RenamedFieldsModel, StrictModel

__all__ = ["HARDWARE_OVERRIDES", "HardwareEntry", "Hardware", "entries_old_names"]


#: the box fields of pricing_data/hardware.csv a `[[hardware.*]]` entry may override
#: (optimizer.pricing.owned.HardwareSpec, which checks them again; unset: the GPU's default box)
HARDWARE_OVERRIDES = (
    "gpus_per_box",
    "price_per_gpu_usd",
    "host_price_usd",
    "gpu_power_w",
    "host_power_w",
    "electricity_usd_per_kwh",
    "pue",
    "amortisation_months",
    "resale_fraction",
    "accounting",
    "max_boxes",
    "ops_usd_per_month",
    "vcpus",
    "ram_gib",
    "local_nvme_gb",
)


class HardwareEntry(RenamedFieldsModel):
    """`[[hardware.owned]]` / `[[hardware.buy]]` / `[[capacity.owned]]`: boxes we have or may
    buy; the box fields override the defaults of pricing_data/hardware.csv for the GPU."""

    OLD_NAMES_OF = "hardware"

    gpu: GpuName = Field(
        description="GPU type of the box (id or alias, `ccopt gpus`); its default box "
        "comes from pricing_data/hardware.csv"
    )
    num_boxes: int | None = Field(
        default=None,
        gt=0,
        le=10_000,
        description="owned: how many boxes we have (old name: boxes); "
        "default: max_boxes, else 1 (required in [[capacity.owned]])",
    )
    max_gpus: int | None = Field(
        default=None,
        gt=0,
        le=100_000,
        description="buy: at most this many GPUs bought, in whole boxes "
        "(max_gpus ÷ gpus_per_box, rounded down; old name: max_count); "
        "default: max_boxes boxes, else one box",
    )
    inter_node_gbps: float = Field(
        default=10.0, gt=0, le=100_000, description="network between boxes, Gbit/s per box"
    )
    charge_capital: bool = Field(
        default=False,
        description="owned: also charge its net capital and ops fee, spread as a bought box's "
        "(default: power only; no price needed then)",
    )
    gpus_per_box: int | None = Field(
        default=None,
        ge=1,
        le=16,
        description="GPUs in one box (default: the GPU's box in pricing_data/hardware.csv)",
    )
    price_per_gpu_usd: float | None = Field(
        default=None, ge=0, le=MAX_USD, description="purchase price of one GPU, USD"
    )
    host_price_usd: float | None = Field(
        default=None,
        ge=0,
        le=MAX_USD,
        description="purchase price of the rest of one box (CPU, board, RAM, PSU, chassis, NVMe), USD",
    )
    gpu_power_w: float | None = Field(
        default=None, gt=0, le=100_000, description="average draw of one GPU while busy, W"
    )
    host_power_w: float | None = Field(
        default=None, ge=0, le=1_000_000, description="draw of the rest of the box while busy, W"
    )
    electricity_usd_per_kwh: float | None = Field(
        default=None, ge=0, le=100, description="electricity price, USD per kWh"
    )
    pue: float | None = Field(
        default=None,
        ge=1.0,
        le=3.0,
        description="power usage effectiveness: facility ÷ IT power (1 = an office box; > 1 adds cooling)",
    )
    amortisation_months: float | None = Field(
        default=None,
        gt=0,
        le=1200,
        description="months over which the net purchase price is spread (amortised accounting)",
    )
    resale_fraction: float | None = Field(
        default=None,
        ge=0,
        lt=1,
        description="share of the purchase price recovered by selling the box at the end",
    )
    accounting: Literal["upfront", "amortised"] | None = Field(
        default=None,
        description="buy: upfront (the whole net price is charged to this one job) | "
        "amortised (net price and ops fee spread over the jobs the box does in "
        "amortisation_months: constraints.jobs_per_month or duty_cycle, else back to back)",
    )
    max_boxes: int | None = Field(
        default=None,
        ge=1,
        le=10_000,
        description="at most this many boxes (the default count when num_boxes / max_gpus is not given)",
    )
    ops_usd_per_month: float | None = Field(
        default=None,
        ge=0,
        le=MAX_USD,
        description="host / colocation / operations fee of one box a month, USD, paid busy or idle "
        "(buy, or owned with charge_capital; default 0)",
    )
    jobs_per_month: JobsPerMonth = Field(
        default=None,
        description="[[capacity.owned]] with charge_capital: jobs a month the box does over its "
        "holding period; its net capital and ops fee are spread over them, as a plan spreads a "
        "bought box's (default: busy back to back). A job file says constraints.jobs_per_month",
    )
    duty_cycle: DutyCycle = Field(
        default=None,
        description="[[capacity.owned]] with charge_capital: the share of the month the box is busy "
        "(instead of jobs_per_month). A job file says constraints.duty_cycle",
    )
    vcpus: float | None = Field(
        default=None,
        gt=0,
        le=100_000,
        description="vCPUs of one box (data-loader check; default: "
        "pricing_data/hardware_host.csv, else unknown)",
    )
    ram_gib: float | None = Field(
        default=None,
        gt=0,
        le=1e6,
        description="host RAM of one box, GiB (default: pricing_data/hardware_host.csv, else unknown)",
    )
    local_nvme_gb: float | None = Field(
        default=None,
        ge=0,
        le=1e8,
        description="local NVMe of one box, GB (dataset and "
        "checkpoints; default: pricing_data/hardware_host.csv)",
    )

    def overrides(self) -> dict[str, Any]:
        """The box fields the entry sets (for optimizer.pricing.owned.hardware_from_overrides)."""
        return {k: getattr(self, k) for k in HARDWARE_OVERRIDES if getattr(self, k) is not None}

    def check_owned(self, i: int) -> None:
        """Entry `i` of an owned list ([[hardware.owned]], [[capacity.owned]]) is counted by
        num_boxes: max_gpus caps a purchase (ValueError naming the entry)."""
        if self.max_gpus is not None:
            raise ValueError(f"owned[{i}]: max_gpus is for [[hardware.buy]]; use num_boxes")


def entries_old_names(data: object, tables: dict[str, str]) -> Any:
    """Rename old field names in the entry lists of `data` (key -> alias table), naming the
    table in the warning; both names given is left for the entry, whose error has its index."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for key, table in tables.items():
        entries = out.get(key)
        if isinstance(entries, (list, tuple)):
            renamed = []
            for e in entries:
                try:
                    renamed.append(rename_old_fields(e, table))
                except ValueError:
                    renamed.append(e)
            out[key] = renamed
    return out


class Hardware(StrictModel):
    """`[hardware]`: boxes of this job (owned or to buy), beside or instead of the cloud."""

    owned: tuple[HardwareEntry, ...] = Field(
        default=(), description="`[[hardware.owned]]`: boxes we have (power only, or charge_capital)"
    )
    buy: tuple[HardwareEntry, ...] = Field(
        default=(), description="`[[hardware.buy]]`: boxes we may buy (power + net purchase price)"
    )

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: object) -> Any:
        return entries_old_names(data, {"owned": "hardware.owned", "buy": "hardware.buy"})

    @model_validator(mode="after")
    def _check(self) -> Hardware:
        for i, e in enumerate(self.owned):
            e.check_owned(i)
        for i, e in enumerate(self.buy):
            if e.num_boxes is not None:
                raise ValueError(f"buy[{i}]: num_boxes is for [[hardware.owned]]; use max_gpus")
        for kind, entries in (("owned", self.owned), ("buy", self.buy)):
            for i, e in enumerate(entries):
                for name in ("jobs_per_month", "duty_cycle"):
                    if getattr(e, name) is not None:
                        raise ValueError(
                            f"{kind}[{i}].{name}: a job file states the workload once, as "
                            f"constraints.{name} (the per-box field is for [[capacity.owned]])"
                        )
        return self
