"""When no plan found in time runs every must-run job: the jobs left out and each one's
nearest fix, measured against the best plan found.

A large crowded batch may have no plan at all, or one the search did not reach within the
time limit; proving which takes longer than the limit (500 generated jobs on 2 boxes). Rather
than no answer, the user gets the jobs the best plan found leaves without a slot and, for each,
against that plan's free capacity: the deadline that would let it run (its earliest end on
any of its rows once the deadline is lifted to the horizon) and the capacity that would (the
least extra GPUs, boxes or instances of one resource over one of its rows' intervals in its
window). Neither is proven the least change: the answer says so. When the Benders master's
relaxation has no solution, no plan exists: the answer says proven (PROVEN).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import numpy as np

from optimizer.solve.batch.hints import GreedyPlan, earliest_start, free_capacity
from optimizer.solve.batch.problem import BatchProblem, Explanation, Fix
from optimizer.units import hours_to_days

__all__ = ["PROVEN", "left_out_explanation", "searched_phases"]

#: why a batch whose Benders master has no solution has no plan (benders._first_bound)
PROVEN = (
    "proven impossible: no choice of rows fits the GPU-hours the jobs must run inside some "
    "time window (the relaxation by energetic reasoning over release-to-deadline windows, "
    "every reservation at its most, has no solution), so some jobs must move or the capacity grow"
)

#: what raising each kind of resource is called in a fix (as explain.py words it)
_RAISE = {"quota": "raise", "owned": "grow", "reservation": "raise the maximum of"}


def _delay_fix(problem: BatchProblem, free: dict[str, np.ndarray], j: int, base_cents: int) -> Fix | None:
    """The latest deadline the job would need on the plan's free capacity: its earliest
    end over its rows with the deadline lifted to the horizon (cheaper row on ties)."""
    job = problem.jobs[j]
    best: tuple[int, int, int] | None = None
    for i, row in enumerate(job.rows):
        t = earliest_start(free, row, *job.start_range(row, problem.horizon))
        if t is not None and (best is None or (t + row.duration, row.cost_cents) < best[:2]):
            best = (t + row.duration, row.cost_cents, i)
    if best is None:
        return None
    end_step, cents, i = best
    end_h = end_step * problem.grid.unit_h
    old_h = job.spec.deadline_h if job.spec.deadline_h is not None else problem.horizon_h
    change = (
        f"move the deadline of {job.name!r} from day {hours_to_days(old_h):.2f} to day "
        f"{hours_to_days(end_h):.2f} (+{end_h - old_h:.1f} h)"
    )
    detail = {"job": job.name, "deadline_hour": old_h, "needed_hour": round(end_h, 2)}
    return Fix(f"deadline:{job.name}", change, (base_cents + cents) / 100, {f"deadline:{job.name}": detail})


def _raise_fix(
    problem: BatchProblem, free: dict[str, np.ndarray], j: int, rows: Sequence[int], base_cents: int
) -> Fix | None:
    """The least extra capacity of one resource that lets the job run in its window on the
    plan's free capacity: per row and start, the largest shortfall over its interval (the
    smallest share of the resource's capacity wins, then the cheaper row)."""
    job = problem.jobs[j]
    best: tuple[float, int, str, int] | None = None
    for i in rows:
        row = job.rows[i]
        low, high = job.start_range(row)
        if high < low or len(row.usage) != 1:
            continue
        ((key, demand),) = row.usage
        short = np.maximum(0, demand - free[key][low : high + row.duration])
        windows = np.lib.stride_tricks.sliding_window_view(short, row.duration).max(axis=1)
        need = int(windows.min())
        cap = problem.resources[key].capacity
        if best is None or (need / cap, row.cost_cents) < best[:2]:
            best = (need / cap, row.cost_cents, key, need)
    if best is None or best[3] <= 0:
        return None
    _, cents, key, need = best
    res = problem.resources[key]
    change = (
        f"{_RAISE[res.kind]} {res.label} by {need} {res.unit}, from {res.capacity} to "
        f"{res.capacity + need} (for {job.name!r})"
    )
    detail = {"resource": key, "capacity": res.capacity, "needed": res.capacity + need, "jobs": [job.name]}
    return Fix(f"capacity:{key}", change, (base_cents + cents) / 100, {f"capacity:{key}": detail})


def left_out_explanation(
    problem: BatchProblem,
    rows: Sequence[Sequence[int]],
    plan: GreedyPlan,
    why: str,
    proven: bool = False,
    factor: float | None = None,
) -> Explanation:
    """The must-run jobs `plan` leaves out and each one's nearest fixes (the module
    docstring); `why` says what searched and for how long; `proven`: the Benders master's
    relaxation has no solution, so no plan runs every job (PROVEN); `factor`: the least growth
    of every quota and owned resource that gives the relaxation one (Master.capacity_factor)."""
    free = free_capacity(problem, plan)
    left = [j for j, (i, _) in enumerate(plan.plan) if i is None and problem.jobs[j].penalty_cents is None]
    fixes: list[Fix] = []
    parts = []
    for j in left:
        base = plan.cost_cents
        ways = (_delay_fix(problem, free, j, base), _raise_fix(problem, free, j, rows[j], base))
        mine = [f for f in ways if f is not None]
        fixes += mine
        none = f"{problem.jobs[j].name!r}: no single change found"
        parts.append(" or ".join(f.change for f in mine) or none)
    names = [problem.jobs[j].name for j in left]
    shown = ", ".join(repr(n) for n in names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    message = (
        f"no plan found runs every job: the best plan found ({len(problem.jobs) - len(left)} of "
        f"{len(problem.jobs)} jobs placed, {why}) leaves {shown} without a slot in "
        f"{'its' if len(left) == 1 else 'their'} window; "
        + (PROVEN if proven else "not proven impossible (a larger time limit may find a plan)")
        + (
            f" (even the relaxation needs every quota and owned resource ×{factor:.2f})"
            if proven and factor
            else ""
        )
        + ". Nearest fix against that plan, each job alone: "
        + "; ".join(parts)
    )
    conflict = [f"deadline:{n}" for n in names]
    labels = [f"job {n!r} has no slot in its window" for n in names]
    return Explanation(conflict, labels, message, fixes)


def searched_phases(
    problem: BatchProblem,
    stats: Mapping[str, float],
    cpsat_s: float,
    started: float,
    time_limit_s: float,
    last: str = "CP-SAT",
) -> str:
    """Where the time went: the phases and the limit (`last`: the phase after Benders, if any)."""
    return (
        f"{time.perf_counter() - started:.1f} s of the {time_limit_s:g} s time limit: enumeration "
        f"{problem.enumerate_s:.1f} s, a greedy plan and its repair, Benders decomposition "
        f"{stats['wall_s']:.1f} s over {stats['rounds']} round{'' if stats['rounds'] == 1 else 's'}"
        + (f", {last} {cpsat_s:.1f} s" if last else "")
    )
