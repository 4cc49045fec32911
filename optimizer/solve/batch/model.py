"""The CP-SAT model of a batch: a variable container and one builder per constraint family.

* **choice** — per job exactly one candidate row, or the drop literal of a droppable job
  (``add_exactly_one``); rows are pruned first (rows that cannot fit [release, horizon]; rows
  another row of the same resources beats on cost, duration and demand; of the rows on
  unlimited cloud only the cheapest that meets the deadline, since they interact with nothing).
* **windows** — one start variable per job on the time grid; each chosen row's interval
  [start, start + duration) lies within [release, min(deadline, horizon)], and a row on a
  capacity block within the block's own [start, end] too (Row.earliest/latest, always hard).
* **capacity** — ``add_cumulative`` per shared resource over the optional intervals of the
  rows that use it: owned boxes (demand = boxes), cloud quotas (demand = GPUs), and sized
  reservations and capacity blocks (capacity = the instance count R bought, a variable).
* **objective** — integer cents: Σ row cost (cloud rent, power of owned boxes) + Σ R ×
  commitment per reserved instance + Σ value of dropped jobs.

`modes` map each requirement (``deadline:<job>``, ``capacity:<resource>``) to hard (default),
assume (guarded by an assumption literal, for the infeasibility core) or minimise (relaxed,
the relaxation minimised before cost), so explain.py reuses the same builders.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from optimizer.solve.batch.problem import BatchProblem, JobRows, Row, ScheduledJob
from optimizer.solve.cpsat.solver import SolveResult

__all__ = [
    "HARD",
    "ASSUME",
    "MINIMISE",
    "deadline_req",
    "capacity_req",
    "BatchVars",
    "usable_rows",
    "add_choice",
    "add_windows",
    "add_capacity",
    "energy_windows",
    "add_energy_bounds",
    "symmetry_groups",
    "add_symmetry_breaking",
    "add_objective",
    "build_model",
    "read_plan",
]

HARD, ASSUME, MINIMISE = "hard", "assume", "minimise"


def deadline_req(job: JobRows) -> str:
    """Requirement id of a job's deadline."""
    return f"deadline:{job.name}"


def capacity_req(key: str) -> str:
    """Requirement id of a resource's capacity."""
    return f"capacity:{key}"


@dataclass
class BatchVars:
    """Variables of one CP-SAT model of a batch (rows[j] are indices into jobs[j].rows)."""

    model: cp_model.CpModel
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
    unplaced: dict[int, Any] = field(default_factory=dict)  # must-run job -> its soft drop
    overshoot_weight: int = 0  # cents an overshoot unit costs in the objective (> any plan)


def usable_rows(job: JobRows, problem: BatchProblem, modes: Mapping[str, str]) -> list[int]:
    """Rows the model may pick under `modes` (others cannot be feasible or are dominated)."""
    limit = job.due if modes.get(deadline_req(job), HARD) == HARD else problem.horizon
    out, best_free = [], None
    for i, r in enumerate(job.rows):
        if not job.fits(r, limit):
            continue
        too_big = any(
            d > problem.resources[k].capacity for k, d in r.usage if modes.get(capacity_req(k), HARD) == HARD
        )
        if too_big:
            continue
        if not r.usage and limit == job.due:
            # unlimited rows interact with nothing: only the cheapest one that fits matters
            if best_free is None or (r.cost_cents, r.duration) < (
                job.rows[best_free].cost_cents,
                job.rows[best_free].duration,
            ):
                best_free = i
            continue
        out.append(i)
    if best_free is not None:
        out.append(best_free)
    return sorted(out)


def add_choice(
    v: BatchVars, problem: BatchProblem, modes: Mapping[str, str], unplaced: Collection[int] = ()
) -> None:
    """Per job: exactly one usable row or (droppable jobs) the drop literal. A must-run job
    in `unplaced` gets a drop literal too, counted as overshoot (weighted above every cost):
    the model stays a relaxation, and a first plan that leaves those jobs out is a solution."""
    m = v.model
    for j, job in enumerate(problem.jobs):
        idx = usable_rows(job, problem, modes)
        v.rows.append(idx)
        v.x.append([m.new_bool_var(f"x{j}_{i}") for i in idx])
        soft = job.penalty_cents is None and j in unplaced
        drop = m.new_bool_var(f"drop{j}") if job.penalty_cents is not None or soft else None
        v.drop.append(drop)
        m.add_exactly_one(v.x[j] + ([drop] if drop is not None else []))
        for xi, i in zip(v.x[j], idx, strict=True):
            v.cost_terms.append((xi, job.rows[i].cost_cents, 1))
        if soft:
            v.unplaced[j] = drop
            v.overshoot.append(drop)
        elif drop is not None:
            v.cost_terms.append((drop, job.penalty_cents or 0, 1))


