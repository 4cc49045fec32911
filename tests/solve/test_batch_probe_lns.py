"""Probing reserved counts by the master's bound (probe.py) and the window search (lns.py),
against brute force on small batches (test_batch_bruteforce.batches); the second CP-SAT
solve's choice of answer (solve._better) by hand."""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import HealthCheck, given, settings
from test_batch_bruteforce import GRID, batches
from test_batch_synth import brute_force

from optimizer.errors import Status
from optimizer.solve.batch import lns
from optimizer.solve.batch import solve as batch_solve
from optimizer.solve.batch.hints import greedy_plans
from optimizer.solve.batch.master import Master
from optimizer.solve.batch.model import usable_rows
from optimizer.solve.batch.probe import reservation_limits
from optimizer.solve.batch.problem import BatchProblem, BatchResult, JobSpec, ScheduledJob
from optimizer.solve.batch.solve import solve_batch
from optimizer.solve.batch.validate import validate_batch
from optimizer.solve.cpsat.solver import SolverConfig, SolveResult

CONFIG = SolverConfig(time_limit_s=10.0, workers=2)


class _Table:
    """A bound oracle reading a table {r: bound}."""

    def __init__(self, bounds: dict[int, float]) -> None:
        self.bounds = bounds
        self.asked: list[int] = []

    def bound_with(self, key: str, at_least: int, time_limit_s: float) -> float:
        self.asked.append(at_least)
        return self.bounds[at_least]


def test_reservation_limits_by_hand() -> None:
    far = time.perf_counter() + 60
    # bounds 90 < 100 at R >= 1, 120 >= 100 at R >= 2: a cheaper plan reserves at most 1
    table = _Table({1: 90, 2: 120, 3: 150})
    assert reservation_limits(table, {"r": 3}, 100, {}, far) == {"r": 1}
    assert table.asked == [1, 2]
    # the plans kept reserve 2: never cut below, probing starts at 3
    table = _Table({1: 90, 2: 120, 3: 150})
    assert reservation_limits(table, {"r": 3}, 100, {"r": 2}, far) == {"r": 2}
    assert table.asked == [3]
    # no bound in time (-inf) proves nothing; +inf (no plan at all) excludes
    assert reservation_limits(_Table({1: -math.inf, 2: 120}), {"r": 2}, 100, {}, far) == {"r": 1}
    assert reservation_limits(_Table({1: math.inf}), {"r": 2}, 100, {}, far) == {"r": 0}
    # bounds below the plan everywhere: the capacity stays; no time: nothing probed
    assert reservation_limits(_Table({1: 10, 2: 20}), {"r": 2}, 100, {}, far) == {"r": 2}
    assert reservation_limits(_Table({}), {"r": 2}, 100, {}, time.perf_counter() - 1) == {"r": 2}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_master_bound_with_at_least_r_reserved_is_below_brute_force(
    batch: tuple[list[JobSpec], list, float],
) -> None:
    """The probe's premise: the master with R >= r bounds every plan reserving >= r from
    below (brute force over assignments and starts with R = max(peak, r)), and says inf
    only when no such plan exists."""
    specs, resources, horizon = batch
    problem = BatchProblem.build(specs, resources, horizon, GRID)
    master = Master(problem, [usable_rows(job, problem, {}) for job in problem.jobs])
    for key in master.reserve:
        for r in range(1, problem.resources[key].capacity + 1):
            bound = master.bound_with(key, r, 10.0)
            expected = brute_force(specs, resources, horizon, GRID, min_reserved={key: r})
            if expected is None:
                continue
            assert bound <= expected + 1e-6, (key, r, bound, expected)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_master_from_a_mip_start_reaches_the_same_optimum(
    batch: tuple[list[JobSpec], list, float],
) -> None:
    """A schedulable plan handed to HiGHS as its first incumbent (Master.solve `start`, the
    greedy plan) changes how fast the master is solved, never its optimum: the same bound with
    and without, a choice no dearer than the start, and below brute force."""
    specs, resources, horizon = batch
    problem = BatchProblem.build(specs, resources, horizon, GRID)
    rows = [usable_rows(job, problem, {}) for job in problem.jobs]
    greedy = greedy_plans(problem, rows)[0]
    if greedy.missing:
        return
    plain = Master(problem, rows).solve(10.0)
    started = Master(problem, rows).solve(10.0, ([i for i, _ in greedy.plan], greedy.reserved))
    assert plain is not None and started is not None
    assert started[3] and plain[3]  # both proven
    assert started[2] == pytest.approx(plain[2], abs=1e-6)
    assert started[2] <= greedy.cost_cents + 1e-6
    expected = brute_force(specs, resources, horizon, GRID)
    assert expected is not None and started[2] <= expected + 1e-6


