"""A mixed cluster's plan: its rows (instances of one instance type × pricing model, with the
layout its GPUs run) and the one cost function that prices them (mix/search.py builds them,
mix/check.py re-derives them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from optimizer.model.cluster import StepTime
from optimizer.model.preemption import Preemption
from optimizer.model.setup import Layout
from optimizer.pricing.offering import Offering, cost_usd

__all__ = ["MixRow", "MixPlan", "mix_cost_usd"]


@dataclass(frozen=True)
class MixRow:
    """Instances of one (instance type, pricing model) in a mix, and how its GPUs run."""

    offering: Offering
    count: int
    layout: Layout
    step: StepTime
    held: bool = False

    @property
    def gpus(self) -> int:
        return self.count * self.offering.gpus_per_instance


@dataclass(frozen=True)
class MixPlan:
    """A mixed cluster: its rows, the (balanced) step, wall hours and cost at the confidence."""

    kind: str  # "pricing" (one instance type) | "gpu_types" (two types on one fabric)
    rows: tuple[MixRow, ...]
    step_time_s: float
    steps: int
    hours: float
    cost_usd: float
    global_batch: int
    fabric: str
    confidence: float | None = None
    band_factor: float = 1.0
    spot: Preemption | None = None
    #: per type label: the share of each step its GPUs wait for the slowest type
    idle_share: dict[str, float] = field(default_factory=dict)

    @property
    def gpus(self) -> int:
        return sum(r.gpus for r in self.rows)

    @property
    def instances(self) -> int:
        return sum(r.count for r in self.rows)


def mix_cost_usd(rows: Sequence[MixRow], hours: float) -> float:
    """A mix's cost: each row priced by the one cost function (pricing/offering.cost_usd) for
    the wall hours, the job's data charge once (every row carries the same one)."""
    total = 0.0
    for r in rows:
        c = cost_usd(r.offering, r.count, hours)
        total += c.running_usd + c.capital_usd
    return total + rows[0].offering.data.usd(hours)
