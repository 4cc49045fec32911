"""A first plan that leaves must-run jobs out (issue 47: 500 jobs gave no plan in 30 s):
the ejection repair completes it, CP-SAT completes it from it (the left-out jobs may stay
out at a cost above every plan, so it is a complete hint), and what stays out is named with
its nearest fix. Hand-made instances on one owned box, 1-hour steps."""

from __future__ import annotations

from typing import Any

import pytest
from test_batch_synth import RTX4090, candidate, offering, owned_resource, reservation_resource

from optimizer.errors import Status
from optimizer.solve.batch import solve as batch_solve
from optimizer.solve.batch.benders import BendersOutcome
from optimizer.solve.batch.grid import TimeGrid
from optimizer.solve.batch.hints import GreedyPlan
from optimizer.solve.batch.leftout import left_out_explanation
from optimizer.solve.batch.problem import BatchProblem, JobSpec
from optimizer.solve.batch.repair import repair_plan
from optimizer.solve.batch.validate import validate_batch
from optimizer.solve.cpsat.solver import SolverConfig

GRID = TimeGrid(1.0)


def _crowded() -> tuple[BatchProblem, GreedyPlan]:
    """One box, 10 h. A: 3 h ($3) anywhere in [0, 10); B: 5 h ($5) in [2, 7), so exactly
    [2, 7). A bad first plan puts A at [3, 6): B has no 5 free hours in its window."""
    box = offering("box", "owned", "owned", gpu=RTX4090, usd_per_hour=1.0, max_instances=1)
    a = JobSpec("A", [candidate(box, 1, 3, 3.0)], 0, 10)
    b = JobSpec("B", [candidate(box, 1, 5, 5.0)], 2, 7)
    problem = BatchProblem.build([a, b], [owned_resource(box, 1)], 10, GRID)
    return problem, GreedyPlan([(0, 3), (None, None)], {}, 300, ("B",))


def test_repair_ejects_the_blocking_job_and_places_it_again() -> None:
    """B's only place is [2, 7); A overlaps it (3 steps), so A is ejected, B placed, and A
    put on its cheapest row at its earliest free start: [7, 10). Both run: $3 + $5 = $8."""
    problem, start = _crowded()
    rows = [[0], [0]]
    fixed = repair_plan(problem, rows, start)
    assert fixed.missing == ()
    assert fixed.plan == [(0, 7), (0, 2)]
    assert fixed.cost_cents == 800


