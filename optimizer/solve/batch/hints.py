"""Quick schedules without the solver: the greedy hint and the left shift after a solve."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from optimizer.solve.batch.model import BatchVars, symmetry_groups
from optimizer.solve.batch.problem import BatchProblem, Row, ScheduledJob, choice_cost_cents
from optimizer.solve.cpsat.solver import SolveResult

__all__ = [
    "GreedyPlan",
    "greedy_schedule",
    "greedy_plans",
    "repaired_plan",
    "earliest_start",
    "add_hints",
    "hint_solution",
    "free_capacity",
    "full_capacity",
    "book_row",
    "left_shift",
]


@dataclass(frozen=True)
class GreedyPlan:
    """A greedy schedule: (row, start) per job, the instances it reserves, its cost in cents
    (rows, dropped jobs' value, commitments) and the jobs it could not place (none: a plan)."""

    plan: list[tuple[int | None, int | None]]
    reserved: dict[str, int]
    cost_cents: int
    missing: tuple[str, ...]


def earliest_start(free: Mapping[str, np.ndarray], row: Row, low: int, high: int) -> int | None:
    """First t in [low, high] with every resource of `row` free enough over [t, t + d)."""
    if high < low:
        return None
    if not row.usage:
        return low
    end = high + row.duration  # only the steps a start in [low, high] can cover
    bad = np.zeros(end - low, dtype=bool)
    for key, demand in row.usage:
        bad |= free[key][low:end] < demand
    idx = bad.nonzero()[0]
    if idx.size == 0:
        return low
    # the free runs [previous bad step + 1, next bad step): the first long enough starts the
    # earliest fit (a run ending by `end` that holds the row starts by `high`)
    begins = np.concatenate(([0], idx + 1))
    long_enough = np.concatenate((idx, [end - low])) - begins >= row.duration
    return low + int(begins[np.argmax(long_enough)]) if long_enough.any() else None


def _job_order(problem: BatchProblem, first: Sequence[int]) -> list[int]:
    """Jobs in the order a greedy pass places them: `first`, then by deadline, release, file
    order."""
    early = set(first)
    jobs = problem.jobs
    return sorted(range(len(jobs)), key=lambda j: (j not in early, jobs[j].due, jobs[j].release, j))


def greedy_schedule(
    problem: BatchProblem,
    rows: Sequence[Sequence[int]],
    reserved: Mapping[str, int] | None = None,
    earliest_finish: bool = False,
    prefer: Sequence[int | None] | None = None,
    first: Sequence[int] = (),
    least_share: bool = False,
) -> list[tuple[int | None, int | None]]:
    """A quick feasible plan: jobs by deadline, each on its cheapest row (its single-job
    optimum) that still fits at the earliest start, else the next cheapest; droppable jobs
    that fit nowhere are dropped. Reservations hold `reserved` instances (default R = 0).
    `earliest_finish`: each job on the row that ends first where it fits (cheapest on ties),
    list scheduling that packs a crowded batch better than cheapest-first. `prefer`: a row
    per job tried before the others (a Benders master's choice, repaired into a schedule).
    `first`: jobs placed before all others (by deadline among themselves), e.g. the jobs an
    earlier pass left without a slot. `least_share`: each job on the row that takes the least
    share of what its resources still have free in the job's window (its demand × duration
    over their free capacity-steps there, the largest over its resources; cheapest on ties),
    so a crowded resource is spared while another has room (_share).

    Returns:
        (row index, start step) per job; (None, None) where nothing fits (a partial hint).
    """
    free = full_capacity(problem, reserved or {})
    out: list[tuple[int | None, int | None]] = [(None, None)] * len(problem.jobs)
    for j in _job_order(problem, first):
        job = problem.jobs[j]
        fits: list[tuple[tuple[float, ...], int, int]] = []
        preferred = None if prefer is None else prefer[j]
        free_in = {k: int(free[k][job.release : job.due].sum()) for k in free} if least_share else {}
        for i in sorted(
            rows[j], key=lambda i: (i != preferred, job.rows[i].cost_cents, job.rows[i].duration)
        ):
            row = job.rows[i]
            t = earliest_start(free, row, *job.start_range(row))
            if t is None:
                continue
            if least_share:
                fits.append(((_share(free_in, row), row.cost_cents), i, t))
            elif earliest_finish:
                fits.append(((t + row.duration, row.cost_cents), i, t))
            else:
                fits.append(((), i, t))
                break
        if fits:
            _, i, t = min(fits, key=lambda f: f[0])
            book_row(free, job.rows[i], t)
            out[j] = (i, t)
    return out


def _share(free_in: Mapping[str, int], row: Row) -> float:
    """The largest share of a resource's free capacity-steps in the job's window (`free_in`)
    that `row` takes (0 for a row on no shared resource)."""
    return max((demand * row.duration / max(1, free_in[key]) for key, demand in row.usage), default=0.0)


#: CHOICE: greedy passes per variant; each pass places first the jobs every earlier pass left
#: without a slot (a crowded batch of 500 jobs needs 2-3; each pass is ~0.2 s at 500 jobs)
GREEDY_PASSES = 6
#: the greedy passes' row rules (greedy_schedule): cheapest, earliest finish, least share of
#: the free capacity (added for crowded batches: on 500 generated jobs on 2 boxes, one pass
#: by deadline with R = 1 leaves 18 jobs without a slot, against 27 cheapest-first and 26
#: earliest-finish; measured)
GREEDY_RULES = ("cheapest", "finish", "share")


def _rank(g: GreedyPlan) -> tuple[int, int]:
    """Fewest jobs without a slot, then (only for a plan: a partial one's cost means nothing)
    cheapest; ties keep the earlier pass."""
    return len(g.missing), 0 if g.missing else g.cost_cents


def _greedy_plan(
    problem: BatchProblem,
    rows: Sequence[Sequence[int]],
    reserved: Mapping[str, int],
    rule: str,
) -> GreedyPlan:
    """The best greedy pass of one variant (`rule`: one of GREEDY_RULES; _rank). A job
    left out is placed before the others in the next pass (and stays first), until every
    job is placed or GREEDY_PASSES are run."""
    first: list[int] = []
    best: GreedyPlan | None = None
    for _ in range(GREEDY_PASSES):
        plan = greedy_schedule(
            problem, rows, reserved, rule == "finish", first=first, least_share=rule == "share"
        )
        left = [
            j
            for j, (job, (i, _)) in enumerate(zip(problem.jobs, plan, strict=True))
            if i is None and job.penalty_cents is None
        ]
        chosen = [i for i, _ in plan]
        g = GreedyPlan(
            plan,
            dict(reserved),
            choice_cost_cents(problem, chosen, reserved),
            tuple(problem.jobs[j].name for j in left),
        )
        if best is None or _rank(g) < _rank(best):
            best = g
        if not left or set(left) <= set(first):
            break
        first += [j for j in left if j not in first]
    assert best is not None  # GREEDY_PASSES >= 1
    return best


def greedy_plans(problem: BatchProblem, rows: Sequence[Sequence[int]]) -> list[GreedyPlan]:
    """The greedy schedules (cheapest row first, earliest finish first, least share of the
    free capacity first: GREEDY_RULES) with no reserved instance and with every reservation
    at its most, best first: fewest jobs left without a slot (none: a plan), then cheapest.
    Each is the best of its passes (_greedy_plan)."""
    most = {k: r.capacity for k, r in problem.resources.items() if r.kind == "reservation"}
    plans = [
        _greedy_plan(problem, rows, reserved, rule)
        for reserved in (({k: 0 for k in most}, most) if most else ({},))
        for rule in GREEDY_RULES
    ]
    return sorted(plans, key=lambda g: (len(g.missing), g.cost_cents))


def repaired_plan(
    problem: BatchProblem,
    rows: Sequence[Sequence[int]],
    prefer: Sequence[int | None],
    reserved: Mapping[str, int],
) -> GreedyPlan | None:
    """The master's choice made a schedule: each job on its preferred row where it still fits
    (jobs by deadline), else on its cheapest row that does; None when a job that must run
    fits nowhere. Dropped (None) preferences are kept dropped."""
    kept = [[] if p is None else rows[j] for j, p in enumerate(prefer)]
    plan = greedy_schedule(problem, kept, reserved, prefer=prefer)
    if any(i is None and job.penalty_cents is None for job, (i, _) in zip(problem.jobs, plan, strict=True)):
        return None
    chosen = [i for i, _ in plan]
    return GreedyPlan(plan, dict(reserved), choice_cost_cents(problem, chosen, reserved), ())


def _in_symmetry_order(
    v: BatchVars, problem: BatchProblem, plan: Sequence[tuple[int | None, int | None]]
) -> list[tuple[int | None, int | None]]:
    """The plan with identical jobs' places permuted (it costs the same) into the order
    add_symmetry_breaking imposes: by start, the dropped ones last."""
    out = list(plan)
    for members in symmetry_groups(problem, v.rows, {}):
        places = sorted((plan[j] for j in members), key=lambda p: (p[0] is None, p[1] or 0))
        for j, place in zip(members, places, strict=True):
            out[j] = place
    return out


def add_hints(
    v: BatchVars, problem: BatchProblem, greedy: GreedyPlan | None = None, complete: bool = False
) -> None:
    """Hint the model with a greedy schedule (default: the one with R = 0 everywhere); every
    variable gets a value (a dropped job's start: its latest). `complete`: identical jobs'
    places also put in the symmetry-breaking order, so a plan that places every job, or
    leaves out only jobs the model may leave out, is a complete feasible hint (CP-SAT starts
    from it as its first solution). CHOICE: only when jobs are left out (there the start must
    be a solution); otherwise the hint stays a guide as before (100 generated jobs on 2 boxes,
    20 s: $11,908-12,304 either way, the spread of the loaded machine's timing)."""
    if greedy is None:
        greedy = GreedyPlan(greedy_schedule(problem, v.rows), {}, 0, ())
    plan = _in_symmetry_order(v, problem, greedy.plan) if complete else greedy.plan
    for j, (i, t) in enumerate(plan):
        if i is None or t is None:
            if v.drop[j] is not None:
                v.model.add_hint(v.drop[j], 1)
                for xi in v.x[j]:
                    v.model.add_hint(xi, 0)
                v.model.add_hint(v.start[j], v.start[j].domain.max())
            continue
        for xi, k in zip(v.x[j], v.rows[j], strict=True):
            v.model.add_hint(xi, int(k == i))
        if v.drop[j] is not None:
            v.model.add_hint(v.drop[j], 0)
        v.model.add_hint(v.start[j], t)
    for key, r in v.reserve.items():
        v.model.add_hint(r, greedy.reserved.get(key, 0))


def full_capacity(problem: BatchProblem, reserved: Mapping[str, int]) -> dict[str, np.ndarray]:
    """Each resource's capacity per step with no job placed (a reservation: the instances
    `reserved` of it, R)."""
    return {
        k: np.full(
            problem.horizon, reserved.get(k, 0) if r.kind == "reservation" else r.capacity, dtype=np.int64
        )
        for k, r in problem.resources.items()
    }


def book_row(free: Mapping[str, np.ndarray], row: Row, t: int) -> None:
    """`row`'s use of each resource taken from `free` over its run from step `t`."""
    for key, demand in row.usage:
        free[key][t : t + row.duration] -= demand


def free_capacity(problem: BatchProblem, plan: GreedyPlan) -> dict[str, np.ndarray]:
    """Each resource's free capacity per step under `plan` (a reservation: its R reserved)."""
    free = full_capacity(problem, plan.reserved)
    for job, (i, t) in zip(problem.jobs, plan.plan, strict=True):
        if i is not None and t is not None:
            book_row(free, job.rows[i], t)
    return free


def left_shift(
    problem: BatchProblem, jobs: list[ScheduledJob], reserved: Mapping[str, int]
) -> list[ScheduledJob]:
    """Phase 2: rows and R kept (so the cost), each job moved to its earliest feasible start.

    Jobs are placed in order of their phase-1 start (higher priority first on ties). A job
    placed earlier never occupies more of any later time than it did, so each job's phase-1
    slot stays free and its new start is ≤ the old one: release, deadlines and capacities
    still hold (validate_batch re-checks).
    """
    free = full_capacity(problem, reserved)
    out = list(jobs)
    placed = [(j, s, s.row, s.start) for j, s in enumerate(jobs) if s.row is not None and s.start is not None]
    placed.sort(key=lambda p: (p[3], -p[1].job.spec.priority, p[0]))
    for j, sj, row, start in placed:
        t = earliest_start(free, row, sj.job.bounds(row)[0], start) if row.usage else sj.job.release
        t = start if t is None else t
        book_row(free, row, t)
        out[j] = replace(sj, start=t)
    return out


def hint_solution(v: BatchVars, result: SolveResult) -> None:
    """Every decision variable of `v` hinted with its value in `result`."""
    s = result.solver
    v.model.clear_hints()
    for j, xs in enumerate(v.x):
        for xi in xs:
            v.model.add_hint(xi, s.boolean_value(xi))
        if v.drop[j] is not None:
            v.model.add_hint(v.drop[j], s.boolean_value(v.drop[j]))
        v.model.add_hint(v.start[j], s.value(v.start[j]))
    for r in v.reserve.values():
        v.model.add_hint(r, s.value(r))
