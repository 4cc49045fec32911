"""Large batches: improve a plan window by window (large neighbourhood search, Shaw 1998).

On a few hundred jobs the full CP-SAT model barely moves from its first plan within the time
limit (200 generated jobs on 2 boxes: the greedy plan, 2.17% above the bound, at 30 s). Jobs
only meet while they run at the same time, so the plan is re-optimised one time window
[a, b) at a time (CP-SAT's own time-window neighbourhoods, done here on a model small enough
to solve): the jobs placed inside [a, b), and the jobs left out or dropped whose window meets
it, are freed, each within its window cut to [a, b) (a plan there keeps every job inside its
own window); every other job keeps its row and start. CP-SAT (the model of model.py, energy
cuts included) solves the freed jobs against what the kept ones occupy, hinted with their
current places; a kept job running inside the window enters that small model as a job with
one row and a window exactly its slot (so it stays put). A window's answer replaces the plan
only when it leaves fewer must-run jobs out, or as many and costs less; a reserved count R
is chosen again, never below what the kept jobs use at once, its commitment counted.
Sweeps over the horizon repeat, the windows shifted by a quarter of their
width every other sweep and wider every two sweeps (WIDTHS), until a sweep of each width and
shift in a row finds nothing better or the time is up.
Every plan this returns is a plan of the batch (solve.py validates the final one).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from optimizer.errors import SolverError
from optimizer.solve.batch.hints import GreedyPlan, add_hints
from optimizer.solve.batch.model import build_model
from optimizer.solve.batch.problem import BatchProblem, JobRows, choice_cost_cents
from optimizer.solve.cpsat.solver import SolverConfig, solve

__all__ = ["WINDOW_H", "improve_by_windows"]

#: CHOICE: hours of one window (windows overlap by half): a window of 200 generated jobs then
#: frees ~25 (CP-SAT solves such a neighbourhood to optimality within a second)
WINDOW_H = 3 * 24.0
#: CHOICE: window widths in turn (× WINDOW_H): wider windows free the jobs a narrower one
#: cuts short (a left-out job's row may need more than half a window)
WIDTHS = (1.0, 1.5, 2.0)
#: CHOICE (measured, 200 generated jobs, 21 s of windows from the same start, load ~2): one
#: CP-SAT worker per window (a single search, no interleaved batches) ended at $33,931-33,963
#: in three runs, two workers at $34,097-34,107 in two
WINDOW_WORKERS = 1
#: the least time (s) worth a window's CP-SAT solve
MIN_WINDOW_S = 0.5
#: windows solved at once (_pairs: two that do not meet), one CP-SAT worker each: the target
#: machine's 2 cores (one window at a time left one idle)
PARALLEL_WINDOWS = 2


def _windows(problem: BatchProblem, sweep: int) -> list[tuple[int, int]]:
    """The windows of one sweep: WIDTHS[sweep // 2 % len(WIDTHS)] × WINDOW_H hours, each
    starting half a window after the last, the first a quarter of a window later on odd
    sweeps."""
    width = max(2, problem.grid.up(WINDOW_H * WIDTHS[sweep // 2 % len(WIDTHS)]))
    step = width // 2
    last = max(job.due for job in problem.jobs)
    out, a = [], min(job.release for job in problem.jobs) + (width // 4 if sweep % 2 else 0) - step
    while a + width < last + step:
        out.append((max(0, a), a + width))
        a += step
    return out


def _neighbourhood(
    problem: BatchProblem, plan: GreedyPlan, a: int, b: int
) -> tuple[list[int], list[JobRows]]:
    """The jobs freed in [a, b) (by index), each as the job with its window cut to [a, b),
    and the kept jobs running there, each as a job with its one row and a window exactly its
    slot, and must run there even if it is droppable (it stays in the plan). Freed: the jobs
    placed inside [a, b) and the jobs left out or dropped whose window meets it."""
    free, cut = [], []
    for j, (i, t) in enumerate(plan.plan):
        job = problem.jobs[j]
        low, high = max(a, job.release), min(b, job.due)
        # left out or dropped: freed where its window meets [a, b); placed: freed inside it
        left_out = (i is None or t is None) and high > low
        if left_out or (i is not None and t is not None and t >= a and t + job.rows[i].duration <= b):
            free.append(j)
            cut.append(replace(job, release=low, due=high))
    freed = set(free)
    kept = []
    for j, (i, t) in enumerate(plan.plan):
        if j in freed or i is None or t is None:
            continue
        row = problem.jobs[j].rows[i]
        if row.usage and t < b and t + row.duration > a:
            # must run: a droppable kept job dropped by the window's model would free its
            # slot there while the plan keeps it (500 generated jobs: 4 boxes in use of 2)
            spec = replace(problem.jobs[j].spec, penalty_usd=None)
            kept.append(JobRows(spec, [row], t, t + row.duration))
    return free, cut + kept


def _kept_peaks(problem: BatchProblem, plan: GreedyPlan, free: list[int]) -> dict[str, int]:
    """Per reservation, the most instances the jobs not freed use at once over the horizon."""
    freed = set(free)
    use = {
        k: np.zeros(problem.horizon + 1, dtype=np.int64)
        for k, r in problem.resources.items()
        if r.kind == "reservation"
    }
    for j, (i, t) in enumerate(plan.plan):
        if j in freed or i is None or t is None:
            continue
        row = problem.jobs[j].rows[i]
        for key, demand in row.usage:
            if key in use:
                use[key][t : t + row.duration] += demand
    return {k: int(u.max()) for k, u in use.items()}


def _solve_window(
    problem: BatchProblem,
    plan: GreedyPlan,
    free: list[int],
    jobs: list[JobRows],
    cfg: SolverConfig,
) -> GreedyPlan | None:
    """The plan with the freed jobs re-placed by CP-SAT within cfg's time (None: no answer)."""
    sub = BatchProblem(jobs, problem.resources, problem.grid, problem.horizon_h)
    left_out = {k for k, j in enumerate(free) if plan.plan[j][0] is None and jobs[k].penalty_cents is None}
    # energy windows end only where a freed job's window does: a kept job's slot adds ends
    # whose windows hold no choice (500 generated jobs: 13,663 windows in 20 windows' models,
    # 3.7 s of 14.4 s, cProfile)
    v = build_model(sub, unplaced=left_out, energy_ends=range(len(free)))
    for key, low in _kept_peaks(problem, plan, free).items():
        v.model.add(v.reserve[key] >= low)  # what the kept jobs use at once, anywhere
    places = [plan.plan[j] for j in free] + [(0, job.release) for job in jobs[len(free) :]]
    add_hints(v, sub, GreedyPlan(places, dict(plan.reserved), 0, ()), complete=True)
    try:
        result = solve(v.model, cfg)
    except SolverError:
        return None
    if result.objective is None:
        return None
    s = result.solver
    new = list(plan.plan)
    for k, j in enumerate(free):
        chosen = [i for xi, i in zip(v.x[k], v.rows[k], strict=True) if s.boolean_value(xi)]
        new[j] = (chosen[0], int(s.value(v.start[k]))) if chosen else (None, None)
    missing = tuple(
        job.name
        for job, (i, _) in zip(problem.jobs, new, strict=True)
        if i is None and job.penalty_cents is None
    )
    reserved = {key: int(s.value(r)) for key, r in v.reserve.items()}
    cost = choice_cost_cents(problem, [i for i, _ in new], reserved)
    return GreedyPlan(new, reserved, cost, missing)


def _rank(plan: GreedyPlan) -> tuple[int, int]:
    """Fewest must-run jobs left out, then cheapest."""
    return len(plan.missing), plan.cost_cents


def _pairs(windows: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """The sweep's windows in groups solved at once: each window with the next one that does
    not meet it (a sweep's windows overlap by half, so window n goes with window n + 2: 0 and
    2, 1 and 3, 4 and 6, ...), a window meeting every later one alone."""
    left, out = list(windows), []
    while left:
        a, b = left.pop(0)
        partner = next((w for w in left if w[0] >= b or w[1] <= a), None)
        if partner is not None and left.index(partner) <= 1:
            left.remove(partner)
            out.append([(a, b), partner])
        else:
            out.append([(a, b)])
    return out


def _merged(
    problem: BatchProblem, plan: GreedyPlan, answers: list[tuple[list[int], GreedyPlan]]
) -> GreedyPlan:
    """`plan` with each disjoint window's freed jobs placed as its answer: windows that do not
    meet free disjoint jobs that never run at the same time, so each answer's places stay
    valid beside the other's; each reservation at the larger R of the two."""
    new = list(plan.plan)
    reserved = dict(plan.reserved)
    for n, (free, answer) in enumerate(answers):
        for j in free:
            new[j] = answer.plan[j]
        for key, count in answer.reserved.items():
            reserved[key] = count if n == 0 else max(reserved.get(key, 0), count)
    missing = tuple(
        job.name
        for job, (i, _) in zip(problem.jobs, new, strict=True)
        if i is None and job.penalty_cents is None
    )
    cost = choice_cost_cents(problem, [i for i, _ in new], reserved)
    return GreedyPlan(new, reserved, cost, missing)


def _solve_group(
    problem: BatchProblem,
    plan: GreedyPlan,
    group: list[tuple[int, int]],
    cfg: SolverConfig,
    pool: ThreadPoolExecutor,
) -> GreedyPlan:
    """`plan` improved by the windows of `group`, solved at once (one CP-SAT search each, on
    threads: CP-SAT releases the GIL while it searches); both answers kept when together they
    beat each alone, else the better one."""
    jobs = []
    for a, b in group:
        free, window_jobs = _neighbourhood(problem, plan, a, b)
        if free:
            jobs.append((free, pool.submit(_solve_window, problem, plan, free, window_jobs, cfg)))
    answers = [(free, answer) for free, future in jobs if (answer := future.result()) is not None]
    candidates = [answer for _, answer in answers]
    if len(answers) == 2:
        candidates.append(_merged(problem, plan, answers))
    for candidate in candidates:
        if _rank(candidate) < _rank(plan):
            plan = candidate
    return plan


def _sweep(
    problem: BatchProblem,
    plan: GreedyPlan,
    windows: list[tuple[int, int]],
    deadline: float,
    cfg: SolverConfig,
    pool: ThreadPoolExecutor,
) -> GreedyPlan:
    """`plan` after one pass over `windows`, two disjoint windows at a time (_pairs), each group
    with an equal share of the time left (at least MIN_WINDOW_S), until `deadline`."""
    groups = _pairs(windows)
    for n, group in enumerate(groups):
        left = deadline - time.perf_counter()
        if left < MIN_WINDOW_S:
            break
        share = max(MIN_WINDOW_S, left / (len(groups) - n))
        plan = _solve_group(problem, plan, group, replace(cfg, time_limit_s=min(left, share)), pool)
    return plan


def improve_by_windows(
    problem: BatchProblem, plan: GreedyPlan, deadline: float, cfg: SolverConfig
) -> GreedyPlan:
    """`plan` improved window by window (module doc) until `deadline` (time.perf_counter).
    While must-run jobs are left out, each sweep is preceded by one window per such job, its
    own [release, due), so the search looks where they are missing first."""
    cfg = replace(cfg, workers=WINDOW_WORKERS)
    idle = 0  # sweeps in a row that found nothing better
    sweep = 0
    with ThreadPoolExecutor(max_workers=PARALLEL_WINDOWS) as pool:
        while idle < 2 * len(WIDTHS) and time.perf_counter() < deadline:  # every width and shift once
            before = _rank(plan)
            index = {job.name: job for job in problem.jobs}
            focus = [(index[name].release, index[name].due) for name in plan.missing]
            plan = _sweep(problem, plan, focus + _windows(problem, sweep), deadline, cfg, pool)
            sweep += 1
            idle = 0 if _rank(plan) < before else idle + 1
    return plan