def test_cp_sat_completes_a_first_plan_that_leaves_a_job_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Greedy and repair made to leave B out, Benders unproven: CP-SAT, hinted with that
    plan (B's soft drop taken), still returns the plan running both jobs, $8, proven."""
    problem, start = _crowded()
    monkeypatch.setattr(batch_solve, "greedy_plans", lambda p, rows: [start])
    monkeypatch.setattr(batch_solve, "repair_plans", lambda p, rows, plans, deadline: plans[0])

    def benders(problem: BatchProblem, limit_s: float, **_: object) -> BendersOutcome:
        return BendersOutcome(proven=False, bound_cents=None, rounds=1, stopped="time")

    monkeypatch.setattr(batch_solve, "solve_benders", benders)
    result = batch_solve.solve_batch(problem, SolverConfig(time_limit_s=5.0))
    assert result.status == Status.OPTIMAL
    assert result.total_cost_usd == pytest.approx(8.0)
    assert {s.name: s.start for s in result.jobs} == {"A": 7, "B": 2}
    assert validate_batch(result) == []


def test_left_out_job_gets_its_deadline_and_capacity_fix() -> None:
    """One box, 12 h. A: 4 h in [0, 4) (so [0, 4)); B: 4 h in [0, 6). B left out: on the
    plan's free box its earliest end is 4 + 4 = 8 h (deadline day 0.25 → 0.33, +2 h), or a
    second box. Either way the plan costs $4 + $4 = $8."""
    box = offering("box", "owned", "owned", gpu=RTX4090, usd_per_hour=1.0, max_instances=1)
    a = JobSpec("A", [candidate(box, 1, 4, 4.0)], 0, 4)
    b = JobSpec("B", [candidate(box, 1, 4, 4.0)], 0, 6)
    problem = BatchProblem.build([a, b], [owned_resource(box, 1)], 12, GRID)
    plan = GreedyPlan([(0, 0), (None, None)], {}, 400, ("B",))
    e = left_out_explanation(problem, [[0], [0]], plan, "here")
    assert e.conflict == ["deadline:B"]
    delay, grow = e.fixes
    assert delay.change == "move the deadline of 'B' from day 0.25 to day 0.33 (+2.0 h)"
    assert delay.detail["deadline:B"]["needed_hour"] == 8.0
    assert "by 1 boxes, from 1 to 2 (for 'B')" in grow.change
    assert delay.total_cost_usd == grow.total_cost_usd == pytest.approx(8.0)
    assert "1 of 2 jobs placed" in e.message and "not proven impossible" in e.message


def test_a_proven_infeasible_batch_is_still_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same two jobs to CP-SAT: B's soft drop is in every solution (the bound reaches its
    weight), so the batch is proven infeasible and explained, not answered as left out."""
    box = offering("box", "owned", "owned", gpu=RTX4090, usd_per_hour=1.0, max_instances=1)
    a = JobSpec("A", [candidate(box, 1, 4, 4.0)], 0, 4)
    b = JobSpec("B", [candidate(box, 1, 4, 4.0)], 0, 6)
    problem = BatchProblem.build([a, b], [owned_resource(box, 1)], 12, GRID)
    seen: dict[str, Any] = {}

    def benders(problem: BatchProblem, limit_s: float, **_: object) -> BendersOutcome:
        seen["benders"] = True
        return BendersOutcome(proven=False, bound_cents=None, rounds=1, stopped="time")

    monkeypatch.setattr(batch_solve, "solve_benders", benders)
    result = batch_solve.solve_batch(problem, SolverConfig(time_limit_s=5.0))
    assert seen["benders"] and result.status == Status.INFEASIBLE
    assert result.solver["proven_optimal"] is True
    assert result.explanation is not None and "cannot all hold" in result.explanation.message


def test_a_reservation_conflict_names_the_jobs_and_the_nearest_fixes() -> None:
    """At most 1 reserved instance ($50 for the term), two jobs of 4 h that run only on it,
    both due at 6 h (horizon 12 h): one instance runs them back to back by 8 h at best.
    Each of the three requirements is needed: move A's (or B's) deadline to 8 h (+2 h,
    total $50: one instance), or reserve a second instance (both at once, total $100)."""
    rsv = offering("rsv", "reserved", provider="aws", usd_per_hour=0.0)
    jobs = [JobSpec(n, [candidate(rsv, 1, 4, 0.0)], 0, 6) for n in ("A", "B")]
    res = [reservation_resource(rsv, 1, 50.0)]
    r = batch_solve.solve_batch(BatchProblem.build(jobs, res, 12, GRID), SolverConfig(time_limit_s=5.0))
    assert r.status == Status.INFEASIBLE and r.solver["proven_optimal"] is True
    e = r.explanation
    assert e is not None
    assert sorted(e.conflict) == ["capacity:reservation#0", "deadline:A", "deadline:B"]
    fixes = {f.requirement: f for f in e.fixes}
    assert fixes["deadline:A"].detail["deadline:A"]["needed_hour"] == 8.0
    assert fixes["deadline:A"].total_cost_usd == pytest.approx(50.0)
    grow = fixes["capacity:reservation#0"]
    assert grow.detail["capacity:reservation#0"] == {
        "resource": "reservation#0",
        "capacity": 1,
        "needed": 2,
        "jobs": ["A", "B"],
    }
    assert grow.total_cost_usd == pytest.approx(100.0)
    assert "by 1 instances, from 1 to 2 (for 'A', 'B' at once)" in grow.change
    assert "needed at once by 'A', 'B'" in e.message and "Cheapest fix: move the deadline" in e.message