def add_windows(v: BatchVars, problem: BatchProblem, modes: Mapping[str, str]) -> None:
    """Start ≥ release; end ≤ due (hard), or guarded by an assumption, or with lateness."""
    m = v.model
    horizon = problem.horizon
    for j, job in enumerate(problem.jobs):
        mode = modes.get(deadline_req(job), HARD)
        limit = job.due if mode == HARD else horizon
        shortest = min((job.rows[i].duration for i in v.rows[j]), default=0)
        s = m.new_int_var(job.release, max(job.release, limit - shortest), f"s{j}")
        v.start.append(s)
        lit = late = None
        if mode == ASSUME:
            lit = v.literal[deadline_req(job)] = m.new_bool_var(f"a_{deadline_req(job)}")
        elif mode == MINIMISE:
            late = v.lateness[j] = m.new_int_var(0, max(0, horizon - job.due), f"late{j}")
            v.overshoot.append(late)
        for xi, i in zip(v.x[j], v.rows[j], strict=True):
            d = job.rows[i].duration
            m.add(s + d <= limit).only_enforce_if(xi)
            add_row_window(m, s, job.release, limit, job.rows[i], xi)
            if lit is not None and job.release + d <= job.due:
                m.add(s + d <= job.due).only_enforce_if([xi, lit])
            elif lit is not None:  # this row can never meet the deadline
                m.add_implication(xi, lit.Not())
            elif late is not None:
                m.add(s + d <= job.due + late).only_enforce_if(xi)


def add_row_window(m: Any, s: Any, release: int, limit: int, row: Row, chosen: Any) -> None:
    """Start ≥ the row's earliest, start + duration ≤ its latest, when the row is chosen and
    its own window (a capacity block's) is narrower than the horizon."""
    if row.earliest > release:
        m.add(s >= row.earliest).only_enforce_if(chosen)
    if row.latest is not None and row.latest < limit:
        m.add(s + row.duration <= row.latest).only_enforce_if(chosen)


def add_capacity(v: BatchVars, problem: BatchProblem, modes: Mapping[str, str]) -> None:
    """One cumulative per shared resource over the optional intervals of its rows."""
    m = v.model
    users: dict[str, list[tuple[Any, int]]] = {k: [] for k in problem.resources}
    for j, job in enumerate(problem.jobs):
        for xi, i in zip(v.x[j], v.rows[j], strict=True):
            row = job.rows[i]
            if not row.usage:
                continue
            itv = m.new_optional_fixed_size_interval_var(v.start[j], row.duration, xi, f"i{j}_{i}")
            for key, demand in row.usage:
                users[key].append((itv, demand))
                cap = problem.resources[key].capacity
                if demand > cap and modes.get(capacity_req(key), HARD) == ASSUME:
                    lit = v.literal.setdefault(capacity_req(key), m.new_bool_var(f"a_capacity:{key}"))
                    m.add_implication(xi, lit.Not())
    for key, res in problem.resources.items():
        items = users[key]
        total = sum(d for _, d in items)
        mode = modes.get(capacity_req(key), HARD)
        cap = res.capacity
        slack = max(0, total - cap)
        if res.kind == "reservation":
            high = cap if mode == HARD else cap + slack
            r_high = max(0, min(high, total))
            r = v.reserve[key] = m.new_int_var(0, r_high, f"R_{key}")
            v.cost_terms.append((r, res.commitment_cents, r_high))
            if mode == ASSUME:
                lit = v.literal.setdefault(capacity_req(key), m.new_bool_var(f"a_cap:{key}"))
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
            lit = v.literal.setdefault(capacity_req(key), m.new_bool_var(f"a_cap:{key}"))
            capacity = cap + slack - slack * lit  # lit true: the stated capacity
        else:
            capacity = v.capacity[key] = m.new_int_var(cap, cap + slack, f"C_{key}")
            v.overshoot.append(capacity - cap)
        if total > cap:  # otherwise the resource can never be over-used
            m.add_cumulative([i for i, _ in items], [d for _, d in items], capacity)


