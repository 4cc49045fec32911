"""Crowded batches (issue 47: 500 generated jobs left 3-5 must-run jobs out): the greedy
rule that spares a crowded resource, the repair of several greedy plans in turn, and the
window search's kept jobs, which must run even when droppable. Hand-made instances on
1-hour steps, numbers by hand; a property that every repaired plan is valid, and
earliest_start against a scan of every start."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_batch_bruteforce import GRID, batches
from test_batch_synth import RTX4090, candidate, offering, owned_resource, quota_resource

from optimizer.solve.batch import lns
from optimizer.solve.batch.hints import (
    GreedyPlan,
    earliest_start,
    free_capacity,
    greedy_plans,
    greedy_schedule,
)
from optimizer.solve.batch.model import usable_rows
from optimizer.solve.batch.problem import BatchProblem, JobSpec, Row
from optimizer.solve.batch.repair import repair_plan, repair_plans
from optimizer.solve.cpsat.solver import SolverConfig


def _two_quotas() -> BatchProblem:
    """Quotas of 8 GPUs at providers a and b, 4 h. Y (due 2 h): 8 GPUs at a, 2 h, $10.
    X (due 4 h): 8 GPUs at a ($10) or at b ($12), 2 h. Z (due 4 h): 8 GPUs at a, 2 h, $10."""
    at_a, at_b = offering("a", provider="pa"), offering("b", provider="pb")
    y = JobSpec("Y", [candidate(at_a, 1, 2, 10.0)], 0, 2)
    x = JobSpec("X", [candidate(at_a, 1, 2, 10.0), candidate(at_b, 1, 2, 12.0)], 0, 4)
    z = JobSpec("Z", [candidate(at_a, 1, 2, 10.0)], 0, 4)
    quotas = [quota_resource("pa", 8, key="quota#a"), quota_resource("pb", 8, key="quota#b")]
    return BatchProblem.build([y, x, z], quotas, 4, GRID)


def test_least_share_rule_spares_the_crowded_quota() -> None:
    """Cheapest first: Y on a at [0, 2), X on a at [2, 4) ($10 < $12), Z finds a full: left
    out. Least share: X's row at a takes 16 of the 16 GPU-hours a has free in [0, 4) after Y
    (share 1), its row at b 16 of 32 (0.5): X goes to b, Z to a at [2, 4). $10 + $12 + $10."""
    problem = _two_quotas()
    rows = [[0], [0, 1], [0]]
    assert greedy_schedule(problem, rows) == [(0, 0), (0, 2), (None, None)]
    assert greedy_schedule(problem, rows, least_share=True) == [(0, 0), (1, 0), (0, 2)]
    best = greedy_plans(problem, rows)[0]
    assert best.missing == ()
    assert best.cost_cents == 1000 + 1200 + 1000


def _crowded() -> tuple[BatchProblem, GreedyPlan]:
    """One box, 10 h. A: 3 h ($3) anywhere; B: 5 h ($5) in [2, 7). A at [3, 6) leaves B out."""
    box = offering("box", "owned", "owned", gpu=RTX4090, usd_per_hour=1.0, max_instances=1)
    a = JobSpec("A", [candidate(box, 1, 3, 3.0)], 0, 10)
    b = JobSpec("B", [candidate(box, 1, 5, 5.0)], 2, 7)
    problem = BatchProblem.build([a, b], [owned_resource(box, 1)], 10, GRID)
    return problem, GreedyPlan([(0, 3), (None, None)], {}, 300, ("B",))


def test_repair_plans_takes_a_complete_plan_as_it_is_else_repairs() -> None:
    """A complete first plan is returned untouched (no repair); a plan leaving B out is
    repaired as repair_plan does (A to [7, 10), B at [2, 7): $8); of two plans leaving B out,
    the first repaired completes, so the second is never looked at."""
    problem, partial = _crowded()
    rows = [[0], [0]]
    complete = GreedyPlan([(0, 7), (0, 2)], {}, 800, ())
    assert repair_plans(problem, rows, [complete, partial]) is complete
    fixed = repair_plans(problem, rows, [partial])
    assert (fixed.missing, fixed.plan, fixed.cost_cents) == ((), [(0, 7), (0, 2)], 800)
    assert repair_plans(problem, rows, [partial, GreedyPlan([], {}, 0, ("B",))]).plan == fixed.plan


def test_window_keeps_a_droppable_job_it_does_not_free() -> None:
    """One box, 10 h. K (droppable, worth $0.01): 4 h ($4) placed at [0, 4). F (must run):
    3 h ($3) in [2, 6), left out. The window [2, 6) frees F only (K starts before it), so K
    is kept at [0, 4): F fits neither [2, 5) nor [3, 6) beside it and stays out. Before, the
    window's model could drop K (its $0.01 is far below a left-out job's cost) and put F at
    [2, 5) while the plan kept K there: two jobs on one box."""
    box = offering("box", "owned", "owned", gpu=RTX4090, usd_per_hour=1.0, max_instances=1)
    k = JobSpec("K", [candidate(box, 1, 4, 4.0)], 0, 10, penalty_usd=0.01)
    f = JobSpec("F", [candidate(box, 1, 3, 3.0)], 2, 6)
    problem = BatchProblem.build([k, f], [owned_resource(box, 1)], 10, GRID)
    plan = GreedyPlan([(0, 0), (None, None)], {}, 400, ("F",))
    free, jobs = lns._neighbourhood(problem, plan, 2, 6)
    assert free == [1]
    assert all(job.penalty_cents is None for job in jobs[len(free) :])
    out = lns._solve_window(problem, plan, free, jobs, SolverConfig(time_limit_s=5.0, workers=1))
    assert out is not None
    assert out.plan == [(0, 0), (None, None)] and out.missing == ("F",)
    assert min(int(v.min()) for v in free_capacity(problem, out).values()) >= 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_repaired_plans_are_valid(batch: tuple[list[JobSpec], list, float]) -> None:
    """Every greedy plan, repaired, keeps each job on one of its rows inside its window and
    every resource within its capacity (the reservations at the plan's R); it never leaves
    more must-run jobs out than it started with."""
    specs, resources, horizon = batch
    problem = BatchProblem.build(specs, resources, horizon, GRID)
    rows = [usable_rows(job, problem, {}) for job in problem.jobs]
    for start in greedy_plans(problem, rows):
        fixed = repair_plan(problem, rows, start)
        assert len(fixed.missing) <= len(start.missing)
        assert all(int(np.min(v)) >= 0 for v in free_capacity(problem, fixed).values())
        for job, idx, (i, t) in zip(problem.jobs, rows, fixed.plan, strict=True):
            if i is None:
                continue
            assert i in idx and t is not None
            low, high = job.start_range(job.rows[i])
            assert low <= t <= high


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=30),
    st.lists(st.integers(0, 2), min_size=30, max_size=30),
    st.integers(1, 3),
    st.integers(0, 2),
    st.integers(1, 6),
    st.integers(0, 29),
    st.integers(-1, 29),
)
def test_earliest_start_is_the_first_start_that_fits(
    free_a: list[int], free_b: list[int], need_a: int, need_b: int, steps: int, low: int, high: int
) -> None:
    """earliest_start against a scan of every start in [low, high]: the first t with each
    resource free enough over [t, t + steps) (need_b 0: a row on one resource)."""
    horizon = len(free_a)
    high = min(high, horizon - steps)
    free = {"a": np.array(free_a), "b": np.array(free_b[:horizon])}
    usage = (("a", need_a), ("b", need_b)) if need_b else (("a", need_a),)
    row = Row(candidate=None, cost_cents=0, duration=steps, usage=usage)  # type: ignore[arg-type]
    fits = [t for t in range(low, high + 1) if all(min(free[k][t : t + steps]) >= d for k, d in usage)]
    assert earliest_start(free, row, low, high) == (fits[0] if fits else None)
