"""Complete a greedy plan that leaves must-run jobs out: ejection repair.

A greedy pass (hints.py) places jobs one at a time and keeps each where it first fits; on a
crowded batch some must-run job then finds every resource full in its window (500 generated
jobs on 2 boxes: 8 left out). The repair takes a left-out job, puts it where its row would
overload its resources least (capacity-normalised overload summed over the interval), ejects
the placed jobs that overlap the overload until it fits, and places each ejected job again
on its cheapest row that still fits (a droppable job that fits nowhere is dropped: the model
allows it, at its value). An ejected must-run job that fits nowhere is left out in turn and
repaired later; a job placed by a move may not be ejected for the next TABU_MOVES moves
(tabu search, Glover 1989), so the moves do not undo each other. The moves are capped by
count, so the answer is deterministic; the plan with the fewest jobs left out is returned.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from optimizer.solve.batch.hints import GreedyPlan, earliest_start, free_capacity
from optimizer.solve.batch.problem import BatchProblem, Row, choice_cost_cents

__all__ = ["MAX_MOVES", "TABU_MOVES", "repair_plan"]

#: CHOICE: moves before the repair gives up (500 generated jobs need ~20-200; a move costs
#: ~1 ms there); a count, not a time, keeps the answer deterministic
MAX_MOVES = 400
#: CHOICE: moves during which a job the repair just placed may not be ejected
TABU_MOVES = 7
#: CHOICE: random noise added to each start's overload (in capacity-steps), so ties and
#: near-ties go different ways and the moves do not cycle; fixed seed: deterministic
NOISE = 1.0
SEED = 0


@dataclass
class _State:
    """A plan under repair: free capacity per resource and step, each job's place."""

    problem: BatchProblem
    rows: Sequence[Sequence[int]]
    free: dict[str, np.ndarray]
    place: list[tuple[int | None, int | None]]
    tabu: dict[int, int] = field(default_factory=dict)  # job -> last move it is protected
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(SEED))

    def put(self, j: int, i: int, t: int) -> None:
        row = self.problem.jobs[j].rows[i]
        for key, demand in row.usage:
            self.free[key][t : t + row.duration] -= demand
        self.place[j] = (i, t)

    def take(self, j: int) -> None:
        i, t = self.place[j]
        assert i is not None and t is not None  # only placed jobs are taken out
        row = self.problem.jobs[j].rows[i]
        for key, demand in row.usage:
            self.free[key][t : t + row.duration] += demand
        self.place[j] = (None, None)

    def cheapest_fit(self, j: int) -> tuple[int, int] | None:
        """The job's cheapest row that fits somewhere in its window, at its earliest start."""
        job = self.problem.jobs[j]
        for i in sorted(self.rows[j], key=lambda i: (job.rows[i].cost_cents, job.rows[i].duration)):
            row = job.rows[i]
            t = earliest_start(self.free, row, *job.start_range(row))
            if t is not None:
                return i, t
        return None


def _least_overload(state: _State, j: int) -> tuple[int, int] | None:
    """The (row, start) of job j whose resources lack the least capacity over its interval,
    each resource's shortfall divided by its capacity (cheaper row on ties); None: no row
    fits its window at all."""
    job, caps = state.problem.jobs[j], state.problem.resources
    best: tuple[float, int, int, int] | None = None
    for i in state.rows[j]:
        row = job.rows[i]
        low, high = job.start_range(row)
        if high < low:
            continue
        over = np.zeros(high - low + 1)
        for key, demand in row.usage:
            short = np.maximum(0, demand - state.free[key][low : high + row.duration]) / caps[key].capacity
            run = np.concatenate(([0.0], np.cumsum(short)))
            over += run[row.duration :] - run[: high - low + 1]
        over += state.rng.random(len(over)) * NOISE
        t = int(np.argmin(over))
        score = (float(over[t]), row.cost_cents, i, low + t)
        if best is None or score < best:
            best = score
    return None if best is None else (best[2], best[3])


def _eject_for(state: _State, j: int, row: Row, t: int, move: int) -> list[int]:
    """Take out placed jobs overlapping the shortfall of `row` at `t` until it fits: jobs
    not under tabu first, then those covering most of the short steps; returns them."""
    out: list[int] = []
    end = t + row.duration
    for key, demand in row.usage:
        while True:
            short = state.free[key][t:end] < demand
            if not short.any():
                break
            steps = np.flatnonzero(short) + t
            users = []
            for k, (i, s) in enumerate(state.place):
                if i is None or s is None or k == j:
                    continue
                other = state.problem.jobs[k].rows[i]
                if dict(other.usage).get(key, 0) == 0:
                    continue
                cover = int(((steps >= s) & (steps < s + other.duration)).sum())
                if cover:
                    must = state.problem.jobs[k].penalty_cents is None
                    users.append((state.tabu.get(k, -1) >= move, must, -cover, other.cost_cents, k))
            k = min(users)[-1]
            state.take(k)
            out.append(k)
    return out


def repair_plan(
    problem: BatchProblem, rows: Sequence[Sequence[int]], start: GreedyPlan, max_moves: int = MAX_MOVES
) -> GreedyPlan:
    """`start` with the must-run jobs it leaves out placed by ejection moves (the module
    docstring), or the state with the fewest left out after `max_moves`; `start` itself if
    it leaves none out."""
    if not start.missing:
        return start
    free = free_capacity(problem, replace(start, plan=[(None, None)] * len(problem.jobs)))
    state = _State(problem, rows, free, [(None, None)] * len(problem.jobs))
    for j, (i, t) in enumerate(start.plan):
        if i is not None and t is not None:
            state.put(j, i, t)
    must = [job.penalty_cents is None for job in problem.jobs]
    missing = deque(j for j, (i, _) in enumerate(start.plan) if i is None and must[j])
    best = (len(missing), list(state.place))
    for move in range(max_moves):
        if not missing:
            break
        j = missing.popleft()
        where = _least_overload(state, j)
        if where is None:
            continue  # no row fits its window: no move places it
        i, t = where
        ejected = _eject_for(state, j, problem.jobs[j].rows[i], t, move)
        state.put(j, i, t)
        state.tabu[j] = move + TABU_MOVES
        for k in sorted(ejected, key=lambda k: (problem.jobs[k].due, k)):
            fit = state.cheapest_fit(k)
            if fit is not None:
                state.put(k, *fit)
            elif must[k]:
                missing.append(k)
        if len(missing) < best[0]:
            best = (len(missing), list(state.place))
    plan = best[1]
    left = tuple(problem.jobs[j].name for j, (i, _) in enumerate(plan) if i is None and must[j])
    chosen = [i for i, _ in plan]
    return GreedyPlan(plan, dict(start.reserved), choice_cost_cents(problem, chosen, start.reserved), left)