def energy_windows(
    problem: BatchProblem,
    rows: Sequence[Sequence[int]],
    modes: Mapping[str, str],
    reservations: bool = False,
    ends_of: Collection[int] | None = None,
) -> Iterator[tuple[str, tuple[int, int], list[tuple[int, int, int]]]]:
    """Energetic-reasoning windows that can bind: (resource, (a, b), [(job, row, energy)]).

    For windows [a, b) with a a release and b a due time, Σ demand × (the part of the row
    that must fall inside [a, b) whatever its start) ≤ capacity × (b − a) holds in every
    schedule; only windows whose rows could exceed that are yielded. Mandatory part of a row
    of duration d in window [r, due): max(0, min(d, b − a, r + d − a, b − due + d))
    (Baptiste, Le Pape, Nuijten 2001, §3.3). Reservations (capacity R, a variable) are
    yielded only if `reservations`, tested against their largest R. `ends_of`: the jobs
    (indices) whose releases and dues are the windows' ends (default every job; every job's
    rows still count inside each window).
    """
    ends = problem.jobs if ends_of is None else [problem.jobs[j] for j in ends_of]
    releases = sorted({j.release for j in ends})
    dues = sorted({j.due if modes.get(deadline_req(j), HARD) == HARD else problem.horizon for j in ends})
    for key, res in problem.resources.items():
        if (res.kind == "reservation" and not reservations) or modes.get(capacity_req(key), HARD) != HARD:
            continue
        terms: list[tuple[int, int, int, int, int, int]] = []  # release, due, d, job, row, demand
        for j, job in enumerate(problem.jobs):
            due = job.due if modes.get(deadline_req(job), HARD) == HARD else problem.horizon
            for i in rows[j]:
                row = job.rows[i]
                for k, demand in row.usage:
                    if k == key:
                        terms.append((*job.bounds(row, due), row.duration, j, i, demand))
        if len(terms) < 2:
            continue
        yield from _binding_windows(key, res.capacity, terms, releases, dues)


def _binding_windows(
    key: str,
    capacity: int,
    terms: Sequence[tuple[int, int, int, int, int, int]],
    releases: Sequence[int],
    dues: Sequence[int],
) -> Iterator[tuple[str, tuple[int, int], list[tuple[int, int, int]]]]:
    """energy_windows for one resource: the mandatory parts of every term in every window
    [a, b) at once (numpy, one a at a time), the windows whose energy can pass capacity."""
    r, due, d, job, row, demand = (np.array(c, dtype=np.int64) for c in zip(*terms, strict=True))
    bs = np.array(dues, dtype=np.int64)
    for a in releases:
        b = bs[bs > a]
        if not len(b):
            continue
        part = np.minimum(
            np.minimum(d[:, None], (b - a)[None, :]),
            np.minimum((r + d - a)[:, None], b[None, :] - due[:, None] + d[:, None]),
        )
        energy = demand[:, None] * np.maximum(part, 0)
        binding = ((part > 0).sum(axis=0) > 1) & (energy.sum(axis=0) > capacity * (b - a))
        for col in np.flatnonzero(binding):
            inside = np.flatnonzero(part[:, col] > 0)
            yield (
                key,
                (a, int(b[col])),
                [(int(job[t]), int(row[t]), int(energy[t, col])) for t in inside],
            )


def add_energy_bounds(
    v: BatchVars, problem: BatchProblem, modes: Mapping[str, str], ends_of: Collection[int] | None = None
) -> None:
    """Redundant linear cuts (energetic reasoning, energy_windows) on the choice literals.

    Implied by the cumulatives, but linear in the choice literals, so CP-SAT's LP relaxation
    sees that the cheap shared resources (owned boxes, quotas) run out and the lower bound
    rises toward the optimum. `ends_of`: as in energy_windows.
    """
    lit = {(j, i): xi for j in range(len(v.rows)) for xi, i in zip(v.x[j], v.rows[j], strict=True)}
    for key, (a, b), inside in energy_windows(problem, v.rows, modes, ends_of=ends_of):
        limit = problem.resources[key].capacity * (b - a)
        v.model.add(
            cp_model.LinearExpr.weighted_sum([lit[j, i] for j, i, _ in inside], [e for _, _, e in inside])
            <= limit
        )


