"""Property: on small batches the CP-SAT optimum equals brute force over assignments and starts.

Batches of ≤ 4 jobs over ≤ 3 offerings (an owned box, a cloud offering under a quota, and an
unlimited cloud offering, a sized reservation or a capacity block with its own window), horizons
of 3-6 one-hour steps.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_batch_synth import (
    RTX4090,
    block_resource,
    brute_force,
    candidate,
    offering,
    owned_resource,
    quota_resource,
    reservation_resource,
)

from optimizer.errors import Status
from optimizer.solve.batch.grid import TimeGrid
from optimizer.solve.batch.hints import add_hints, greedy_plans
from optimizer.solve.batch.model import build_model, read_plan
from optimizer.solve.batch.problem import BatchProblem, BatchResult, JobSpec, ScheduledJob
from optimizer.solve.batch.solve import solve_batch
from optimizer.solve.batch.validate import validate_batch
from optimizer.solve.cpsat.scale import to_cents
from optimizer.solve.cpsat.solver import SolverConfig, solve

GRID = TimeGrid(1.0)
CONFIG = SolverConfig(time_limit_s=10.0, workers=2)


@st.composite
def batches(draw: st.DrawFn) -> tuple[list[JobSpec], list, float]:
    horizon = draw(st.integers(3, 6))
    box = offering("box", "owned", "owned", gpus=8, gpu=RTX4090, max_instances=2)
    quoted = offering("q", provider="quoted", gpus=2)
    third = draw(st.sampled_from(["free", "reserved", "block"]))
    other = (
        offering("o", provider="free", gpus=4)
        if third == "free"
        else offering("rsv" if third == "reserved" else "blk", "reserved", provider="aws", gpus=8)
    )
    offerings = draw(
        st.lists(st.sampled_from([box, quoted, other]), min_size=1, max_size=3, unique_by=lambda o: o.key)
    )
    resources = [
        owned_resource(box, draw(st.integers(1, 2))),
        quota_resource("quoted", draw(st.sampled_from([2, 4, 6]))),
    ]
    if third == "reserved":
        resources.append(reservation_resource(other, draw(st.integers(1, 2)), draw(st.integers(1, 30))))
    elif third == "block":  # hours [a, b] of the horizon, a whole number of steps
        a = draw(st.integers(0, horizon - 1))
        window = (float(a), float(draw(st.integers(a + 1, horizon))))
        resources.append(block_resource(other, draw(st.integers(1, 2)), draw(st.integers(1, 30)), window))
    specs = []
    for j in range(draw(st.integers(1, 4))):
        cands = []
        for _ in range(draw(st.integers(1, 3))):
            off = draw(st.sampled_from(offerings))
            hours = draw(st.integers(1, 2 * horizon)) / 2  # 0.5 h steps: rounding is tested
            cost = 0.0 if off.kind == "reserved" else draw(st.integers(1, 4000)) / 100
            cands.append(candidate(off, draw(st.integers(1, 2)), hours, cost))
        release = draw(st.integers(0, horizon - 1))
        deadline = draw(st.one_of(st.none(), st.integers(release + 1, horizon + 1)))
        penalty = draw(st.one_of(st.none(), st.integers(1, 60)))
        specs.append(
            JobSpec(
                f"j{j}",
                cands,
                float(release),
                None if deadline is None else float(deadline),
                None if penalty is None else float(penalty),
            )
        )
    return specs, resources, float(horizon)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_cp_sat_optimum_equals_brute_force(batch: tuple[list[JobSpec], list, float]) -> None:
    specs, resources, horizon = batch
    expected = brute_force(specs, resources, horizon, GRID)
    problem = BatchProblem.build(specs, resources, horizon, GRID)
    result = solve_batch(problem, CONFIG, explain=False)
    if expected is None:
        assert result.status == Status.INFEASIBLE
        return
    assert result.status == Status.OPTIMAL
    assert validate_batch(result) == []
    objective = (
        sum(to_cents(s.row.candidate.cost_usd) for s in result.jobs if s.row)
        + sum(n * problem.resources[k].commitment_cents for k, n in result.reserved.items())
        + sum(to_cents(s.job.spec.penalty_usd or 0) for s in result.jobs if s.row is None)
    )
    assert objective == expected
    assert round(result.solver["objective_usd"] * 100) == expected


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
def test_direct_cp_sat_model_equals_brute_force(batch: tuple[list[JobSpec], list, float]) -> None:
    """The single CP-SAT model (optional intervals, one cumulative per resource, no Benders
    cuts), hinted with the greedy plan, alone proves the brute-force optimum; the greedy plan,
    when it places every job, is a valid plan no cheaper than that optimum."""
    specs, resources, horizon = batch
    expected = brute_force(specs, resources, horizon, GRID)
    problem = BatchProblem.build(specs, resources, horizon, GRID)
    v = build_model(problem)
    greedy = greedy_plans(problem, v.rows)[0]
    add_hints(v, problem, greedy)
    result = solve(v.model, CONFIG)
    if expected is None:
        assert greedy.missing
        assert result.status == "infeasible"
        return
    assert result.proven_optimal
    assert round(result.objective or 0) == expected
    jobs, reserved = read_plan(v, problem, result)
    plan = BatchResult(Status.OPTIMAL, problem, jobs, reserved)
    assert validate_batch(plan) == []
    if not greedy.missing:
        scheduled = [
            ScheduledJob(job, job.rows[i] if i is not None else None, t, GRID.unit_h)
            for job, (i, t) in zip(problem.jobs, greedy.plan, strict=True)
        ]
        assert validate_batch(BatchResult(Status.FEASIBLE, problem, scheduled, dict(greedy.reserved))) == []
        assert greedy.cost_cents >= expected
