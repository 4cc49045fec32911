"""A batch answers within its time limit (issue 29 item 5): the limit covers the whole call,
a greedy first plan stands in when CP-SAT finds none in time (with its gap to the best bound),
and when no plan runs every job the answer names where the time went, the jobs left out and
each one's nearest fix.
Repeated jobs share their layout evaluations without changing their candidate tables."""

from __future__ import annotations

import time
from typing import Any

import pytest
from test_batch_synth import RTX4090, candidate, offering, owned_resource

from benchmarks.batch_scaling import generate_batch
from optimizer.api import batch_json
from optimizer.errors import SolverError, Status
from optimizer.inputs.jobs.batch import batch_from_dict
from optimizer.solve.batch import solve as batch_solve
from optimizer.solve.batch.benders import BendersOutcome
from optimizer.solve.batch.enumerate import build_problem
from optimizer.solve.batch.grid import TimeGrid
from optimizer.solve.batch.hints import greedy_plans, greedy_schedule
from optimizer.solve.batch.problem import BatchProblem, JobSpec
from optimizer.solve.batch.validate import validate_batch
from optimizer.solve.cpsat.solver import SolverConfig

GRID = TimeGrid(1.0)
UNKNOWN = "CP-SAT found no solution within 0.1 s (status UNKNOWN); raise the time limit"


def _two_jobs(b_on_cloud: bool = True) -> BatchProblem:
    """test_batch_model's sharing case: one owned box ($0.62 a busy hour), A 12 h and B 10 h
    on it, both due at 20 h; B may rent 8× H100 for 2.5 h ($79.80)."""
    box = offering("box", "owned", "owned", gpu=RTX4090, usd_per_hour=0.62, max_instances=1)
    cloud = offering("h100", provider="lambda", usd_per_hour=31.92)
    a = JobSpec("A", [candidate(box, 1, 12, 7.44)], 0, 20)
    rows_b = [candidate(box, 1, 10, 6.20)] + ([candidate(cloud, 1, 2.5, 79.80)] if b_on_cloud else [])
    b = JobSpec("B", rows_b, 0, 20)
    return BatchProblem.build([a, b], [owned_resource(box, 1)], 20, GRID)


def _no_solver(monkeypatch: pytest.MonkeyPatch, bound_cents: int | None, seen: dict[str, Any]) -> None:
    """Benders stops unproven with `bound_cents`; CP-SAT finds nothing in time."""

    def benders(problem: BatchProblem, limit_s: float, **_: object) -> BendersOutcome:
        seen["benders_s"] = limit_s
        return BendersOutcome(proven=False, bound_cents=bound_cents, rounds=1, stopped="time")

    def cpsat(model: Any, config: SolverConfig, callback: Any = None) -> Any:
        seen["cpsat_s"] = config.time_limit_s
        raise SolverError(UNKNOWN)

    monkeypatch.setattr(batch_solve, "solve_benders", benders)
    monkeypatch.setattr(batch_solve, "solve", cpsat)


def test_greedy_first_plan_when_cp_sat_finds_none(monkeypatch: pytest.MonkeyPatch) -> None:
    """Greedy: jobs by deadline (A first), each on its cheapest row that fits: A on the box
    [0, 12), B's box row would end at 22 > 20, so B rents: 7.44 + 79.80 = $87.24. The bound
    is Benders' $80.00: gap (87.24 − 80.00) / 87.24 = 8.299%."""
    seen: dict[str, Any] = {}
    _no_solver(monkeypatch, 8000, seen)
    result = batch_solve.solve_batch(_two_jobs(), SolverConfig(time_limit_s=5.0))
    assert result.status == Status.FEASIBLE
    assert result.total_cost_usd == pytest.approx(87.24)
    assert result.solver["first_plan"] == "greedy"
    assert result.solver["best_bound_usd"] == pytest.approx(80.0)
    assert result.solver["gap"] == pytest.approx(7.24 / 87.24, abs=1e-6)
    assert not result.solver["proven_optimal"]
    assert validate_batch(result) == []
    assert any("greedy first plan" in n for n in result.problem.notes)
    solver = batch_json(result)["solver"]  # the JSON contract carries it
    assert solver["first_plan"] == "greedy" and solver["status"] == "feasible"


