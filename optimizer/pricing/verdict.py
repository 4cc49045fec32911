"""The one rent-or-buy verdict: a job's best cloud plan against owning its boxes, at equal work
(the same jobs a month over the holding period), with the cost per job of owned boxes
(pricing/ownership.py prices a box; `compare`, `plan` and the report state this answer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from optimizer.pricing.ownership import OwnershipTerms, Usage, charge_rates, fixed_charge_usd
from optimizer.units import HOURS_PER_MONTH

__all__ = ["UTILISATION_TABLE", "OwnCost", "own_cost_per_job", "AtUtilisation", "Verdict", "rent_or_buy"]

#: the utilisations `compare` and the report tabulate rent vs own at (issue 28)
UTILISATION_TABLE = (0.10, 0.25, 0.50, 1.00)


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
