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
count, so the answer is deterministic (unless the time limit stops them first); the plan with
the fewest jobs left out is returned. Several greedy plans are repaired in turn until one is
complete (repair_plans): which one completes is not known in advance (500 generated jobs on
2 boxes: the two best greedy plans end with 7 and 5 jobs left out, the third, 20 left out
before, with none).
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from optimizer.solve.batch.hints import GreedyPlan, earliest_start, full_capacity
from optimizer.solve.batch.problem import BatchProblem, Row, choice_cost_cents

__all__ = ["MAX_MOVES", "TABU_MOVES", "repair_plan", "repair_plans"]

#: CHOICE: moves before the repair gives up, and moves without fewer jobs left out before it
#: stops early (measured on 500 generated jobs on 2 boxes: the earliest-finish greedy plan,
#: 20 jobs left out, is complete after 5,223 moves, its improvements up to 3,921 moves apart;
#: a move costs ~0.3 ms there); counts, not times, keep the answer deterministic
MAX_MOVES = 6000
STALL_MOVES = 4000
#: CHOICE: greedy plans repaired in turn (best first, greedy_plans) until one is complete
#: (500 generated jobs: the best two end with 7 and 5 jobs left out, the third with none)
REPAIRED_PLANS = 3
#: CHOICE: moves during which a job the repair just placed may not be ejected
TABU_MOVES = 7
#: CHOICE: random noise added to each start's overload (in capacity-steps), so ties and
#: near-ties go different ways and the moves do not cycle; fixed seed: deterministic
NOISE = 1.0
SEED = 0


@dataclass
class _State:
    """A plan under repair: free capacity per resource and step, each job's place, and (for
    _eject_for, one array entry per job) each placed job's interval, cost and demand per
    resource (0 when not placed)."""

    problem: BatchProblem
    rows: Sequence[Sequence[int]]
    free: dict[str, np.ndarray]
    place: list[tuple[int | None, int | None]]
    tabu: dict[int, int] = field(default_factory=dict)  # job -> last move it is protected
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(SEED))
    held: dict[str, int] = field(default_factory=dict)  # capacity per resource (R if reserved)
    begin: np.ndarray = field(init=False)
    end: np.ndarray = field(init=False)
    cost: np.ndarray = field(init=False)
    use: dict[str, np.ndarray] = field(init=False)

    def __post_init__(self) -> None:
        n = len(self.problem.jobs)
        self.begin = np.zeros(n, dtype=np.int64)
        self.end = np.zeros(n, dtype=np.int64)
        self.cost = np.zeros(n, dtype=np.int64)
        self.use = {key: np.zeros(n, dtype=np.int64) for key in self.free}

    def put(self, j: int, i: int, t: int) -> None:
        row = self.problem.jobs[j].rows[i]
        for key, demand in row.usage:
            self.free[key][t : t + row.duration] -= demand
            self.use[key][j] = demand
        self.place[j] = (i, t)
        self.begin[j], self.end[j], self.cost[j] = t, t + row.duration, row.cost_cents

    def take(self, j: int) -> None:
        i, t = self.place[j]
        assert i is not None and t is not None  # only placed jobs are taken out
        row = self.problem.jobs[j].rows[i]
        for key, demand in row.usage:
            self.free[key][t : t + row.duration] += demand
            self.use[key][j] = 0
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
    fits its window at all, or each needs more than a resource holds (its capacity, or the
    plan's R of a reservation)."""
    job, caps = state.problem.jobs[j], state.problem.resources
    best: tuple[float, int, int, int] | None = None
    for i in state.rows[j]:
        row = job.rows[i]
        low, high = job.start_range(row)
        if high < low or any(demand > state.held[key] for key, demand in row.usage):
            continue  # no ejection makes room (e.g. a reservation at R = 0)
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


def _eject_for(state: _State, j: int, row: Row, t: int, move: int, must: np.ndarray) -> list[int]:
    """Take out placed jobs overlapping the shortfall of `row` at `t` until it fits: jobs
    not under tabu first, then droppable ones, then those covering most of the short steps,
    then the cheapest, then by index; returns them. (The placed jobs are compared as arrays,
    one entry per job: the Python loop over every job took 2.7 s of 3.5 s for 1,000 moves at
    500 generated jobs, cProfile.)"""
    out: list[int] = []
    end = t + row.duration
    tabu = np.zeros(len(state.place), dtype=bool)
    for k, last in state.tabu.items():
        tabu[k] = last >= move
    for key, demand in row.usage:
        while True:
            short = state.free[key][t:end] < demand
            if not short.any():
                break
            steps = np.flatnonzero(short) + t  # sorted
            cover = np.searchsorted(steps, state.end) - np.searchsorted(steps, state.begin)
            users = np.flatnonzero((state.use[key] > 0) & (cover > 0))
            users = users[users != j]
            # lexsort: the last key is the first compared
            order = np.lexsort((users, state.cost[users], -cover[users], must[users], tabu[users]))
            k = int(users[order[0]])
            state.take(k)
            out.append(k)
    return out


def repair_plan(
    problem: BatchProblem,
    rows: Sequence[Sequence[int]],
    start: GreedyPlan,
    max_moves: int = MAX_MOVES,
    deadline: float = math.inf,
) -> GreedyPlan:
    """`start` with the must-run jobs it leaves out placed by ejection moves (the module
    docstring), or the state with the fewest left out after `max_moves` (or at `deadline`,
    time.perf_counter(): then the answer depends on the machine's speed); `start` itself if
    it leaves none out."""
    if not start.missing:
        return start
    free = full_capacity(problem, start.reserved)
    held = {k: int(v.max(initial=0)) for k, v in free.items()}  # nothing placed yet
    state = _State(problem, rows, free, [(None, None)] * len(problem.jobs), held=held)
    for j, (i, t) in enumerate(start.plan):
        if i is not None and t is not None:
            state.put(j, i, t)
    must = np.array([job.penalty_cents is None for job in problem.jobs], dtype=bool)
    missing = deque(j for j, (i, _) in enumerate(start.plan) if i is None and must[j])
    best = (len(missing), list(state.place))
    last = 0  # the move that last left fewer jobs out
    for move in range(max_moves):
        if not missing or time.perf_counter() > deadline:
            break
        j = missing.popleft()
        where = _least_overload(state, j)
        if where is None:
            continue  # no row fits its window: no move places it
        i, t = where
        ejected = _eject_for(state, j, problem.jobs[j].rows[i], t, move, must)
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
            last = move
        elif move - last >= STALL_MOVES:
            break
    plan = best[1]
    left = tuple(problem.jobs[j].name for j, (i, _) in enumerate(plan) if i is None and must[j])
    chosen = [i for i, _ in plan]
    return GreedyPlan(plan, dict(start.reserved), choice_cost_cents(problem, chosen, start.reserved), left)


def repair_plans(
    problem: BatchProblem,
    rows: Sequence[Sequence[int]],
    plans: Sequence[GreedyPlan],
    deadline: float = math.inf,
) -> GreedyPlan:
    """The first of `plans` (best first) that leaves no must-run job out, else the first
    REPAIRED_PLANS of them repaired in turn (repair_plan, until `deadline`) until one is
    complete; the plan with the fewest jobs left out, then the cheapest (the earlier on ties)."""
    best = plans[0]
    for plan in plans[:REPAIRED_PLANS]:
        if not best.missing or time.perf_counter() > deadline:
            break
        fixed = repair_plan(problem, rows, plan, deadline=deadline)
        if (len(fixed.missing), fixed.cost_cents) < (len(best.missing), best.cost_cents):
            best = fixed
    return best