def test_no_full_plan_names_who_is_left_out_and_the_nearest_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the cloud row B fits nowhere after A (12 + 10 h > 20 h on one box): the greedy
    plan and its repair leave B out; CP-SAT (here) finds nothing in time. The answer is not
    an error but status infeasible, unproven: it names B, the phases and the limit, and the
    nearest fix against the plan: a second box (B's deadline cannot move: 12 + 10 h passes
    the 20 h horizon), total 7.44 + 6.20 = $13.64."""
    _no_solver(monkeypatch, None, {})
    result = batch_solve.solve_batch(_two_jobs(b_on_cloud=False), SolverConfig(time_limit_s=5.0))
    assert result.status == Status.INFEASIBLE and result.jobs == []
    assert result.solver["proven_optimal"] is False
    e = result.explanation
    assert e is not None and e.conflict == ["deadline:B"]
    for phrase in ("'B'", "1 of 2 jobs placed", "5 s time limit", "Benders", "CP-SAT", "not proven"):
        assert phrase in e.message, (phrase, e.message)
    (fix,) = e.fixes
    assert fix.change.startswith("grow owned") and "by 1 boxes, from 1 to 2 (for 'B')" in fix.change
    assert fix.total_cost_usd == pytest.approx(13.64)
    assert batch_json(result)["status"] == "infeasible"


def test_the_limit_covers_what_ran_before_the_solve(monkeypatch: pytest.MonkeyPatch) -> None:
    """A command that already spent 10 s of a 5 s limit gives each solver only its floor
    (MIN_SOLVE_S; Benders its share of it) and still returns the greedy plan."""
    seen: dict[str, Any] = {}
    _no_solver(monkeypatch, None, seen)
    result = batch_solve.solve_batch(
        _two_jobs(), SolverConfig(time_limit_s=5.0), started=time.perf_counter() - 10.0
    )
    assert seen["benders_s"] == pytest.approx(batch_solve.BENDERS_SHARE * batch_solve.MIN_SOLVE_S)
    assert seen["cpsat_s"] == pytest.approx(batch_solve.MIN_SOLVE_S)
    assert result.total_cost_usd == pytest.approx(87.24)


def test_repeated_jobs_share_evaluations_and_keep_their_own_tables(rows) -> None:
    """A generated batch (benchmarks/batch_scaling.py, seed 7) whose jobs repeat templates with
    other token counts and windows: each job's rows (offering, instances, layout, hours, cost)
    equal those it gets in a batch of its own, with no other job to share evaluations with."""
    batch = batch_from_dict(generate_batch(8), "g")
    shared = build_problem(batch, rows)
    presets = [(j.model.preset, j.workload.kind) for j in batch.job]
    assert len(set(presets)) < len(presets)  # some jobs repeat a template

    def table(spec: Any) -> list[tuple[Any, ...]]:
        return [
            (
                r.candidate.offering.key,
                r.candidate.instances,
                r.candidate.layout,
                r.candidate.hours,
                r.cost_cents,
            )
            for r in spec.rows
        ]

    for k, job in enumerate(batch.job):
        alone = build_problem(batch.model_copy(update={"job": (job,)}), rows)
        assert table(shared.jobs[k]) == table(alone.jobs[0]), job.name


def test_earliest_finish_greedy_places_what_cheapest_first_cannot() -> None:
    """One box, both jobs due at 10 h. A: box 6 h ($1) or cloud 2 h ($50); B: box 6 h ($1).
    Cheapest first puts A on the box [0, 6): B would end at 12 h > 10, left out. Earliest
    finish puts A on the cloud (ends at 2 h, before 6 h) and B on the box: both placed, $51."""
    box = offering("box", "owned", "owned", gpu=RTX4090, usd_per_hour=1 / 6, max_instances=1)
    cloud = offering("h100", provider="lambda", usd_per_hour=25.0)
    a = JobSpec("A", [candidate(box, 1, 6, 1.0), candidate(cloud, 1, 2, 50.0)], 0, 10)
    b = JobSpec("B", [candidate(box, 1, 6, 1.0)], 0, 10)
    problem = BatchProblem.build([a, b], [owned_resource(box, 1)], 10, GRID)
    rows = [list(range(len(j.rows))) for j in problem.jobs]
    cheapest = greedy_schedule(problem, rows)
    assert cheapest[1] == (None, None)
    plans = greedy_plans(problem, rows)
    assert plans[0].missing == () and plans[0].cost_cents == 5100
    assert [problem.jobs[j].rows[i].candidate.offering.key for j, (i, _) in enumerate(plans[0].plan)] == [
        "h100",
        "box",
    ]


def test_a_job_left_out_is_placed_first_in_the_next_greedy_pass() -> None:
    """One box. A: 3 h in [2, 8); B: 5 h in [0, 9). By deadline A goes first, at [2, 5), and
    B finds no 5 free hours (left out, on every row-choice rule). The next pass places B
    first, at [0, 5), and A after it at [5, 8): a plan."""
    box = offering("box", "owned", "owned", gpu=RTX4090, usd_per_hour=1.0, max_instances=1)
    a = JobSpec("A", [candidate(box, 1, 3, 3.0)], 2, 8)
    b = JobSpec("B", [candidate(box, 1, 5, 5.0)], 0, 9)
    problem = BatchProblem.build([a, b], [owned_resource(box, 1)], 10, GRID)
    rows = [list(range(len(j.rows))) for j in problem.jobs]
    assert greedy_schedule(problem, rows) == [(0, 2), (None, None)]
    assert greedy_schedule(problem, rows, earliest_finish=True)[1] == (None, None)
    best = greedy_plans(problem, rows)[0]
    assert best.missing == () and best.plan == [(0, 5), (0, 0)] and best.cost_cents == 800
