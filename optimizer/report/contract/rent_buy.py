"""The JSON contract of rent or buy: the one verdict (plan, compare, report) and the break-even."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from optimizer.report.contract.common import Contract

__all__ = ["AtUtilisationOut", "RentOrBuyOut", "BreakEvenOut"]


class AtUtilisationOut(Contract):
    """Rent vs own at one utilisation of the boxes, the same jobs a month either way."""

    utilisation: float = Field(description="busy share of the month, 0-1")
    jobs_per_month: float
    rent_usd_per_job: float
    own_usd_per_job: float
    rent_usd_per_month: float
    own_usd_per_month: float
    cheaper: Literal["rent", "own"]


class RentOrBuyOut(Contract):
    """Rent the best cloud plan or own the boxes, at equal work over the holding period."""

    verdict: Literal["rent", "own"]
    summary: str = Field(description="the verdict in one sentence")
    usage: str = Field(description="where the workload comes from (jobs_per_month, duty_cycle or none)")
    utilisation: float = Field(description="busy share of the month the boxes are assumed to run, 0-1")
    jobs_per_month: float = Field(description="jobs a month at that utilisation (both sides)")
    holding_months: float = Field(description="the boxes are sold at the end (amortisation_months)")
    rent_plan: str = Field(description="the best cloud plan, in words")
    rent_gpu: str
    rent_hours: float
    rent_usd_per_job: float
    rent_usd_per_month: float
    rent_usd_over_holding: float
    own_plan: str = Field(description="the boxes, in words")
    own_gpu: str
    own_hours: float
    own_usd_per_job: float = Field(description="capital and ops share + running")
    own_capital_usd_per_job: float = Field(
        description="(net capital ÷ holding months + ops fee a month) ÷ jobs a month"
    )
    own_running_usd_per_job: float = Field(description="power × PUE while running (+ the job's data)")
    own_usd_per_month: float
    own_usd_over_holding: float
    net_capital_usd: float = Field(description="purchase − resale at the end of the holding period")
    break_even_jobs: float | None = Field(description="null: owning never catches up with renting")
    break_even_months: float | None = Field(description="at break_even_jobs_per_month; null: never")
    break_even_jobs_per_month: float = Field(
        description="the rate behind break_even_months: jobs_per_month (upfront: back to back)"
    )
    flip_utilisation: float | None = Field(
        description="the utilisation at which the verdict flips (> 1: owning never wins; null: "
        "renting is cheaper at any use)"
    )
    flip_jobs_per_month: float | None
    saturated: bool = Field(description="the stated jobs a month exceed what the boxes do back to back")
    by_utilisation: list[AtUtilisationOut] = Field(description="rent vs own at 10%, 25%, 50%, 100%")


class BreakEvenOut(Contract):
    """When owning the boxes beats renting one cloud plan, at equal work."""

    gpu: str | None = Field(default=None, description="GPU type of the cloud plan compared")
    cloud_plan: str | None = Field(default=None, description="the cloud plan, in words")
    net_capital_usd: float = Field(description="purchase − resale value")
    power_usd_per_job: float = Field(description="running cost of one job on the boxes (power, data)")
    cloud_usd_per_job: float
    jobs_to_break_even: float | None = Field(description="null: buying never pays off")
    months_to_break_even: float | None = Field(
        description="at constraints.jobs_per_month (or duty_cycle), else jobs back to back"
    )
    months_continuous: float | None = Field(
        default=None, description="break-even with the boxes busy 100% (jobs back to back, equal work)"
    )
    jobs_per_month: float | None = Field(
        default=None,
        description="the rate behind months_to_break_even: constraints.jobs_per_month (capped at "
        "back to back), duty_cycle × back to back, else jobs back to back on the boxes",
    )
    verdict: RentOrBuyOut | None = Field(default=None, description="rent this plan or own, at equal work")
    note: str
