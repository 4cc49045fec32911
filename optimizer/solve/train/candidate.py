"""A row of the single-job candidate table (one offering × instance count × layout) and the
table with the reasons hardware classes were rejected."""

from __future__ import annotations

from dataclasses import dataclass, field

from optimizer.model.bands import Band
from optimizer.model.goodput import Goodput
from optimizer.model.memory import MemoryBreakdown
from optimizer.model.preemption import Preemption
from optimizer.model.setup import Layout, TrainingSetup
from optimizer.model.step_time import StepTime
from optimizer.pricing.offering import Offering
from optimizer.solve.train.figures import PlanFigures
from optimizer.solve.train.host_check import HostCheck

__all__ = ["Candidate", "CandidateTable"]


@dataclass(frozen=True)
class Candidate:
    """One row of the table the solver picks from."""

    offering: Offering
    instances: int
    layout: Layout
    memory: MemoryBreakdown
    step: StepTime
    steps: int
    hours: float
    cost_usd: float
    capital_usd: float = 0.0
    setup: TrainingSetup | None = None  # the options chosen ([search]); None: the job's
    host: HostCheck | None = None  # loader rate, host RAM, local disk of this candidate
    spot: Preemption | None = None  # spot rows: the interruption estimate behind `hours`
    #: the step-time band of this row (optimizer/model/bands.py) and the quantile `hours` and
    #: `cost_usd` are planned at (None: the model's point prediction); `band_factor` is the
    #: multiplier of the step time that quantile applied (1 at the point)
    band: Band | None = None
    confidence: float | None = None
    band_factor: float = 1.0
    #: where `hours` go: compute, checkpoints, failures and restarts, start-up
    #: (optimizer/model/goodput.py); None: a hand-made row whose hours are compute only
    goodput: Goodput | None = None
    #: what the report shows of a planned row (solve/train/plan_figures.with_figures attaches it
    #: to the plans a result returns; None on the rows of the table); not part of equality
    figures: PlanFigures | None = field(default=None, compare=False, repr=False)

    @property
    def gpus(self) -> int:
        return self.instances * self.offering.gpus_per_instance

    @property
    def usd_per_hour(self) -> float:
        return self.offering.usd_per_hour_for(self.instances, self.hours)


@dataclass
class CandidateTable:
    candidates: list[Candidate]
    rejected: dict[str, str] = field(default_factory=dict)  # hardware class -> reason
    #: offerings slowed to their loader rate -> "32 vCPUs load 3,720 img/s, 8 GPUs need 9,800"
    slowed: dict[str, str] = field(default_factory=dict)
    #: some instance count was skipped because it cannot meet the deadline
    pruned_by_deadline: bool = False
