"""Batch planner: many jobs on shared quotas, owned boxes and sized reservations (CP-SAT).

Model (one builder per constraint family, over the `_Vars` container):

* **choice** — per job exactly one candidate row, or the drop literal of a droppable job
  (``add_exactly_one``); rows come from the single-job enumeration, pruned first (rows that
  cannot fit [release, horizon]; rows another row of the same resources beats on cost,
  duration and demand; of the rows on unlimited cloud only the cheapest that meets the
  deadline, since they interact with nothing).
* **windows** — one start variable per job on a coarse time grid; each chosen row's interval
  [start, start + duration) lies within [release, min(deadline, horizon)].
* **capacity** — ``add_cumulative`` per shared resource over the optional intervals of the
  rows that use it: owned boxes (demand = boxes), cloud quotas (demand = GPUs), and sized
  reservations (capacity = the reserved instance count R, a variable).
* **objective** — integer cents: Σ row cost (cloud rent, power of owned boxes) + Σ R ×
  commitment per reserved instance + Σ value of dropped jobs. A second, short phase fixes the
  rows and R (so the cost) and moves every job as early as it can (``left_shift``).

Infeasible batches are explained with one assumption literal per deadline and per capacity
(CP-SAT ``sufficient_assumptions_for_infeasibility``), the core shrunk by deletion, and the
cheapest single fix found by re-solving with that one requirement relaxed by as little as
possible. ``validate_batch`` re-checks every answer in plain Python.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from optimizer.errors import ConfigError, SolverError, did_you_mean
from optimizer.pricing.offering import Offering
from optimizer.solve.train.enumerate import Candidate
from optimizer.solve.cpsat.scale import from_cents, to_cents
from optimizer.solve.cpsat.solver import SolverConfig, SolveResult, solve

__all__ = ["TIME_UNITS_MINUTES", "MAX_TIME_STEPS", "TimeGrid", "choose_time_grid", "Resource",
           "JobSpec", "Row", "JobRows", "BatchProblem", "ScheduledJob", "Fix", "Explanation",
           "ProgressEvent", "BatchResult", "solve_batch", "greedy_schedule", "left_shift",
           "build_model", "explain_infeasible", "build_problem", "plan_batch",
           "validate_batch", "batch_dict", "resource_usage"]

#: grid steps tried, finest first (minutes); the first giving ≤ MAX_TIME_STEPS steps is used
TIME_UNITS_MINUTES = (1, 5, 10, 15, 30, 60, 120, 180, 240, 360, 720, 1440)
#: CHOICE: at most 1500 steps over the horizon (a 30-day horizon → 30-min steps, 1440 steps).
#: CP-SAT propagates cumulatives over these domains; the CP-SAT primer shows solve times
#: exploding when time is scaled much finer. Cost of the coarseness, stated: every duration is
#: rounded up (a job may be booked < 1 step longer than it runs), releases rounded up and
#: deadlines rounded down, so a plan on the grid is always feasible in continuous time.
MAX_TIME_STEPS = 1500
EPS_H = 1e-6  # hours: tolerance of validate_batch on times


# ---- time grid ----------------------------------------------------------------------------

@dataclass(frozen=True)
class TimeGrid:
    """Integer time steps of `unit_h` hours (the one place batch times are scaled)."""

    unit_h: float

    def up(self, hours: float) -> int:
        """Steps covering `hours` (durations, release times), rounded up."""
        return int(math.ceil(round(hours / self.unit_h, 6)))

    def down(self, hours: float) -> int:
        """Whole steps within `hours` (deadlines, horizon), rounded down."""
        return int(math.floor(round(hours / self.unit_h, 6)))

    def hours(self, steps: int) -> float:
        return steps * self.unit_h


def choose_time_grid(horizon_h: float, max_steps: int = MAX_TIME_STEPS) -> TimeGrid:
    """The finest step of TIME_UNITS_MINUTES with ≤ `max_steps` steps over the horizon."""
    for minutes in TIME_UNITS_MINUTES:
        if horizon_h * 60.0 / minutes <= max_steps:
            return TimeGrid(minutes / 60.0)
    return TimeGrid(math.ceil(horizon_h / max_steps))


# ---- problem ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Resource:
    """Something jobs share over time, with what a row of an offering demands of it.

    kind "quota": cloud rows of (provider, gpu_id[, region]) demand their GPUs;
    kind "owned" / "reservation": rows of the offering `offering_key` demand their instances.
    A reservation's capacity is the number reserved, R ∈ [0, capacity], chosen by the solver
    at `commitment_usd` per reserved instance (paid whether used or not).
    """

    key: str
    kind: str  # quota | owned | reservation
    label: str
    capacity: int
    unit: str  # GPUs | boxes | instances
    provider: str = ""
    gpu_id: str = ""
    region: str | None = None
    offering_key: str = ""
    commitment_usd: float = 0.0

    def demand(self, offering: Offering, instances: int) -> int:
        """What `instances` of `offering` take of this resource (0: not this resource)."""
        if self.kind == "quota":
            hit = (offering.kind == "cloud" and offering.provider == self.provider
                   and offering.gpu_id == self.gpu_id
                   and (self.region is None or offering.region == self.region))
            return instances * offering.gpus_per_instance if hit else 0
        return instances if offering.key == self.offering_key else 0

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
    """One job of a batch as the solver sees it (times in hours from the horizon start)."""

    name: str
    candidates: Sequence[Candidate]
    release_h: float = 0.0
    deadline_h: float | None = None
    penalty_usd: float | None = None  # None: must run; else droppable at this penalty
    priority: int = 0
    budget_usd: float | None = None
    job: Any = None  # the BatchJob, for plan_dict (tokens) and names
    model_name: str = ""
    rejected: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Row:
    """A candidate on the grid: cost in cents, duration in steps, demand per resource."""

    candidate: Candidate
    cost_cents: int
    duration: int
    usage: tuple[tuple[str, int], ...]


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
            if not any(o.cost_cents <= r.cost_cents and o.duration <= r.duration
                       and all(a[1] <= b[1] for a, b in zip(o.usage, r.usage, strict=False)) for o in mine):
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
    def build(cls, specs: Sequence[JobSpec], resources: Sequence[Resource], horizon_h: float,
              grid: TimeGrid | None = None, name: str = "batch") -> BatchProblem:
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
                raise ConfigError(f"job {s.name!r}: release at hour {s.release_h:g} is not "
                                  f"before the horizon ({horizon_h:g} h)")
            due = horizon if s.deadline_h is None else min(horizon, grid.down(s.deadline_h))
            rows = []
            for c in s.candidates:
                if s.budget_usd is not None and c.cost_usd > s.budget_usd:
                    continue
                d = max(1, grid.up(c.hours))
                if release + d <= horizon:
                    rows.append(Row(c, to_cents(c.cost_usd), d, resource_usage(c, resources)))
            jobs.append(JobRows(s, _pareto(rows), release, due))
        return cls(jobs, {r.key: r for r in resources}, grid, horizon_h, name)


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
    status: str  # optimal | feasible | infeasible
    problem: BatchProblem
    jobs: list[ScheduledJob] = field(default_factory=list)
    reserved: dict[str, int] = field(default_factory=dict)
    explanation: Explanation | None = None
    solver: dict[str, Any] = field(default_factory=dict)
    progress: list[ProgressEvent] = field(default_factory=list)

    def _sum(self, kinds: tuple[str, ...]) -> float:
        return sum(s.row.candidate.cost_usd for s in self.jobs
                   if s.row is not None and s.row.candidate.offering.kind in kinds)

    @property
    def cloud_usd(self) -> float:
        return self._sum(("cloud",))

    @property
    def owned_usd(self) -> float:
        return self._sum(("owned", "buy"))

    @property
    def reservation_usd(self) -> float:
        return sum(n * self.problem.resources[k].commitment_usd for k, n in self.reserved.items())

    @property
    def dropped_value_usd(self) -> float:
        return sum(s.job.spec.penalty_usd or 0.0 for s in self.jobs if s.row is None)

    @property
    def total_cost_usd(self) -> float:
        """Money spent: cloud + owned (power, capital if charged) + reservation commitments."""
        return sum(s.row.candidate.cost_usd for s in self.jobs if s.row is not None) \
            + self.reservation_usd


# ---- model --------------------------------------------------------------------------------

HARD, ASSUME, MINIMISE = "hard", "assume", "minimise"


def _deadline_req(job: JobRows) -> str:
    return f"deadline:{job.name}"


def _capacity_req(key: str) -> str:
    return f"capacity:{key}"


@dataclass
class _Vars:
    """Variables of one CP-SAT model of a batch (rows[j] are indices into jobs[j].rows)."""

    model: Any
    rows: list[list[int]] = field(default_factory=list)
    x: list[list[Any]] = field(default_factory=list)
    drop: list[Any] = field(default_factory=list)
    start: list[Any] = field(default_factory=list)
    reserve: dict[str, Any] = field(default_factory=dict)
    capacity: dict[str, Any] = field(default_factory=dict)  # relaxed capacity variables
    lateness: dict[int, Any] = field(default_factory=dict)
    literal: dict[str, Any] = field(default_factory=dict)  # requirement -> assumption literal
    overshoot: list[Any] = field(default_factory=list)
    cost_terms: list[tuple[Any, int, int]] = field(default_factory=list)  # var, cents, ub


def _usable_rows(job: JobRows, problem: BatchProblem, modes: Mapping[str, str]) -> list[int]:
    """Rows the model may pick under `modes` (others cannot be feasible or are dominated)."""
    limit = job.due if modes.get(_deadline_req(job), HARD) == HARD else problem.horizon
    out, best_free = [], None
    for i, r in enumerate(job.rows):
        if job.release + r.duration > limit:
            continue
        too_big = any(d > problem.resources[k].capacity for k, d in r.usage
                      if modes.get(_capacity_req(k), HARD) == HARD)
        if too_big:
            continue
        if not r.usage and limit == job.due:
            # unlimited rows interact with nothing: only the cheapest one that fits matters
            if best_free is None or (r.cost_cents, r.duration) < \
                    (job.rows[best_free].cost_cents, job.rows[best_free].duration):
                best_free = i
            continue
        out.append(i)
    if best_free is not None:
        out.append(best_free)
    return sorted(out)


def add_choice(v: _Vars, problem: BatchProblem, modes: Mapping[str, str]) -> None:
    """Per job: exactly one usable row or (droppable jobs) the drop literal."""
    m = v.model
    for j, job in enumerate(problem.jobs):
        idx = _usable_rows(job, problem, modes)
        v.rows.append(idx)
        v.x.append([m.new_bool_var(f"x{j}_{i}") for i in idx])
        drop = m.new_bool_var(f"drop{j}") if job.penalty_cents is not None else None
        v.drop.append(drop)
        m.add_exactly_one(v.x[j] + ([drop] if drop is not None else []))
        for xi, i in zip(v.x[j], idx, strict=True):
            v.cost_terms.append((xi, job.rows[i].cost_cents, 1))
        if drop is not None:
            v.cost_terms.append((drop, job.penalty_cents or 0, 1))


def add_windows(v: _Vars, problem: BatchProblem, modes: Mapping[str, str]) -> None:
    """Start ≥ release; end ≤ due (hard), or guarded by an assumption, or with lateness."""
    m = v.model
    horizon = problem.horizon
    for j, job in enumerate(problem.jobs):
        mode = modes.get(_deadline_req(job), HARD)
        limit = job.due if mode == HARD else horizon
        shortest = min((job.rows[i].duration for i in v.rows[j]), default=0)
        s = m.new_int_var(job.release, max(job.release, limit - shortest), f"s{j}")
        v.start.append(s)
        lit = late = None
        if mode == ASSUME:
            lit = v.literal[_deadline_req(job)] = m.new_bool_var(f"a_{_deadline_req(job)}")
        elif mode == MINIMISE:
            late = v.lateness[j] = m.new_int_var(0, max(0, horizon - job.due), f"late{j}")
            v.overshoot.append(late)
        for xi, i in zip(v.x[j], v.rows[j], strict=True):
            d = job.rows[i].duration
            m.add(s + d <= limit).only_enforce_if(xi)
            if lit is not None and job.release + d <= job.due:
                m.add(s + d <= job.due).only_enforce_if([xi, lit])
            elif lit is not None:  # this row can never meet the deadline
                m.add_implication(xi, lit.Not())
            elif late is not None:
                m.add(s + d <= job.due + late).only_enforce_if(xi)


def add_capacity(v: _Vars, problem: BatchProblem, modes: Mapping[str, str]) -> None:
    """One cumulative per shared resource over the optional intervals of its rows."""
    m = v.model
    users: dict[str, list[tuple[Any, int]]] = {k: [] for k in problem.resources}
    for j, job in enumerate(problem.jobs):
        for xi, i in zip(v.x[j], v.rows[j], strict=True):
            row = job.rows[i]
            if not row.usage:
                continue
            itv = m.new_optional_fixed_size_interval_var(v.start[j], row.duration, xi,
                                                         f"i{j}_{i}")
            for key, demand in row.usage:
                users[key].append((itv, demand))
                cap = problem.resources[key].capacity
                if demand > cap and modes.get(_capacity_req(key), HARD) == ASSUME:
                    lit = v.literal.setdefault(_capacity_req(key),
                                               m.new_bool_var(f"a_capacity:{key}"))
                    m.add_implication(xi, lit.Not())
    for key, res in problem.resources.items():
        items = users[key]
        total = sum(d for _, d in items)
        mode = modes.get(_capacity_req(key), HARD)
        cap = res.capacity
        slack = max(0, total - cap)
        if res.kind == "reservation":
            high = cap if mode == HARD else cap + slack
            r_high = max(0, min(high, total))
            r = v.reserve[key] = m.new_int_var(0, r_high, f"R_{key}")
            v.cost_terms.append((r, res.commitment_cents, r_high))
            if mode == ASSUME:
                lit = v.literal.setdefault(_capacity_req(key), m.new_bool_var(f"a_cap:{key}"))
                m.add(r <= cap).only_enforce_if(lit)
            elif mode == MINIMISE:
                over = m.new_int_var(0, slack, f"over_{key}")
                m.add(over >= r - cap)
                v.overshoot.append(over)
            if items:
                m.add_cumulative([i for i, _ in items], [d for _, d in items], r)
            continue
        if mode == HARD:
            capacity: Any = cap
        elif mode == ASSUME:
            lit = v.literal.setdefault(_capacity_req(key), m.new_bool_var(f"a_cap:{key}"))
            capacity = cap + slack - slack * lit  # lit true: the stated capacity
        else:
            capacity = v.capacity[key] = m.new_int_var(cap, cap + slack, f"C_{key}")
            v.overshoot.append(capacity - cap)
        if total > cap:  # otherwise the resource can never be over-used
            m.add_cumulative([i for i, _ in items], [d for _, d in items], capacity)


def add_energy_bounds(v: _Vars, problem: BatchProblem, modes: Mapping[str, str]) -> None:
    """Redundant linear cuts (energetic reasoning): for windows [a, b) with a a release and b
    a due time, Σ demand × (the part of the row that must fall inside [a, b) whatever its
    start) ≤ capacity × (b − a).

    Implied by the cumulatives, but linear in the choice literals, so CP-SAT's LP relaxation
    sees that the cheap shared resources (owned boxes, quotas) run out and the lower bound
    rises toward the optimum. Mandatory part of a row of duration d in window [r, due):
    max(0, min(d, b − a, r + d − a, b − due + d)) (Baptiste, Le Pape, Nuijten 2001, §3.3).
    """
    releases = sorted({j.release for j in problem.jobs})
    dues = sorted({j.due if modes.get(_deadline_req(j), HARD) == HARD else problem.horizon
                   for j in problem.jobs})
    for key, res in problem.resources.items():
        if res.kind == "reservation" or modes.get(_capacity_req(key), HARD) != HARD:
            continue
        terms: list[tuple[int, int, int, Any, int]] = []  # release, due, d, literal, demand
        for j, job in enumerate(problem.jobs):
            due = job.due if modes.get(_deadline_req(job), HARD) == HARD else problem.horizon
            for xi, i in zip(v.x[j], v.rows[j], strict=True):
                row = job.rows[i]
                for k, demand in row.usage:
                    if k == key:
                        terms.append((job.release, due, row.duration, xi, demand))
        if len(terms) < 2:
            continue
        for a in releases:
            for b in dues:
                if b <= a:
                    continue
                inside = []
                for r, due, d, x, demand in terms:
                    part = min(d, b - a, r + d - a, b - due + d)
                    if part > 0:
                        inside.append((x, demand * part))
                limit = res.capacity * (b - a)
                if len(inside) > 1 and sum(e for _, e in inside) > limit:
                    v.model.add(sum(e * x for x, e in inside) <= limit)


def add_symmetry_breaking(v: _Vars, problem: BatchProblem, modes: Mapping[str, str]) -> None:
    """Identical jobs (same rows, window, penalty, priority) start in file order, and a later
    one is dropped whenever an earlier one is: any plan can be permuted into that order."""
    groups: dict[tuple, list[int]] = {}
    for j, job in enumerate(problem.jobs):
        if modes.get(_deadline_req(job), HARD) != HARD:
            continue
        sig = (job.release, job.due, job.penalty_cents, job.spec.priority, tuple(
            (job.rows[i].cost_cents, job.rows[i].duration, job.rows[i].usage,
             job.rows[i].candidate.offering.key, job.rows[i].candidate.instances)
            for i in v.rows[j]))
        groups.setdefault(sig, []).append(j)
    for members in groups.values():
        for a, b in zip(members, members[1:], strict=False):
            v.model.add(v.start[a] <= v.start[b])
            if v.drop[a] is not None and v.drop[b] is not None:
                v.model.add_implication(v.drop[a], v.drop[b])


def _objective_bound(v: _Vars) -> int:
    """An upper bound of the cost part of the objective (cents), plus one."""
    return sum(coef * high for _, coef, high in v.cost_terms) + 1


def build_model(problem: BatchProblem, modes: Mapping[str, str] | None = None,
                objective: bool = True, symmetry: bool = True) -> _Vars:
    """The CP-SAT model of `problem`; `modes` maps requirement ids (deadline:<job>,
    capacity:<resource>) to hard (default), assume (guarded by an assumption literal) or
    minimise (relaxed; the relaxation is minimised before cost, lexicographically)."""
    from ortools.sat.python import cp_model

    modes = modes or {}
    v = _Vars(cp_model.CpModel())
    add_choice(v, problem, modes)
    add_windows(v, problem, modes)
    add_capacity(v, problem, modes)
    add_energy_bounds(v, problem, modes)
    if symmetry:
        add_symmetry_breaking(v, problem, modes)
    if objective:
        cost = cp_model.LinearExpr.weighted_sum([t for t, _, _ in v.cost_terms],
                                                [c for _, c, _ in v.cost_terms])
        if v.overshoot:
            weight = _objective_bound(v)
            v.model.minimize(weight * sum(v.overshoot) + cost)
        else:
            v.model.minimize(cost)
    return v


# ---- hints: greedy list schedule from each job's best single-job plan ----------------------

def greedy_schedule(problem: BatchProblem, rows: Sequence[Sequence[int]]
                    ) -> list[tuple[int | None, int | None]]:
    """A quick feasible plan: jobs by deadline, each on its cheapest row (its single-job
    optimum) that still fits at the earliest start, else the next cheapest; droppable jobs
    that fit nowhere are dropped. Reservations are not used (R = 0). Returns (row, start)
    per job; (None, None) where nothing fits (the hint is then partial)."""
    import numpy as np

    free = {k: np.full(problem.horizon, r.capacity if r.kind != "reservation" else 0,
                       dtype=np.int64) for k, r in problem.resources.items()}
    out: list[tuple[int | None, int | None]] = [(None, None)] * len(problem.jobs)
    order = sorted(range(len(problem.jobs)),
                   key=lambda j: (problem.jobs[j].due, problem.jobs[j].release, j))
    for j in order:
        job = problem.jobs[j]
        for i in sorted(rows[j], key=lambda i: (job.rows[i].cost_cents, job.rows[i].duration)):
            row = job.rows[i]
            t = _earliest_start(free, row, job.release, job.due - row.duration)
            if t is not None:
                for key, demand in row.usage:
                    free[key][t:t + row.duration] -= demand
                out[j] = (i, t)
                break
    return out


def _add_hints(v: _Vars, problem: BatchProblem) -> None:
    plan = greedy_schedule(problem, v.rows)
    for j, (i, t) in enumerate(plan):
        if i is None:
            if v.drop[j] is not None:
                v.model.add_hint(v.drop[j], 1)
                for xi in v.x[j]:
                    v.model.add_hint(xi, 0)
            continue
        for xi, k in zip(v.x[j], v.rows[j], strict=True):
            v.model.add_hint(xi, int(k == i))
        if v.drop[j] is not None:
            v.model.add_hint(v.drop[j], 0)
        v.model.add_hint(v.start[j], t)
    for r in v.reserve.values():
        v.model.add_hint(r, 0)


# ---- solving ------------------------------------------------------------------------------

def _progress_callback(on_progress: Callable[[ProgressEvent], None] | None,
                       events: list[ProgressEvent]) -> Any:
    from ortools.sat.python import cp_model

    class _Callback(cp_model.CpSolverSolutionCallback):  # type: ignore[misc]
        def on_solution_callback(self) -> None:
            event = ProgressEvent(self.wall_time, from_cents(int(self.objective_value)),
                                  from_cents(int(self.best_objective_bound)))
            events.append(event)
            if on_progress is not None:
                on_progress(event)

    return _Callback()


def _read_plan(v: _Vars, problem: BatchProblem, result: SolveResult
               ) -> tuple[list[ScheduledJob], dict[str, int]]:
    s = result.solver
    jobs = []
    for j, job in enumerate(problem.jobs):
        chosen = [i for xi, i in zip(v.x[j], v.rows[j], strict=True) if s.boolean_value(xi)]
        row = job.rows[chosen[0]] if chosen else None
        start = int(s.value(v.start[j])) if row is not None else None
        jobs.append(ScheduledJob(job, row, start, problem.grid.unit_h))
    reserved = {k: int(s.value(r)) for k, r in v.reserve.items()}
    return jobs, reserved


def _earliest_start(free: Mapping[str, Any], row: Row, low: int, high: int) -> int | None:
    """First t in [low, high] with every resource of `row` free enough over [t, t + d)."""
    import numpy as np

    if high < low:
        return None
    horizon = len(next(iter(free.values()))) if free else high + row.duration
    ok = np.ones(horizon, dtype=bool)
    for key, demand in row.usage:
        ok &= free[key] >= demand
    run = np.concatenate(([0], np.cumsum(ok)))
    starts = np.arange(low, high + 1)
    fits = (run[starts + row.duration] - run[starts]) == row.duration
    return int(starts[np.argmax(fits)]) if fits.any() else None


def left_shift(problem: BatchProblem, jobs: list[ScheduledJob], reserved: Mapping[str, int]
               ) -> list[ScheduledJob]:
    """Phase 2: rows and R kept (so the cost), each job moved to its earliest feasible start.

    Jobs are placed in order of their phase-1 start (higher priority first on ties). A job
    placed earlier never occupies more of any later time than it did, so each job's phase-1
    slot stays free and its new start is ≤ the old one: release, deadlines and capacities
    still hold (validate_batch re-checks).
    """
    import numpy as np

    horizon = problem.horizon
    free = {k: np.full(horizon, reserved.get(k, 0) if r.kind == "reservation" else r.capacity,
                       dtype=np.int64) for k, r in problem.resources.items()}
    out = list(jobs)
    order = sorted((j for j, s in enumerate(jobs) if s.row is not None and s.start is not None),
                   key=lambda j: (jobs[j].start, -jobs[j].job.spec.priority, j))
    for j in order:
        sj = jobs[j]
        assert sj.row is not None and sj.start is not None
        t = _earliest_start(free, sj.row, sj.job.release, sj.start) if sj.row.usage \
            else sj.job.release
        t = sj.start if t is None else t
        for key, demand in sj.row.usage:
            free[key][t:t + sj.row.duration] -= demand
        out[j] = replace(sj, start=t)
    return out


def _trivially_infeasible(problem: BatchProblem) -> Explanation | None:
    """A required job with no row that fits [release, horizon]: no solver needed."""
    for job in problem.jobs:
        if job.rows or job.penalty_cents is not None:
            continue
        spec = job.spec
        window_h = problem.horizon_h - spec.release_h
        if spec.candidates:
            fastest = min(spec.candidates, key=lambda c: (c.hours, c.cost_usd))
            why = (f"its fastest plan needs {fastest.hours:,.1f} h ({fastest.gpus}× "
                   f"{fastest.offering.gpu_id}, {fastest.offering.provider}) but only "
                   f"{window_h:,.1f} h remain between its release and the horizon")
            if spec.budget_usd is not None and all(c.cost_usd > spec.budget_usd
                                                   for c in spec.candidates):
                why = f"no plan fits its budget (${spec.budget_usd:,.0f})"
        elif spec.rejected:
            first = sorted(spec.rejected.items())[:3]
            why = "nothing fits: " + "; ".join(f"{k}: {r}" for k, r in first)
        else:
            why = "no offering matches its filters (gpus, providers, regions, pricing, quotas)"
        return Explanation([f"job:{job.name}"], [f"job {job.name!r}"],
                           f"job {job.name!r} cannot run at all: {why}")
    return None


def solve_batch(problem: BatchProblem, config: SolverConfig | None = None, *,
                on_progress: Callable[[ProgressEvent], None] | None = None,
                compact: bool = True, explain: bool = True) -> BatchResult:
    """Solve a batch: cheapest plan (cents), then earliest starts at that cost.

    Args:
        problem: jobs with their rows and the shared resources (BatchProblem.build).
        config: time limit, workers, seed; the best plan found is returned at the limit,
            with its optimality gap.
        on_progress: called with each improving solution (objective and bound in USD).
        compact: run phase 2 (left_shift: jobs earlier, the cost unchanged).
        explain: for an infeasible batch, find the conflict and the cheapest fixes.

    Returns:
        BatchResult (status infeasible with an Explanation instead of raising).

    Raises:
        SolverError: no solution within the time limit (status UNKNOWN), or an invalid model;
            or the plan fails validate_batch (a bug).
    """
    cfg = config or SolverConfig()
    started = time.perf_counter()
    info: dict[str, Any] = {"name": "cp-sat", "jobs": len(problem.jobs),
                            "rows": sum(len(j.rows) for j in problem.jobs),
                            "resources": len(problem.resources),
                            "time_unit_hours": problem.grid.unit_h,
                            "horizon_steps": problem.horizon,
                            "enumerate_s": round(problem.enumerate_s, 3)}
    trivial = _trivially_infeasible(problem)
    if trivial is not None:
        info.update(status="infeasible", wall_s=round(time.perf_counter() - started, 4),
                    proven_optimal=True)
        return BatchResult("infeasible", problem, explanation=trivial, solver=info)
    v = build_model(problem)
    _add_hints(v, problem)
    info["model_rows"] = sum(len(r) for r in v.rows)
    events: list[ProgressEvent] = []
    result = solve(v.model, cfg, _progress_callback(on_progress, events))
    info.update(status=result.status, solve_s=round(result.wall_s, 4),
                proven_optimal=result.proven_optimal)
    if result.status == "infeasible":
        out = BatchResult("infeasible", problem, solver=info, progress=events)
        if explain:
            out.explanation = explain_infeasible(problem, cfg)
        info["wall_s"] = round(time.perf_counter() - started, 4)
        return out
    objective = int(round(result.objective or 0))
    bound = int(round(result.bound or 0))
    info.update(objective_usd=from_cents(objective), best_bound_usd=from_cents(bound),
                gap=round((objective - bound) / max(1, abs(objective)), 6))
    jobs, reserved = _read_plan(v, problem, result)
    if compact:
        jobs = left_shift(problem, jobs, reserved)
    out = BatchResult(result.status, problem, jobs, reserved, solver=info, progress=events)
    problems = validate_batch(out)
    if problems:
        raise SolverError("internal error, the batch plan breaks a constraint: "
                          + "; ".join(problems[:5]))
    info["wall_s"] = round(time.perf_counter() - started, 4)
    return out


# ---- infeasibility ------------------------------------------------------------------------

def _requirements(problem: BatchProblem) -> list[str]:
    reqs = [_deadline_req(j) for j in problem.jobs if j.due < problem.horizon]
    return reqs + [_capacity_req(k) for k in problem.resources]


def _label(problem: BatchProblem, req: str) -> str:
    kind, _, name = req.partition(":")
    if kind == "deadline":
        job = next(j for j in problem.jobs if j.name == name)
        return f"deadline of {name!r} (day {(job.spec.deadline_h or 0) / 24:g})"
    res = problem.resources[name]
    if res.kind == "reservation":
        return f"{res.label}: at most {res.capacity} {res.unit}"
    return f"{res.label}: {res.capacity} {res.unit}"


def explain_infeasible(problem: BatchProblem, config: SolverConfig | None = None) -> Explanation:
    """The requirements in conflict (a small core) and the cheapest single fixes.

    Every deadline shorter than the horizon and every capacity gets an assumption literal;
    CP-SAT names a sufficient subset; each member is dropped in turn if the rest still
    conflict (deletion filter, so the core is minimal when every check finishes in time).
    Then each member alone is relaxed by as little as possible (lateness in steps, extra
    GPUs/boxes/instances) and the batch re-solved for its cost.
    """
    cfg = config or SolverConfig()
    reqs = _requirements(problem)
    per_check = replace(cfg, time_limit_s=max(0.5, min(5.0, cfg.time_limit_s / 4)))
    v = build_model(problem, {r: ASSUME for r in reqs}, objective=False)
    lits = {r: v.literal[r] for r in reqs if r in v.literal}

    def infeasible_with(subset: Sequence[str]) -> bool:
        v.model.clear_assumptions()
        v.model.add_assumptions([lits[r] for r in subset])
        try:
            return solve(v.model, per_check).status == "infeasible"
        except SolverError:
            return False  # unknown: keep the requirement in the core

    v.model.add_assumptions(list(lits.values()))
    try:
        first = solve(v.model, per_check)
    except SolverError:
        first = None
    by_index = {lit.index: r for r, lit in lits.items()}
    if first is not None and first.status == "infeasible":
        core = [by_index[i] for i in first.solver.sufficient_assumptions_for_infeasibility()
                if i in by_index]
    else:
        core = list(lits)
    core = core or list(lits)
    for r in list(core):
        if len(core) > 1 and infeasible_with([c for c in core if c != r]):
            core.remove(r)
    fixes = [f for f in (_relaxed_fix(problem, [r], cfg) for r in core) if f is not None]
    if not fixes and len(core) > 1:
        both = _relaxed_fix(problem, core, cfg)
        fixes = [both] if both else []
    fixes.sort(key=lambda f: f.total_cost_usd)
    labels = [_label(problem, r) for r in core]
    message = "these requirements cannot all hold: " + "; ".join(labels)
    if fixes:
        message += f". Cheapest fix: {fixes[0].change} (total ${fixes[0].total_cost_usd:,.2f})"
    return Explanation(core, labels, message, fixes)


def _relaxed_fix(problem: BatchProblem, relax: Sequence[str], cfg: SolverConfig) -> Fix | None:
    """Relax `relax` as little as possible, then minimise cost; describe the change."""
    v = build_model(problem, {r: MINIMISE for r in relax})
    try:
        res = solve(v.model, replace(cfg, time_limit_s=max(0.5, min(5.0, cfg.time_limit_s / 4))))
    except SolverError:
        return None
    if res.status == "infeasible":
        return None
    s = res.solver
    jobs, reserved = _read_plan(v, problem, res)
    partial = BatchResult(res.status, problem, jobs, reserved)
    changes, detail = [], {}
    for r in relax:
        kind, _, name = r.partition(":")
        if kind == "deadline":
            j = next(k for k, job in enumerate(problem.jobs) if job.name == name)
            sj = jobs[j]
            end_h = sj.end_h if sj.end_h is not None else problem.jobs[j].spec.deadline_h or 0
            old = problem.jobs[j].spec.deadline_h or 0.0
            if end_h > old + EPS_H:
                changes.append(f"move the deadline of {name!r} from day {old / 24:.2f} to day "
                               f"{end_h / 24:.2f} (+{end_h - old:.1f} h)")
            detail[r] = {"job": name, "deadline_hour": old, "needed_hour": round(end_h, 2)}
        else:
            res_ = problem.resources[name]
            if name in v.capacity:
                new = int(s.value(v.capacity[name]))
            else:
                new = reserved.get(name, res_.capacity)
            if new > res_.capacity:
                what = {"quota": "raise", "owned": "grow",
                        "reservation": "raise the maximum of"}[res_.kind]
                changes.append(f"{what} {res_.label} from {res_.capacity} to {new} {res_.unit}")
            detail[r] = {"resource": name, "capacity": res_.capacity, "needed": new}
    if not changes:
        changes.append("relax " + ", ".join(relax))
    return Fix(", ".join(relax), "; ".join(changes), round(partial.total_cost_usd, 2), detail)


# ---- validation ---------------------------------------------------------------------------

def validate_batch(result: BatchResult) -> list[str]:
    """Check a plan against every constraint in plain Python, in hours (not on the grid).

    Checks: every required job runs, dropped jobs are droppable; start ≥ release; the actual
    end (start + candidate hours) ≤ min(deadline, horizon); the candidate is one of the job's;
    per resource, the sum of demands of jobs running at every start time ≤ its capacity (a
    reservation: ≤ the R reserved, and R ≤ its maximum); the reported total cost equals the
    sum of row costs and commitments (to the cent per term).

    Returns:
        A list of violations (empty: the plan is valid).
    """
    problem = result.problem
    out: list[str] = []
    active: list[tuple[float, float, Candidate]] = []
    for sj in result.jobs:
        spec = sj.job.spec
        if sj.row is None:
            if spec.penalty_usd is None:
                out.append(f"{sj.name}: required job left out")
            continue
        c = sj.row.candidate
        if not any(c is k for k in spec.candidates):
            out.append(f"{sj.name}: plan is not one of the job's candidates")
        start, end = sj.start_h or 0.0, sj.end_h or 0.0
        if start < spec.release_h - EPS_H:
            out.append(f"{sj.name}: starts at {start:g} h before its release {spec.release_h:g} h")
        limit = min(problem.horizon_h, spec.deadline_h if spec.deadline_h is not None
                    else math.inf)
        if end > limit + EPS_H:
            out.append(f"{sj.name}: ends at {end:.3f} h after its limit {limit:.3f} h")
        if spec.budget_usd is not None and c.cost_usd > spec.budget_usd + 0.005:
            out.append(f"{sj.name}: costs {c.cost_usd:.2f} over its budget")
        active.append((start, sj.slot_end_h or end, c))
    for key, res in problem.resources.items():
        cap = res.capacity
        if res.kind == "reservation":
            got = result.reserved.get(key, 0)
            if got > cap:
                out.append(f"{key}: reserved {got} > max {cap}")
            cap = got
        events = sorted({s for s, _, _ in active})
        for t in events:
            used = sum(res.demand(c.offering, c.instances) for s, e, c in active if s <= t < e)
            if used > cap:
                out.append(f"{res.label}: {used} {res.unit} in use at hour {t:g} > {cap}")
                break
    expect = sum(s.row.candidate.cost_usd for s in result.jobs if s.row is not None) + \
        sum(n * problem.resources[k].commitment_usd for k, n in result.reserved.items())
    if abs(expect - result.total_cost_usd) > 0.01 * (len(result.jobs) + 1):
        out.append(f"total cost {result.total_cost_usd:.2f} != sum of parts {expect:.2f}")
    return out


# ---- from a batch file --------------------------------------------------------------------

def _reservation_offering(frame: Any, r: Any, i: int, horizon_h: float) -> tuple[Offering, Resource]:
    from optimizer.inputs.gpus import load_gpus, resolve_gpu_id

    rows = frame[(frame["provider"].str.lower() == r.provider.lower())
                 & (frame["pricing_model"] == r.pricing)]
    if rows.empty:
        providers = sorted(set(frame.loc[frame["pricing_model"] == r.pricing, "provider"]))
        raise ConfigError(f"capacity.reservation[{i}].provider: no {r.pricing} offerings from "
                          f"{r.provider!r}{did_you_mean(r.provider, providers)} "
                          f"Providers with {r.pricing}: {', '.join(providers)}")
    if r.instance is not None:
        picked = rows[rows["instance_type"].str.lower() == r.instance.lower()]
        allowed = sorted(set(rows["instance_type"]))
        if picked.empty:
            raise ConfigError(f"capacity.reservation[{i}].instance: {r.instance!r} has no "
                              f"{r.pricing} row at {r.provider}"
                              f"{did_you_mean(r.instance, allowed)} Allowed: {', '.join(allowed)}")
    else:
        gpu = resolve_gpu_id(r.gpu, f"capacity.reservation[{i}].gpu")
        picked = rows[rows["gpu_id"] == gpu]
        if picked.empty:
            raise ConfigError(f"capacity.reservation[{i}].gpu: no {r.pricing} {gpu} at "
                              f"{r.provider}; GPUs: {', '.join(sorted(set(rows['gpu_id'])))}")
    if r.region is not None:
        picked = picked[picked["region"].str.lower() == r.region.lower()]
        if picked.empty:
            raise ConfigError(f"capacity.reservation[{i}].region: {r.region!r} not offered")
    row = picked.sort_values(["usd_per_gpu_hour", "instance_type", "region"]).iloc[0]
    term_h = float(row["commitment_hours"])
    if horizon_h > term_h:
        raise ConfigError(f"capacity.reservation[{i}]: the horizon ({horizon_h:g} h) is longer "
                          f"than the {r.pricing} term ({term_h:g} h)")
    billed_h = term_h if r.bill == "term" else horizon_h
    key = f"reservation#{i}"
    off = Offering(
        key=f"{key}/{row['provider']}/{row['instance_type']}/{row['region']}/{r.pricing}",
        kind="reserved", provider=str(row["provider"]), instance=str(row["instance_type"]),
        region=str(row["region"]), pricing=r.pricing, gpu=load_gpus()[row["gpu_id"]],
        gpus_per_instance=int(row["gpus_per_instance"]),
        inter_node_gbps=float(row["inter_node_gbps"]), usd_per_hour=0.0,
        max_instances=r.max_instances)
    label = f"reserved {row['provider']} {row['instance_type']} ({r.pricing}, bill {r.bill})"
    res = Resource(key, "reservation", label, r.max_instances, "instances",
                   offering_key=off.key,
                   commitment_usd=float(row["usd_per_hour"]) * billed_h)
    return off, res


def _quota_resource(frame: Any, q: Any, i: int) -> Resource:
    from optimizer.inputs.gpus import resolve_gpu_id

    gpu = resolve_gpu_id(q.gpu, f"capacity.quota[{i}].gpu")
    providers = sorted(set(frame["provider"])) if frame is not None else []
    if frame is not None and q.provider.lower() not in {p.lower() for p in providers}:
        raise ConfigError(f"capacity.quota[{i}].provider: unknown {q.provider!r}"
                          f"{did_you_mean(q.provider, providers)} Allowed: {', '.join(providers)}")
    provider = next((p for p in providers if p.lower() == q.provider.lower()), q.provider)
    where = f" {q.region}" if q.region else ""
    return Resource(f"quota#{i}", "quota", f"quota {provider} {gpu}{where}", q.max_gpus, "GPUs",
                    provider=provider, gpu_id=gpu, region=q.region)


def _frame_rows(frame: Any) -> tuple[Any, ...]:
    from optimizer.pricing.schema import OfferingRow

    return tuple(OfferingRow.model_validate({k: (None if v != v else v) for k, v in rec.items()})
                 for rec in frame.to_dict("records"))


def build_problem(batch: Any, frame: Any = None, base_dir: Path | None = None) -> BatchProblem:
    """Candidates of every job of a BatchFile over the batch's offerings, on a time grid.

    Offerings per job: catalog rows allowed by the job's own filters (only those under a
    quota if `quota_only`), the owned boxes and the sized reservations of its GPU types.
    Candidates are enumerated against the horizon (not the deadline), so a deadline can be
    relaxed when explaining an infeasible batch; jobs with the same model, workload and
    filters share one enumeration.

    Raises:
        ConfigError: unknown provider/GPU/instance in [capacity], bad owned-box overrides.
    """
    from optimizer.inputs.calibration import assumptions_for_job
    from optimizer.inputs.gpus import resolve_gpu_id
    from optimizer.pricing.catalog import filter_rows
    from optimizer.pricing.offerings import hardware_offerings, job_offerings
    from optimizer.solve.train.model import prepare_from_offerings

    rows = None if frame is None else _frame_rows(frame)
    cap = batch.capacity
    horizon_h = cap.horizon_h
    t0 = time.perf_counter()
    resources: list[Resource] = []
    owned = hardware_offerings(cap.owned, [])
    for i, (_entry, off) in enumerate(zip(cap.owned, owned, strict=True)):
        resources.append(Resource(f"owned#{i}", "owned",
                                  f"owned {off.instance}", int(off.max_instances or 1),
                                  "boxes", offering_key=off.key))
    reserved: list[Offering] = []
    if cap.reservation and frame is None:
        raise ConfigError("capacity.reservation needs the price catalog (cloud prices)")
    for i, r in enumerate(cap.reservation):
        off, res = _reservation_offering(frame, r, i, horizon_h)
        reserved.append(off)
        resources.append(res)
    quotas = [_quota_resource(frame, q, i) for i, q in enumerate(cap.quota)]
    resources.extend(quotas)
    cache: dict[str, Any] = {}
    specs: list[JobSpec] = []
    for job in batch.job:
        c = job.constraints
        allowed = {resolve_gpu_id(g, "constraints.gpus") for g in c.gpus} if c.gpus else None
        provs = {p.lower() for p in c.providers} if c.providers else None
        cloud = job_offerings(rows, c, (), ()) if frame is not None else []
        if cap.quota_only:
            cloud = [o for o in cloud if any(q.demand(o, 1) for q in quotas)]
        offs = cloud + [o for o in owned if allowed is None or o.gpu_id in allowed] + [
            o for o in reserved if (allowed is None or o.gpu_id in allowed)
            and (provs is None or o.provider.lower() in provs)]
        window_h = horizon_h - job.release_h
        if window_h <= 0:
            raise ConfigError(f"job {job.name!r}: release (hour {job.release_h:g}) is not "
                              f"before the horizon ({horizon_h:g} h)")
        enum_job = job.model_copy(update={"constraints": c.model_copy(
            update={"deadline_days": None, "deadline_hours": window_h, "budget_usd": None})})
        key = "|".join([enum_job.model.model_dump_json(), enum_job.workload.model_dump_json(),
                        enum_job.constraints.model_dump_json(),
                        enum_job.assumptions.model_dump_json(),
                        enum_job.calibration.model_dump_json() if enum_job.calibration else "",
                        ",".join(o.key for o in offs)])
        if key not in cache:
            model = job.model.resolve(base_dir)
            prep = prepare_from_offerings(enum_job, model, offs,
                                          assumptions_for_job(job, model))
            cache[key] = prep
        prep = cache[key]
        specs.append(JobSpec(job.name, prep.table.candidates, job.release_h, c.deadline_h,
                             job.value_usd if job.droppable else None, job.priority,
                             c.budget_usd, job, prep.model.name, prep.table.rejected))
    problem = BatchProblem.build(specs, resources, horizon_h, name=batch.name)
    problem.enumerate_s = time.perf_counter() - t0
    if cap.quota_only:
        problem.notes.append("cloud: only (provider, GPU) pairs with a quota are used")
    for r in resources:
        if r.kind == "reservation":
            problem.notes.append(f"{r.label}: ${r.commitment_usd:,.0f} per reserved instance")
    problem.notes.append("owned boxes: power per busy box-hour (capital only with "
                         "charge_capital = true)")
    return problem


def plan_batch(batch: Any, *, prices: str | Path | None = None, offline: bool | None = None,
               config: SolverConfig | None = None,
               on_progress: Callable[[ProgressEvent], None] | None = None) -> BatchResult:
    """Plan a batch end to end: a BatchFile, a dict, or the path of a batch TOML file.

    Raises:
        ConfigError: invalid batch file or [capacity] entry (one line naming the field).
        SolverError: no solution within the time limit.
    """
    from optimizer.inputs.jobs.batch import BatchFile, batch_from_dict, load_batch
    from optimizer.inputs.jobs.train import coerce_document
    from optimizer.pricing.catalog import load_catalog

    batch, base_dir = coerce_document(batch, BatchFile, load_batch, batch_from_dict, "batch")
    frame = load_catalog(prices, offline=offline).frame
    problem = build_problem(batch, frame, base_dir)
    return solve_batch(problem, config, on_progress=on_progress)


# ---- JSON ---------------------------------------------------------------------------------

def _usage_profile(result: BatchResult, key: str) -> list[list[float]]:
    """[[from_hour, to_hour, level], ...] of a resource, where the level changes."""
    res = result.problem.resources[key]
    spans = [(s.start_h or 0.0, s.slot_end_h or 0.0, res.demand(s.row.candidate.offering,
                                                                s.row.candidate.instances))
             for s in result.jobs if s.row is not None]
    spans = [sp for sp in spans if sp[2]]
    times = sorted({t for a, b, _ in spans for t in (a, b)})
    out: list[list[float]] = []
    for a, b in zip(times, times[1:], strict=False):
        level = sum(d for s, e, d in spans if s <= a < e)
        if out and out[-1][2] == level and out[-1][1] == a:
            out[-1][1] = b
        elif level:
            out.append([round(a, 2), round(b, 2), level])
    return out


def batch_dict(result: BatchResult) -> dict[str, Any]:
    """A BatchResult in the `ccopt batch --json` contract of DESIGN.md (plus extra fields)."""
    from optimizer.solve.train.model import plan_dict

    problem = result.problem
    jobs = []
    by_name = {s.name: s for s in result.jobs}
    for job in problem.jobs:
        spec = job.spec
        entry: dict[str, Any] = {"name": job.name}
        s = by_name.get(job.name)
        if s is not None and s.row is not None:
            entry.update(plan_dict(s.row.candidate, spec.job))
            entry.update(status="scheduled", start_hour=round(s.start_h or 0.0, 2),
                         end_hour=round(s.end_h or 0.0, 2),
                         slot_end_hour=round(s.slot_end_h or 0.0, 2),
                         resources=[problem.resources[k].label for k, _ in s.row.usage]
                         or ["cloud (no quota)"])
        else:
            entry.update(status="dropped" if s is not None else "unplanned",
                         start_hour=None, end_hour=None)
        entry.update(model=spec.model_name, release_hour=round(spec.release_h, 2),
                     deadline_hour=spec.deadline_h, priority=spec.priority,
                     value_usd=spec.penalty_usd, candidates=len(job.rows))
        jobs.append(entry)
    resources = []
    for key, res in problem.resources.items():
        item: dict[str, Any] = {"key": key, "kind": res.kind, "label": res.label,
                                "capacity": res.capacity, "unit": res.unit}
        if res.kind == "reservation":
            item.update(reserved=result.reserved.get(key, 0),
                        commitment_usd_per_instance=round(res.commitment_usd, 2))
        profile = _usage_profile(result, key) if result.jobs else []
        item.update(peak=max((p[2] for p in profile), default=0), usage=profile)
        resources.append(item)
    expl = result.explanation
    return {
        "status": result.status,
        "total_cost_usd": round(result.total_cost_usd, 2) if result.jobs else None,
        "cost_breakdown_usd": {"cloud": round(result.cloud_usd, 2),
                               "owned": round(result.owned_usd, 2),
                               "reservations": round(result.reservation_usd, 2),
                               "dropped_value": round(result.dropped_value_usd, 2)},
        "horizon_hours": problem.horizon_h,
        "jobs": jobs,
        "dropped": [s.name for s in result.jobs if s.row is None],
        "resources": resources,
        "explanation": None if expl is None else {
            "conflict": expl.conflict, "labels": expl.labels, "message": expl.message,
            "fixes": [{"requirement": f.requirement, "change": f.change,
                       "total_cost_usd": f.total_cost_usd, "detail": f.detail}
                      for f in expl.fixes]},
        "notes": problem.notes,
        "solver": result.solver,
    }
