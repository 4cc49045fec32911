"""Batch data: shared resources, jobs with their candidate rows on the grid, and the results."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from optimizer.errors import ConfigError, Status
from optimizer.inputs.jobs.batch import BatchJob
from optimizer.pricing.offering import Offering, cost_usd
from optimizer.pricing.offerings import flag_notes
from optimizer.solve.batch.grid import TimeGrid, choose_time_grid
from optimizer.solve.cpsat.scale import to_cents, within_scale
from optimizer.solve.train.enumerate import Candidate
from optimizer.solve.train.figures import PlanFigures

__all__ = [
    "EPS_H",
    "RESOURCE_KINDS",
    "Resource",
    "resource_usage",
    "JobSpec",
    "Row",
    "JobRows",
    "BatchProblem",
    "choice_cost_cents",
    "ScheduledJob",
    "Fix",
    "Explanation",
    "ProgressEvent",
    "BatchResult",
]

EPS_H = 1e-6  # hours: tolerance on times when plans are checked in continuous time
#: quota = max GPUs rented at once; owned = boxes we have; reservation = sized by the solver
RESOURCE_KINDS = ("quota", "owned", "reservation")


# ---- problem ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Resource:
    """Something jobs share over time, with what a row of an offering demands of it.

    kind "quota": cloud rows of (provider, gpu_id[, region]) demand their GPUs;
    kind "owned" / "reservation": rows of the offering `offering_key` demand their instances.
    A reservation's capacity is the number reserved, R ∈ [0, capacity], chosen by the solver;
    its `commitment` offering prices R instances with `cost_usd(commitment, R, commitment_h)`
    (paid whether used or not, so apart from the jobs, whose rows on it cost nothing more).
    """

    key: str
    kind: str  # one of RESOURCE_KINDS
    label: str
    capacity: int
    unit: str  # GPUs | boxes | instances
    provider: str = ""
    gpu_id: str = ""
    region: str | None = None
    offering_key: str = ""
    commitment: Offering | None = None  # reservation: the reserved instance at its price
    commitment_h: float = 0.0  # hours billed when the term is not (the planning horizon)
    #: a capacity block ([[capacity.block]]): rows on it run only inside [from_h, to_h]
    window_h: tuple[float, float] | None = None

    def demand(self, offering: Offering, instances: int) -> int:
        """What `instances` of `offering` take of this resource (0: not this resource)."""
        if self.kind == "quota":
            hit = (
                offering.kind == "cloud"
                and offering.provider == self.provider
                and offering.gpu_id == self.gpu_id
                and (self.region is None or offering.region == self.region)
            )
            return instances * offering.gpus_per_instance if hit else 0
        return instances if offering.key == self.offering_key else 0

    def commitment_usd_for(self, instances: int) -> float:
        """What reserving `instances` costs (0 for quotas and owned boxes)."""
        if self.commitment is None:
            return 0.0
        return cost_usd(self.commitment, instances, self.commitment_h).total_usd

    @property
    def commitment_usd(self) -> float:
        """The commitment of one reserved instance."""
        return self.commitment_usd_for(1)

    @property
    def commitment_cents(self) -> int:
        return to_cents(self.commitment_usd)


def resource_usage(candidate: Candidate, resources: Iterable[Resource]) -> tuple[tuple[str, int], ...]:
    """(resource key, demand) of every resource a candidate row uses."""
    out = []
    for r in resources:
        d = r.demand(candidate.offering, candidate.instances)
        if d:
            out.append((r.key, d))
    return tuple(out)


@dataclass
class JobSpec:
    """One job of a batch as the solver sees it (times in hours from the horizon start).

    Each candidate's `cost_usd` is `optimizer.pricing.offering.cost_usd` of its offering,
    instances and hours (the single-job enumeration prices it; validate_batch re-checks).
    """

    name: str
    candidates: Sequence[Candidate]
    release_h: float = 0.0
    deadline_h: float | None = None
    penalty_usd: float | None = None  # None: must run; else droppable at this penalty
    priority: int = 0
    budget_usd: float | None = None
    job: BatchJob | None = None  # the job as written, for the report (tokens) and names
    model_name: str = ""
    rejected: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Row:
    """A candidate on the grid: its cost in cents, duration in steps, demand per resource."""

    candidate: Candidate
    cost_cents: int
    duration: int
    usage: tuple[tuple[str, int], ...]
    #: the row's own window in steps (a capacity block's [start, end]); the job's window
    #: intersected with it is where the row may run (JobRows.bounds)
    earliest: int = 0
    latest: int | None = None


@dataclass
class JobRows:
    """A job with its rows: every row fits [release, horizon]; `due` = min(deadline, horizon)."""

    spec: JobSpec
    rows: list[Row]
    release: int
    due: int

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def penalty_cents(self) -> int | None:
        return None if self.spec.penalty_usd is None else to_cents(self.spec.penalty_usd)

    def bounds(self, row: Row, due: int | None = None) -> tuple[int, int]:
        """[earliest start, latest end] of `row`: the job's [release, due] (or `due` given, a
        relaxed deadline) intersected with the row's own window (a capacity block's)."""
        end = self.due if due is None else due
        return max(self.release, row.earliest), end if row.latest is None else min(end, row.latest)

    def start_range(self, row: Row, due: int | None = None) -> tuple[int, int]:
        """[first, last] start step of `row` within its bounds (last < first: it cannot fit)."""
        low, high = self.bounds(row, due)
        return low, high - row.duration

    def fits(self, row: Row, due: int | None = None) -> bool:
        """The row fits its bounds (`due` as in `bounds`)."""
        low, high = self.bounds(row, due)
        return low + row.duration <= high


def _pareto(rows: list[Row]) -> list[Row]:
    """Rows no other row of the same resources beats on cost, duration and every demand.

    A dominating row fits inside the dominated row's interval with less demand, so it can
    replace it in any schedule at no extra cost: the optimum is unchanged.
    """
    groups: dict[tuple[str, ...], list[Row]] = {}
    for r in rows:
        groups.setdefault(tuple(k for k, _ in r.usage), []).append(r)
    kept: list[Row] = []
    for group in groups.values():
        group.sort(key=lambda r: (r.cost_cents, r.duration, [d for _, d in r.usage]))
        mine: list[Row] = []
        for r in group:
            if not any(
                o.cost_cents <= r.cost_cents
                and o.duration <= r.duration
                and all(a[1] <= b[1] for a, b in zip(o.usage, r.usage, strict=False))
                for o in mine
            ):
                mine.append(r)
        kept.extend(mine)
    return kept


@dataclass
class BatchProblem:
    """Jobs with their rows, the shared resources, and the time grid."""

    jobs: list[JobRows]
    resources: dict[str, Resource]
    grid: TimeGrid
    horizon_h: float
    name: str = "batch"
    enumerate_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def horizon(self) -> int:
        return self.grid.down(self.horizon_h)

    @classmethod
    def build(
        cls,
        specs: Sequence[JobSpec],
        resources: Sequence[Resource],
        horizon_h: float,
        grid: TimeGrid | None = None,
        name: str = "batch",
    ) -> BatchProblem:
        """Put candidates on the grid, drop rows that cannot fit [release, horizon] or exceed
        the job's budget, and prune dominated rows.

        Raises:
            ConfigError: duplicate job names, or a release time past the horizon.
        """
        grid = grid or choose_time_grid(horizon_h)
        horizon = grid.down(horizon_h)
        names = [s.name for s in specs]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ConfigError(f"job names must be unique; repeated: {', '.join(sorted(dup))}")
        jobs: list[JobRows] = []
        for s in specs:
            release = grid.up(s.release_h)
            if release >= horizon:
                raise ConfigError(
                    f"job {s.name!r}: release at hour {s.release_h:g} is not "
                    f"before the horizon ({horizon_h:g} h)"
                )
            due = horizon if s.deadline_h is None else min(horizon, grid.down(s.deadline_h))
            rows = []
            for c in s.candidates:
                if s.budget_usd is not None and c.cost_usd > s.budget_usd:
                    continue
                if not within_scale(c.cost_usd, c.hours):  # past the solver's integers: never chosen
                    continue
                d = max(1, grid.up(c.hours))
                usage = resource_usage(c, resources)
                low, high = _row_window(grid, usage, resources, horizon)
                if max(release, low) + d <= high:
                    rows.append(Row(c, to_cents(c.cost_usd), d, usage, low, high))
            jobs.append(JobRows(s, _pareto(rows), release, due))
        return cls(jobs, {r.key: r for r in resources}, grid, horizon_h, name)


def _row_window(
    grid: TimeGrid, usage: tuple[tuple[str, int], ...], resources: Sequence[Resource], horizon: int
) -> tuple[int, int]:
    """[earliest start, latest end] in steps of a row on `usage`: the horizon, narrowed to the
    window of every capacity block it runs on (start rounded up, end down: inside the block)."""
    low, high = 0, horizon
    used = {k for k, _ in usage}
    for r in resources:
        if r.key in used and r.window_h is not None:
            low, high = max(low, grid.up(r.window_h[0])), min(high, grid.down(r.window_h[1]))
    return low, high


def choice_cost_cents(
    problem: BatchProblem, chosen: Sequence[int | None], reserved: Mapping[str, int]
) -> int:
    """Cents of a choice of rows: rows, dropped jobs' value, reservation commitments."""
    total = sum(problem.resources[k].commitment_cents * n for k, n in reserved.items())
    for job, i in zip(problem.jobs, chosen, strict=True):
        total += job.rows[i].cost_cents if i is not None else (job.penalty_cents or 0)
    return total


