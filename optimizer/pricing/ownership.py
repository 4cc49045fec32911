"""Owning boxes at the work they will really do: what a job pays for them (the rent-or-buy
verdict built on it is pricing/verdict.py, loaded when there are boxes to compare).

A box's fixed costs (net capital spread straight-line over the holding period, plus any
host/colocation/ops fee a month) are paid every month whether it runs or not; the jobs that use
it carry them all (idle capital is charged to the jobs). Power is paid only while busy. Every
planner prices a box through `fixed_charge_usd` (via `offering.cost_usd`), and `compare`,
`plan` and the report state the answer through `verdict.rent_or_buy`: one formula, one verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from optimizer.errors import ConfigError
from optimizer.units import HOURS_PER_MONTH

__all__ = [
    "Usage",
    "NO_USAGE",
    "OwnershipTerms",
    "charge_rates",
    "fixed_charge_usd",
]


@dataclass(frozen=True)
class Usage:
    """How much the boxes will be used: jobs of this kind a month, or the share of the month the
    boxes are busy (duty cycle); neither: jobs back to back (100%, the most favourable case)."""

    jobs_per_month: float | None = None
    duty_cycle: float | None = None
    #: where the two values were written, for messages: "constraints" of a job file, or a
    #: [[capacity.owned]] entry ("capacity.owned[0]")
    where: str = field(default="constraints", compare=False)

    def __post_init__(self) -> None:
        if self.jobs_per_month is not None and self.duty_cycle is not None:
            raise ConfigError(
                f"{self.where}.duty_cycle: give jobs_per_month or duty_cycle, not both "
                f"(got jobs_per_month = {self.jobs_per_month:g}, duty_cycle = {self.duty_cycle:g})"
            )
        if self.jobs_per_month is not None and not self.jobs_per_month > 0:
            raise ConfigError(f"{self.where}.jobs_per_month: must be > 0, got {self.jobs_per_month}")
        if self.duty_cycle is not None and not 0 < self.duty_cycle <= 1:
            raise ConfigError(f"{self.where}.duty_cycle: must be within (0, 1], got {self.duty_cycle}")

    @property
    def stated(self) -> bool:
        return self.jobs_per_month is not None or self.duty_cycle is not None

    def jobs_per_month_for(self, job_hours: float) -> float:
        """Jobs a month the boxes do: the stated rate, capped at back to back (730 h a month ÷
        the job's hours); a duty cycle d: d × back to back."""
        back_to_back = HOURS_PER_MONTH / job_hours
        if self.jobs_per_month is not None:
            return min(self.jobs_per_month, back_to_back)
        return back_to_back * (self.duty_cycle if self.duty_cycle is not None else 1.0)

    def utilisation(self, job_hours: float) -> float:
        """Share of the month the boxes are busy with this job: jobs a month × hours ÷ 730 h."""
        return self.jobs_per_month_for(job_hours) * job_hours / HOURS_PER_MONTH

    def describe(self) -> str:
        if self.jobs_per_month is not None:
            return f"constraints.jobs_per_month = {self.jobs_per_month:g}"
        if self.duty_cycle is not None:
            return f"constraints.duty_cycle = {self.duty_cycle:g}"
        return "no jobs_per_month or duty_cycle stated: jobs back to back (100%)"


#: no workload stated: jobs back to back (100 %)
NO_USAGE = Usage()


@dataclass(frozen=True)
class OwnershipTerms:
    """What owning one box costs, from its HardwareSpec (pricing/owned.py)."""

    net_capital_usd: float  # purchase price − resale value at the end of the holding period
    holding_months: float  # the amortisation period: the box is sold at its end
    power_usd_per_hour: float  # electricity × PUE of one busy box (owned.power_usd_per_hour)
    ops_usd_per_month: float = 0.0  # host / colocation / operations fee of one box a month
    charged: bool = True  # False: an owned box already paid for (power only)
    upfront: bool = False  # accounting = "upfront": this job alone pays for the box

    @property
    def fixed_usd_per_month(self) -> float:
        """Straight-line depreciation (net capital ÷ holding months, no discounting) + ops fee."""
        return self.net_capital_usd / self.holding_months + self.ops_usd_per_month


def charge_rates(terms: OwnershipTerms, usage: Usage) -> tuple[float, float]:
    """(fixed USD per job, USD per busy hour) of one box's fixed costs; a job pays the larger.

    With F = fixed costs a month: jobs_per_month n → F / n per job, and at least F / 730 per
    busy hour (the box cannot do more than back to back); duty cycle d → F / (730 d) per busy
    hour; neither → F / 730 (100%); upfront → this job alone: F × holding months. Not charged
    (an owned box already paid for): (0, 0).
    """
    if not terms.charged:
        return 0.0, 0.0
    f = terms.fixed_usd_per_month
    per_busy_hour_full = f / HOURS_PER_MONTH
    if terms.upfront:
        if usage.stated:
            raise ConfigError(
                f"hardware.buy.accounting: 'upfront' charges the whole purchase to this one job, "
                f"but {usage.describe()} spreads it over the jobs; drop one of them"
            )
        return f * terms.holding_months, per_busy_hour_full
    if usage.jobs_per_month is not None:
        return f / usage.jobs_per_month, per_busy_hour_full
    duty = usage.duty_cycle if usage.duty_cycle is not None else 1.0
    return 0.0, per_busy_hour_full / duty


def fixed_charge_usd(fixed_usd: float, usd_per_busy_hour: float, instances: int, hours: float) -> float:
    """The fixed costs one job carries: instances × max(fixed share, busy hours × hourly share)
    (charge_rates gives both; the larger is the binding one)."""
    return instances * max(fixed_usd, usd_per_busy_hour * hours)
