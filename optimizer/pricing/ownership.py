"""Owning boxes at the work they will really do: the cost per job and the one rent-or-buy verdict.

A box's fixed costs (net capital spread straight-line over the holding period, plus any
host/colocation/ops fee a month) are paid every month whether it runs or not; the jobs that use
it carry them all (idle capital is charged to the jobs). Power is paid only while busy. Every
planner prices a box through `fixed_charge_usd` (via `offering.cost_usd`), and `compare`,
`plan` and the report state the answer through `rent_or_buy`: one formula, one verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from optimizer.errors import ConfigError
from optimizer.units import HOURS_PER_MONTH

__all__ = [
    "UTILISATION_TABLE",
    "Usage",
    "NO_USAGE",
    "OwnershipTerms",
    "charge_rates",
    "fixed_charge_usd",
    "OwnCost",
    "own_cost_per_job",
    "AtUtilisation",
    "Verdict",
    "rent_or_buy",
]

#: the utilisations `compare` and the report tabulate rent vs own at (issue 28)
UTILISATION_TABLE = (0.10, 0.25, 0.50, 1.00)


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


@dataclass(frozen=True)
class OwnCost:
    """One job on owned boxes: its share of their fixed costs and its power, USD."""

    boxes: int
    job_hours: float
    jobs_per_month: float  # jobs a month the boxes do (capped at back to back)
    utilisation: float  # busy share of the month
    fixed_usd: float  # net capital + ops fee, this job's share
    power_usd: float

    @property
    def total_usd(self) -> float:
        return self.fixed_usd + self.power_usd


def own_cost_per_job(terms: OwnershipTerms, boxes: int, job_hours: float, usage: Usage) -> OwnCost:
    """What one job costs on `boxes` owned boxes at `usage` (charge_rates + fixed_charge_usd,
    plus power × boxes × hours)."""
    fixed, hourly = charge_rates(terms, usage)
    jobs = (1 / terms.holding_months) if terms.upfront else usage.jobs_per_month_for(job_hours)
    return OwnCost(
        boxes=boxes,
        job_hours=job_hours,
        jobs_per_month=jobs,
        utilisation=jobs * job_hours / HOURS_PER_MONTH,
        fixed_usd=fixed_charge_usd(fixed, hourly, boxes, job_hours),
        power_usd=terms.power_usd_per_hour * boxes * job_hours,
    )


@dataclass(frozen=True)
class AtUtilisation:
    """Rent vs own at one utilisation of the boxes (equal work: the same jobs a month)."""

    utilisation: float
    jobs_per_month: float
    rent_usd_per_job: float
    own_usd_per_job: float
    rent_usd_per_month: float
    own_usd_per_month: float

    @property
    def choice(self) -> str:
        return "own" if self.own_usd_per_job < self.rent_usd_per_job else "rent"


@dataclass(frozen=True)
class Verdict:
    """Rent the best cloud plan or own the boxes, at equal work over the holding period."""

    choice: str  # "rent" | "own"
    usage: str  # where the workload comes from (Usage.describe)
    utilisation: float  # busy share of the month assumed
    jobs_per_month: float  # jobs a month at that utilisation
    holding_months: float
    rent_usd_per_job: float
    own_usd_per_job: float
    own_fixed_usd_per_job: float  # capital + ops share
    own_power_usd_per_job: float  # power + the job's data on the boxes
    rent_usd_per_month: float
    own_usd_per_month: float
    rent_usd_holding: float  # the workload over the holding period, rented
    own_usd_holding: float  # ... owned: net capital + ops fee + running
    net_capital_usd: float
    #: break-even at the user's rate (null: owning never catches up with renting)
    break_even_jobs: float | None
    break_even_months: float | None
    break_even_jobs_per_month: float  # the rate behind break_even_months
    #: the utilisation at which the answer flips (null: renting is cheaper at any use; > 1:
    #: owning never wins, even back to back)
    flip_utilisation: float | None
    table: tuple[AtUtilisation, ...]
    own_hours: float
    rent_hours: float
    saturated: bool  # the stated jobs a month exceed what the boxes can do back to back


def rent_or_buy(
    terms: OwnershipTerms,
    boxes: int,
    own_hours: float,
    own_running_usd: float,
    rent_usd_per_job: float,
    rent_hours: float,
    usage: Usage,
    utilisations: Sequence[float] = UTILISATION_TABLE,
) -> Verdict:
    """The cheaper of renting (`rent_usd_per_job`, the best cloud plan) and owning `boxes` boxes
    (fixed costs shared by the jobs a month + `own_running_usd` per job: power and data), for the
    same jobs a month over the holding period.

    With F = fixed costs a month of the boxes, P = running per owned job, R = rent per job,
    n = jobs a month: own per job = F / n + P (own_cost_per_job); owning wins iff F / n + P < R.
    Break-even: cumulative own (net capital + (ops + n P) t) = cumulative rent (n R t) at
    t = net capital / (n (R − P) − ops) months, i.e. n t jobs (upfront: n = back to back).
    Flip: n* = F / (R − P) jobs a month, utilisation n* × own hours ÷ 730 h.
    """
    own = own_cost_per_job(terms, boxes, own_hours, usage)
    running = own_running_usd
    n = own.jobs_per_month
    fixed_month = boxes * terms.fixed_usd_per_month if terms.charged else 0.0
    capital = boxes * terms.net_capital_usd if terms.charged else 0.0
    ops_month = boxes * terms.ops_usd_per_month if terms.charged else 0.0
    own_per_job = own.fixed_usd + running
    months = terms.holding_months
    # upfront: the job alone pays, but the break-even months are at back to back (no rate stated)
    be_rate = usage.jobs_per_month_for(own_hours) if terms.upfront else n
    margin = be_rate * (rent_usd_per_job - running) - ops_month  # saved a month before capital
    be_months = capital / margin if margin > 0 else None
    saving = rent_usd_per_job - running
    flip = (fixed_month / saving) * own_hours / HOURS_PER_MONTH if saving > 0 else None

    def at(u: float) -> AtUtilisation:
        jobs = u * HOURS_PER_MONTH / own_hours
        own_job = fixed_month / jobs + running
        return AtUtilisation(u, jobs, rent_usd_per_job, own_job, rent_usd_per_job * jobs, own_job * jobs)

    choice = "own" if own_per_job < rent_usd_per_job else "rent"
    return Verdict(
        choice=choice,
        usage="accounting = upfront: this job alone pays for the boxes"
        if terms.upfront
        else usage.describe(),
        utilisation=own.utilisation,
        jobs_per_month=n,
        holding_months=months,
        rent_usd_per_job=rent_usd_per_job,
        own_usd_per_job=own_per_job,
        own_fixed_usd_per_job=own.fixed_usd,
        own_power_usd_per_job=running,
        rent_usd_per_month=rent_usd_per_job * n,
        own_usd_per_month=own_per_job * n,
        rent_usd_holding=rent_usd_per_job * n * months,
        own_usd_holding=own_per_job * n * months,
        net_capital_usd=capital,
        break_even_jobs=None if be_months is None else be_months * be_rate,
        break_even_months=be_months,
        break_even_jobs_per_month=be_rate,
        flip_utilisation=flip,
        table=tuple(at(u) for u in utilisations),
        own_hours=own_hours,
        rent_hours=rent_hours,
        saturated=usage.jobs_per_month is not None and usage.jobs_per_month > n * (1 + 1e-9),
    )