# ---- results ------------------------------------------------------------------------------


@dataclass
class ScheduledJob:
    """A job's place in the plan: its row and start step (row None: dropped)."""

    job: JobRows
    row: Row | None
    start: int | None
    unit_h: float = 1.0  # hours per grid step

    @property
    def name(self) -> str:
        return self.job.name

    @property
    def start_h(self) -> float | None:
        return None if self.start is None else self.start * self.unit_h

    @property
    def end_h(self) -> float | None:
        """Actual finish: start + the candidate's hours (≤ the booked slot end)."""
        if self.row is None or self.start_h is None:
            return None
        return self.start_h + self.row.candidate.hours

    @property
    def slot_end_h(self) -> float | None:
        """End of the booked slot: start + duration rounded up to whole steps."""
        if self.row is None or self.start is None:
            return None
        return (self.start + self.row.duration) * self.unit_h


@dataclass
class Fix:
    """One way out of an infeasible batch: relax one requirement by as little as possible."""

    requirement: str
    change: str
    total_cost_usd: float
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class Explanation:
    """Why a batch is infeasible: the requirements in conflict and the fixes found."""

    conflict: list[str]
    labels: list[str]
    message: str
    fixes: list[Fix] = field(default_factory=list)


@dataclass(frozen=True)
class ProgressEvent:
    """One improving solution: seconds since the solve began, objective and bound in USD."""

    wall_s: float
    objective_usd: float
    bound_usd: float


