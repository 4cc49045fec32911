"""Property: the Benders master's first bound (solve_benders(bound_only=True), what a large
batch's window search keeps as its lower bound) never passes the brute-force optimum, and the
plan repaired from its choice is a valid plan no cheaper than that optimum."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from test_batch_bruteforce import GRID, batches
from test_batch_synth import brute_force

from optimizer.errors import Status
from optimizer.solve.batch.benders import solve_benders
from optimizer.solve.batch.problem import BatchProblem, BatchResult, JobSpec, ScheduledJob
from optimizer.solve.batch.validate import validate_batch


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_first_master_bound_is_below_brute_force(batch: tuple[list[JobSpec], list, float]) -> None:
    specs, resources, horizon = batch
    expected = brute_force(specs, resources, horizon, GRID)
    problem = BatchProblem.build(specs, resources, horizon, GRID)
    out = solve_benders(problem, 10.0, bound_only=True)
    assert out.rounds == 1 and not out.proven and not out.cuts and not out.reserve_limits
    if expected is None:  # no plan runs every must-run job: none can be repaired either
        assert out.incumbent is None
        return
    assert out.stopped == "bound"
    assert out.bound_cents is not None and out.bound_cents <= expected
    if out.incumbent is None:
        return
    cost, rows, starts, reserved = out.incumbent
    assert cost >= expected
    it = iter(starts)
    jobs = [
        ScheduledJob(job, job.rows[i] if i is not None else None, next(it) if i is not None else None, 1.0)
        for job, i in zip(problem.jobs, rows, strict=True)
    ]
    assert validate_batch(BatchResult(Status.FEASIBLE, problem, jobs, dict(reserved))) == []


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_lp_bound_is_below_brute_force_and_no_lp_solution_means_no_plan(
    batch: tuple[list[JobSpec], list, float],
) -> None:
    """The master's LP relaxation alone (lp_only, what a batch whose greedy plans leave jobs
    out gets): its bound never passes the brute-force optimum, and 'infeasible' only when
    brute force finds no plan (the proof solve.py then reports)."""
    specs, resources, horizon = batch
    expected = brute_force(specs, resources, horizon, GRID)
    problem = BatchProblem.build(specs, resources, horizon, GRID)
    out = solve_benders(problem, 10.0, bound_only=True, lp_only=True)
    if out.stopped == "infeasible":
        assert expected is None
        return
    assert out.stopped == "bound" and out.bound_cents is not None
    if expected is not None:
        assert out.bound_cents <= expected