def _one_window(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Windows wider than any test horizon: one window frees every job."""
    monkeypatch.setattr(lns, "WINDOW_H", 1000.0)


@pytest.mark.parametrize("window_h", [1000.0, 4.0])
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(batches())
def test_window_search_keeps_plans_valid_and_reaches_brute_force(
    monkeypatch,
    window_h: float,
    batch: tuple[list[JobSpec], list, float],  # type: ignore[no-untyped-def]
) -> None:
    """From the greedy plan: every plan the window search returns is valid, no dearer than its
    start and no cheaper than brute force; with one window over the whole horizon (1,000 h) it
    is the brute-force optimum. Windows of 4 hours: several per test horizon, solved two at a
    time and their answers merged (lns._pairs, lns._merged)."""
    monkeypatch.setattr(lns, "WINDOW_H", window_h)
    specs, resources, horizon = batch
    expected = brute_force(specs, resources, horizon, GRID)
    problem = BatchProblem.build(specs, resources, horizon, GRID)
    rows = [usable_rows(job, problem, {}) for job in problem.jobs]
    start = greedy_plans(problem, rows)[0]
    best = lns.improve_by_windows(problem, start, time.perf_counter() + 10, CONFIG)
    assert (len(best.missing), best.cost_cents) <= (len(start.missing), start.cost_cents)
    if expected is None or (best.missing and window_h < horizon):
        assert best.missing
        return
    assert not best.missing
    assert best.cost_cents == expected if window_h > horizon else best.cost_cents >= expected
    scheduled = [
        ScheduledJob(job, job.rows[i] if i is not None else None, t, GRID.unit_h)
        for job, (i, t) in zip(problem.jobs, best.plan, strict=True)
    ]
    assert validate_batch(BatchResult(Status.FEASIBLE, problem, scheduled, dict(best.reserved))) == []


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(batches())
def test_large_batch_path_equals_brute_force(
    monkeypatch,
    batch: tuple[list[JobSpec], list, float],  # type: ignore[no-untyped-def]
) -> None:
    """solve_batch's path for large batches (Benders for the bound, then the windows), taken
    by small batches: the brute-force optimum, validated; infeasible stays infeasible."""
    _one_window(monkeypatch)
    monkeypatch.setattr(batch_solve, "BENDERS_LARGE_JOBS", 0)
    specs, resources, horizon = batch
    expected = brute_force(specs, resources, horizon, GRID)
    problem = BatchProblem.build(specs, resources, horizon, GRID)
    result = solve_batch(problem, CONFIG, explain=False)
    if expected is None:
        assert result.status == Status.INFEASIBLE
        return
    assert result.status in (Status.OPTIMAL, Status.FEASIBLE)
    assert round(result.solver["objective_usd"] * 100) == expected


def test_windows_are_solved_two_disjoint_at_a_time() -> None:
    """lns._pairs: a sweep's windows overlap by half, so window n goes with window n + 2 (the
    first that does not meet it): 0 and 2, 1 and 3, then 4 alone; windows that all meet
    are solved one at a time."""
    sweep = [(0, 4), (2, 6), (4, 8), (6, 10), (8, 12)]
    assert lns._pairs(sweep) == [[(0, 4), (4, 8)], [(2, 6), (6, 10)], [(8, 12)]]
    assert lns._pairs([(0, 10), (2, 6), (5, 9)]) == [[(0, 10)], [(2, 6)], [(5, 9)]]


def test_a_second_solve_keeps_the_cheaper_answer_and_the_higher_bound() -> None:
    """solve._better: of two unproven answers of one model, the lower objective with the
    higher bound (each solve's bound holds for the model); a proven answer replaces both."""
    first = SolveResult("feasible", 120.0, 90.0, 1.0, False, None)
    second = SolveResult("feasible", 110.0, 80.0, 1.0, False, None)
    kept = batch_solve._better(first, second)
    assert (kept.objective, kept.bound) == (110.0, 90.0)
    kept = batch_solve._better(second, first)
    assert (kept.objective, kept.bound) == (110.0, 90.0)
    proven = SolveResult("optimal", 100.0, 100.0, 1.0, True, None)
    assert batch_solve._better(kept, proven) is proven
    assert batch_solve._better(None, first) is first