@dataclass
class BatchResult:
    """A solved batch: each job's row and start, the instances reserved, and how it went."""

    status: Status
    problem: BatchProblem
    jobs: list[ScheduledJob] = field(default_factory=list)
    reserved: dict[str, int] = field(default_factory=dict)
    explanation: Explanation | None = None
    solver: dict[str, Any] = field(default_factory=dict)
    catalog: dict[str, Any] | None = None  # source, as_of, age_days, path of the price tables
    progress: list[ProgressEvent] = field(default_factory=list)
    #: how the Benders decomposition went (rounds, cuts, proven, stopped); not in the JSON
    benders: dict[str, Any] = field(default_factory=dict)
    #: filled when the plan is validated (solve/batch/solve.py): the figures of each scheduled
    #: job's plan (solve/train/plan_figures.py), why it runs where it runs (placement.py), and
    #: each resource's [[from_h, to_h, level], ...] (usage.py)
    figures: dict[str, PlanFigures] = field(default_factory=dict)  # job name -> its plan's
    placements: dict[str, str] = field(default_factory=dict)
    usage: dict[str, list[list[float]]] = field(default_factory=dict)

    def _sum(self, kinds: tuple[str, ...]) -> float:
        return sum(
            s.row.candidate.cost_usd
            for s in self.jobs
            if s.row is not None and s.row.candidate.offering.kind in kinds
        )

    @property
    def cloud_usd(self) -> float:
        return self._sum(("cloud",))

    @property
    def owned_usd(self) -> float:
        return self._sum(("owned", "buy"))

    @property
    def reservation_usd(self) -> float:
        return sum(self.problem.resources[k].commitment_usd_for(n) for k, n in self.reserved.items())

    @property
    def dropped_value_usd(self) -> float:
        return sum(s.job.spec.penalty_usd or 0.0 for s in self.jobs if s.row is None)

    @property
    def total_cost_usd(self) -> float:
        """Money spent: cloud + owned (power, capital if charged) + reservation commitments."""
        return sum(s.row.candidate.cost_usd for s in self.jobs if s.row is not None) + self.reservation_usd

    @property
    def notes(self) -> list[str]:
        """What a buyer should double-check: the problem's notes, then the price flags of the
        offerings the plan uses."""
        used = (s.row.candidate.offering for s in self.jobs if s.row is not None)
        return self.problem.notes + flag_notes(used)
