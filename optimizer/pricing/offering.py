"""`Offering` (what one can run on) and the one cost formula every planner prices with.

A cloud instance, an owned box or a box to buy is an `Offering`; `cost_usd` prices instances
for some wall-clock hours (training and batch jobs) and `hourly_usd` gives the same prices as a
rate per instance-hour (serving, where the fleet runs every served hour). No planner sums
prices itself: a price rule changed here changes every planner.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from optimizer.model.hardware import GpuSpec
from optimizer.model.step_time import Cluster
from optimizer.pricing.data_cost import NO_DATA, DataCharge
from optimizer.pricing.ownership import NO_USAGE, OwnershipTerms, Usage, fixed_charge_usd
from optimizer.pricing.sanity import PriceFlag, price_max_age_days
from optimizer.pricing.terms import NO_TERMS, OfferingTerms, billed_hours

__all__ = ["Offering", "Cost", "cost_usd", "hourly_usd", "OFFERING_KINDS"]

#: cloud = rented by the hour; owned = a box we have (power, + capital if charged);
#: buy = a box we would buy; reserved = a batch-level reservation (its term is billed apart)
OFFERING_KINDS = ("cloud", "owned", "buy", "reserved")


@dataclass(frozen=True)
class Offering:
    """Something one can run on: a priced cloud instance, an owned box, or a box to buy."""

    key: str
    kind: str  # one of OFFERING_KINDS
    provider: str
    instance: str
    region: str
    pricing: str  # on_demand | spot | reserved_1y | reserved_3y | owned | buy
    gpu: GpuSpec
    gpus_per_instance: int
    inter_node_gbps: float
    usd_per_hour: float  # cloud: per instance-hour; owned/buy: power per busy box-hour
    max_instances: int | None = None
    commitment_hours: float = 0.0  # a reserved term billed in full (0: billed per hour used)
    #: a box's fixed costs (net capital + ops fee) one job carries: the larger of this share per
    #: job and the hourly share × busy hours (pricing/ownership.charge_rates derives both)
    capital_usd_per_instance: float = 0.0
    capital_usd_per_instance_hour: float = 0.0
    spot_overhead: float = 0.0  # extra wall time for preemptions (the fixed, old spot rule)
    #: spot: interruptions per instance-day (pricing/spot.py); None: the fixed spot_overhead
    spot_interruptions_per_day: float | None = None
    spot_rate_source: str = ""  # where that rate comes from ("GUESS", a source, "job")
    box_net_price_usd: float = 0.0  # owned/buy: purchase price − resale of one box
    amortisation_hours: float = 0.0  # owned/buy: hours the net price is spread over
    inter_node_kind: str = "ethernet"  # infiniband | efa | ethernet | rdma | none
    inter_node_is_default: bool = False  # the bandwidth is a documented guess, not published
    #: price-sanity flags of the catalog row (pricing/sanity.py); () for owned/buy boxes
    flags: tuple[PriceFlag, ...] = ()
    #: the host of one instance (None = unknown): vCPUs, RAM, local NVMe/SSD
    vcpus: float | None = None
    ram_gib: float | None = None
    local_nvme_gb: float | None = None
    #: what this job's data costs here (moved once, stored while running); per job
    data: DataCharge = NO_DATA
    #: owned/buy: what owning one box costs and the workload its fixed costs are spread over
    ownership: OwnershipTerms | None = None
    usage: Usage = NO_USAGE
    #: where the price comes from: bundled, refreshed, file, overlay (schema.PRICE_ORIGINS);
    #: "hardware" for owned / bought boxes (priced from their specs)
    price_origin: str = "hardware"
    price_as_of: dt.date | None = None  # the date of the price (None: a box's specs)
    price_note: str = ""  # what the user's prices changed, e.g. "on_demand 30% off (prices.toml)"
    catalog_usd_per_hour: float | None = None  # the catalog price before the user's prices
    #: the seller's terms (pricing/terms.py): minimum term, billing increment, block length,
    #: node range; NO_TERMS = billed per hour used
    terms: OfferingTerms = NO_TERMS

    def price_info(self, today: dt.date | None = None, max_age_days: int | None = None) -> dict[str, Any]:
        """Source, date and age of this offering's price (the `price` block of a plan line).

        `stale` is true when the price is older than `max_age_days` (default
        sanity.price_max_age_days(): a GUESS of 90 days, overridable).
        """
        limit = price_max_age_days() if max_age_days is None else max_age_days
        age = None if self.price_as_of is None else ((today or dt.date.today()) - self.price_as_of).days
        return {
            "source": self.price_origin,
            "as_of": None if self.price_as_of is None else self.price_as_of.isoformat(),
            "age_days": age,
            "stale": age is not None and age > limit,
            "max_age_days": limit,
            "note": self.price_note,
            "catalog_usd_per_hour": self.catalog_usd_per_hour,
        }

    @property
    def gpu_id(self) -> str:
        return self.gpu.gpu_id

    @property
    def hardware_class(self) -> tuple[str, float, int, float]:
        """Offerings of one class have identical performance (only prices differ)."""
        return (self.gpu.gpu_id, self.gpu.intra_node_bw_gb_s, self.gpus_per_instance, self.inter_node_gbps)

    def cluster(self, instances: int) -> Cluster:
        """The hardware `instances` of this offering give a layout (one definition, used by the
        planners and by `estimate --instance`)."""
        return Cluster(self.gpu, self.gpus_per_instance, instances, self.inter_node_gbps)

    def usd_per_hour_for(self, instances: int, hours: float | None = None) -> float:
        """USD per wall-clock hour of `instances` while running (price + capital); with `hours`,
        the capital share of a job that long (owned boxes: its share of their fixed costs)."""
        if hours is None or hours <= 0:
            return (self.usd_per_hour + self.capital_usd_per_instance_hour) * instances
        cost = cost_usd(self, instances, hours)
        return (cost.running_usd + cost.capital_usd) / hours


@dataclass(frozen=True)
class Cost:
    """What a job costs on an offering, split as the plan reports it (USD)."""

    running_usd: float  # instance-hours (or the whole reserved term), power of owned boxes
    capital_usd: float  # purchase (upfront, net of resale) or amortised capital
    data_usd: float = 0.0  # dataset transfer + dataset and checkpoint storage (Offering.data)
    #: the hours `running_usd` pays for (the term, rounded, or the run); not part of equality
    billed_hours: float = field(default=0.0, compare=False)

    @property
    def total_usd(self) -> float:
        return self.running_usd + self.capital_usd + self.data_usd


def cost_usd(offering: Offering, instances: int, hours: float) -> Cost:
    """Cost of running `instances` of `offering` for `hours` wall-clock hours.

    running = usd_per_hour × instances × billed hours: `hours` rounded up to the offering's
    billing increment and at least its minimum term (pricing/terms.py: a 5.8-day job on weekly
    billing pays 7 days, a capacity block its whole length), or commitment_hours for a reserved
    term that bills every hour whatever is used; capital = instances × max(fixed share per job, hourly
    share × hours) of the box's net capital and ops fee (pricing/ownership.py, at the workload
    the box really does);
    data = the job's data charge over `hours` (pricing/data_cost.py: one transfer + storage).
    """
    billed_h = offering.commitment_hours or billed_hours(offering.terms, hours)
    running = offering.usd_per_hour * instances * billed_h
    capital = fixed_charge_usd(
        offering.capital_usd_per_instance, offering.capital_usd_per_instance_hour, instances, hours
    )
    return Cost(running, capital, offering.data.usd(hours), billed_h)


def hourly_usd(offering: Offering) -> tuple[float, float]:
    """(running, fixed) USD per instance-hour, for a fleet that runs every served hour.

    running is paid per hour used (on-demand, spot, power); fixed is paid every hour of the
    day whether used or not: a reserved term's rate, and capital amortised straight-line over
    `amortisation_hours` (an upfront purchase is spread the same way, since an hourly
    objective needs an hourly capital charge).
    """
    if offering.commitment_hours:
        return 0.0, offering.usd_per_hour
    fixed = offering.capital_usd_per_instance_hour
    if offering.capital_usd_per_instance and offering.amortisation_hours:
        fixed = max(fixed, offering.capital_usd_per_instance / offering.amortisation_hours)
    return offering.usd_per_hour, fixed