def symmetry_groups(
    problem: BatchProblem, rows: Sequence[Sequence[int]], modes: Mapping[str, str]
) -> list[list[int]]:
    """Groups (file order, two or more) of identical jobs: same rows, window, penalty and
    priority under hard deadlines."""
    groups: dict[tuple, list[int]] = {}
    for j, job in enumerate(problem.jobs):
        if modes.get(deadline_req(job), HARD) != HARD:
            continue
        sig = (
            job.release,
            job.due,
            job.penalty_cents,
            job.spec.priority,
            tuple(
                (
                    job.rows[i].cost_cents,
                    job.rows[i].duration,
                    job.rows[i].usage,
                    job.rows[i].candidate.offering.key,
                    job.rows[i].candidate.instances,
                )
                for i in rows[j]
            ),
        )
        groups.setdefault(sig, []).append(j)
    return [g for g in groups.values() if len(g) > 1]


def add_symmetry_breaking(v: BatchVars, problem: BatchProblem, modes: Mapping[str, str]) -> None:
    """Identical jobs (symmetry_groups) start in file order, and a later one is dropped
    whenever an earlier one is: any plan can be permuted into that order."""
    for members in symmetry_groups(problem, v.rows, modes):
        for a, b in zip(members, members[1:], strict=False):
            v.model.add(v.start[a] <= v.start[b])
            if v.drop[a] is not None and v.drop[b] is not None:
                v.model.add_implication(v.drop[a], v.drop[b])


def add_objective(v: BatchVars) -> None:
    """Minimise cost in cents; any relaxation (overshoot) first, weighted above every cost."""
    cost = cp_model.LinearExpr.weighted_sum([t for t, _, _ in v.cost_terms], [c for _, c, _ in v.cost_terms])
    if v.overshoot:
        weight = v.overshoot_weight = sum(coef * high for _, coef, high in v.cost_terms) + 1  # > any cost
        v.model.minimize(weight * sum(v.overshoot) + cost)
    else:
        v.model.minimize(cost)


def build_model(
    problem: BatchProblem,
    modes: Mapping[str, str] | None = None,
    objective: bool = True,
    symmetry: bool = True,
    unplaced: Collection[int] = (),
    energy: bool = True,
    energy_ends: Collection[int] | None = None,
) -> BatchVars:
    """The CP-SAT model of `problem`.

    Args:
        problem: jobs with their rows and the shared resources.
        modes: requirement id (deadline:<job>, capacity:<resource>) -> hard (default), assume
            or minimise (see the module docstring).
        objective: add the cost objective (off for pure feasibility checks).
        symmetry: start identical jobs in file order (add_symmetry_breaking).
        unplaced: must-run jobs a first plan left out, which the model may leave out too at
            a cost above every plan's (add_choice), so that first plan is a complete hint.
        energy: add the energetic-reasoning cuts (add_energy_bounds); off for large batches,
            where they grow to ~10^5-10^6 terms and CP-SAT's presolve of them alone takes
            longer than the time limit (the Benders master keeps them for the bound).
        energy_ends: the jobs whose releases and dues end the energy windows (default all).

    Returns:
        The variable container, its `model` ready to solve.
    """
    modes = modes or {}
    v = BatchVars(cp_model.CpModel())
    add_choice(v, problem, modes, unplaced)
    add_windows(v, problem, modes)
    add_capacity(v, problem, modes)
    if energy:
        add_energy_bounds(v, problem, modes, energy_ends)
    if symmetry:
        add_symmetry_breaking(v, problem, modes)
    if objective:
        add_objective(v)
    return v


def read_plan(
    v: BatchVars, problem: BatchProblem, result: SolveResult
) -> tuple[list[ScheduledJob], dict[str, int]]:
    """Each job's chosen row and start, and the instances reserved, from a solved model."""
    s = result.solver
    jobs = []
    for j, job in enumerate(problem.jobs):
        chosen = [i for xi, i in zip(v.x[j], v.rows[j], strict=True) if s.boolean_value(xi)]
        row = job.rows[chosen[0]] if chosen else None
        start = int(s.value(v.start[j])) if row is not None else None
        jobs.append(ScheduledJob(job, row, start, problem.grid.unit_h))
    reserved = {k: int(s.value(r)) for k, r in v.reserve.items()}
    return jobs, reserved
