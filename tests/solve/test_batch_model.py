"""Batch planner on hand-made cases: sharing, reservations, dropping, symmetry, infeasibility."""

from __future__ import annotations

import pytest
from test_batch_synth import (
    RTX4090,
    candidate,
    offering,
    owned_resource,
    quota_resource,
    reservation_resource,
)

from optimizer.errors import ConfigError, Status
from optimizer.solve.batch.grid import TimeGrid
from optimizer.solve.batch.hints import greedy_schedule
from optimizer.solve.batch.problem import BatchProblem, JobSpec
from optimizer.solve.batch.solve import solve_batch
from optimizer.solve.batch.validate import validate_batch
from optimizer.solve.cpsat.solver import SolverConfig

GRID = TimeGrid(1.0)
CONFIG = SolverConfig(time_limit_s=10.0)


def _plan(result) -> dict[str, tuple[str | None, float | None]]:
    return {s.name: (s.row.candidate.offering.key if s.row else None, s.start_h) for s in result.jobs}


def test_sharing_two_jobs_split_between_owned_box_and_cloud() -> None:
    """Each job alone would take the owned box; together one must rent.

    Owned box: 1 box of 8× RTX 4090 at $0.62 per busy hour (power). Horizon and both
    deadlines 20 h.
      job A: box 12 h → 12 × 0.62 = $7.44;  cloud 8× H100, 3 h at $31.92/h → $95.76
      job B: box 10 h → 10 × 0.62 = $6.20;  cloud 8× H100, 2.5 h at $31.92/h → $79.80
    Alone, each picks the box ($7.44, $6.20). Together 12 + 10 = 22 h > 20 h on one box, so
    one rents:  A box + B cloud = 7.44 + 79.80 = $87.24;  B box + A cloud = 6.20 + 95.76 =
    $101.96.  Optimum: A on the box, B on the cloud, $87.24.
    """
    box = offering("box", "owned", "owned", gpu=RTX4090, usd_per_hour=0.62, max_instances=1)
    cloud = offering("h100", provider="lambda", usd_per_hour=31.92)
    a = JobSpec("A", [candidate(box, 1, 12, 7.44), candidate(cloud, 1, 3, 95.76)], 0, 20)
    b = JobSpec("B", [candidate(box, 1, 10, 6.20), candidate(cloud, 1, 2.5, 79.80)], 0, 20)
    resources = [owned_resource(box, 1)]
    for alone in (a, b):
        r = solve_batch(BatchProblem.build([alone], resources, 20, GRID), CONFIG)
        assert _plan(r)[alone.name][0] == "box"
    result = solve_batch(BatchProblem.build([a, b], resources, 20, GRID), CONFIG)
    assert result.status == Status.OPTIMAL
    assert result.total_cost_usd == pytest.approx(87.24)
    assert _plan(result) == {"A": ("box", 0.0), "B": ("h100", 0.0)}
    assert validate_batch(result) == []


def test_sharing_with_a_later_release_lets_both_use_the_box() -> None:
    """Same jobs, but B may only start at hour 12 and has until 22 h: the box runs A on
    [0, 12) and B on [12, 22): $7.44 + $6.20 = $13.64 with no rent."""
    box = offering("box", "owned", "owned", gpu=RTX4090, usd_per_hour=0.62, max_instances=1)
    cloud = offering("h100", provider="lambda", usd_per_hour=31.92)
    a = JobSpec("A", [candidate(box, 1, 12, 7.44), candidate(cloud, 1, 3, 95.76)], 0, 20)
    b = JobSpec("B", [candidate(box, 1, 10, 6.20), candidate(cloud, 1, 2.5, 79.80)], 12, 22)
    result = solve_batch(BatchProblem.build([a, b], [owned_resource(box, 1)], 24, GRID), CONFIG)
    assert result.total_cost_usd == pytest.approx(13.64)
    assert _plan(result) == {"A": ("box", 0.0), "B": ("box", 12.0)}


def test_quota_caps_concurrent_gpus() -> None:
    """Quota 8 GPUs, two jobs each needing one 8-GPU instance for 2 h ($20) and a
    deadline of 4 h: they run back to back [0,2) and [2,4) at $40; with a 3 h deadline the
    second must take the $50 unlimited offering: $70."""
    q = offering("q", provider="quoted", gpus=8)
    free = offering("f", provider="elsewhere", gpus=8)
    jobs = [JobSpec(n, [candidate(q, 1, 2, 20), candidate(free, 1, 2, 50)], 0, 4) for n in ("x", "y")]
    res = [quota_resource("quoted", 8)]
    r = solve_batch(BatchProblem.build(jobs, res, 6, GRID), CONFIG)
    assert r.total_cost_usd == pytest.approx(40)
    assert sorted(s.start_h for s in r.jobs) == [0.0, 2.0]
    tight = [JobSpec(j.name, j.candidates, 0, 3) for j in jobs]
    r = solve_batch(BatchProblem.build(tight, res, 6, GRID), CONFIG)
    assert r.total_cost_usd == pytest.approx(70)


def test_reservation_is_sized_by_the_solver() -> None:
    """A reserved instance costs $50 for the term whether used or not; on-demand runs cost
    $40 per job (3 h); reserved runs are free at the margin.
      2 jobs, horizon 6 h: R = 1 runs both back to back: $50 < 2 × $40 = $80 → R = 1.
      1 job: R = 0 and on-demand: $40 < $50.
      3 jobs, horizon 6 h, deadlines 6 h: R = 1 holds two, the third on demand: $90;
      R = 2: $100; R = 0: $120 → R = 1, $90."""
    rsv = offering("rsv", "reserved", provider="aws", usd_per_hour=0.0)
    od = offering("od", provider="aws", usd_per_hour=13.33)
    res = [reservation_resource(rsv, 2, 50.0)]

    def jobs(n: int) -> list[JobSpec]:
        return [
            JobSpec(f"j{i}", [candidate(rsv, 1, 3, 0.0), candidate(od, 1, 3, 40.0)], 0, 6) for i in range(n)
        ]

    expected = {1: (0, 40.0), 2: (1, 100.0 - 50.0), 3: (1, 90.0)}
    for n, (reserved, total) in expected.items():
        r = solve_batch(BatchProblem.build(jobs(n), res, 6, GRID), CONFIG)
        assert r.reserved == {"reservation#0": reserved}
        assert r.total_cost_usd == pytest.approx(total)
        assert validate_batch(r) == []


def test_droppable_job_is_dropped_when_running_it_costs_more_than_its_value() -> None:
    """Box busy with a required job over the whole window; the optional job would cost $90
    in the cloud but is worth $60: dropped, objective $6 + $60, spend $6."""
    box = offering("box", "owned", "owned", gpu=RTX4090, max_instances=1)
    cloud = offering("c", provider="x")
    must = JobSpec("must", [candidate(box, 1, 6, 6.0)], 0, 6)
    maybe = JobSpec(
        "maybe", [candidate(box, 1, 2, 2.0), candidate(cloud, 1, 2, 90.0)], 0, 6, penalty_usd=60.0
    )
    r = solve_batch(BatchProblem.build([must, maybe], [owned_resource(box, 1)], 6, GRID), CONFIG)
    assert _plan(r)["maybe"] == (None, None)
    assert r.total_cost_usd == pytest.approx(6.0) and r.dropped_value_usd == 60.0
    assert r.solver["objective_usd"] == pytest.approx(66.0)


def test_identical_jobs_with_symmetry_breaking_keep_the_optimum() -> None:
    """Five identical 2 h jobs on one box within 6 h (three fit), droppable at $10, cloud at
    $15: three on the box ($1 each), two in the cloud ($15 < $10? no: dropped at $10 each)
    → spend $3, objective $23; starts ordered by file order."""
    box = offering("box", "owned", "owned", gpu=RTX4090, max_instances=1)
    cloud = offering("c", provider="x")
    cands = [candidate(box, 1, 2, 1.0), candidate(cloud, 1, 2, 15.0)]
    jobs = [JobSpec(f"j{i}", cands, 0, 6, penalty_usd=10.0) for i in range(5)]
    r = solve_batch(BatchProblem.build(jobs, [owned_resource(box, 1)], 6, GRID), CONFIG)
    assert r.status == Status.OPTIMAL
    assert r.solver["objective_usd"] == pytest.approx(23.0)
    assert [s.row is None for s in r.jobs].count(True) == 2
    assert validate_batch(r) == []


def test_greedy_hint_is_feasible() -> None:
    box = offering("box", "owned", "owned", gpu=RTX4090, max_instances=1)
    jobs = [JobSpec(f"j{i}", [candidate(box, 1, 2, 1.0)], 0, 8) for i in range(4)]
    p = BatchProblem.build(jobs, [owned_resource(box, 1)], 8, GRID)
    plan = greedy_schedule(p, [list(range(len(j.rows))) for j in p.jobs])
    assert sorted(t for _, t in plan) == [0, 2, 4, 6]


def test_infeasible_batch_names_the_conflict_and_the_cheapest_fixes() -> None:
    """Two required jobs, both 6 h on the only box (power $1/h): A due at 8 h, B at 10 h,
    horizon 12 h. B also has a cloud row of 4 GPUs for 3 h ($30) but the quota is 2 GPUs.
    Nothing works: both on the box need 12 h by hour 10. Every one of the four requirements
    is needed for the conflict (relax any one and a plan exists), so the core is all four:
      relax A's deadline: B [0,6), A [6,12) → A needs 12 h (+4 h), cost $12
      relax B's deadline: A [0,6), B [6,12) → B needs 12 h (+2 h), cost $12
      a second box: both at once, cost $12
      quota 2 → 4 GPUs: A on the box, B in the cloud: 6 + 30 = $36
    """
    box = offering("box", "owned", "owned", gpu=RTX4090, max_instances=1)
    cloud = offering("q", provider="quoted", gpus=4)
    a = JobSpec("A", [candidate(box, 1, 6, 6.0)], 0, 8)
    b = JobSpec("B", [candidate(box, 1, 6, 6.0), candidate(cloud, 1, 3, 30.0)], 0, 10)
    res = [owned_resource(box, 1), quota_resource("quoted", 2)]
    r = solve_batch(BatchProblem.build([a, b], res, 12, GRID), CONFIG)
    assert r.status == Status.INFEASIBLE and r.jobs == []
    e = r.explanation
    assert e is not None
    assert sorted(e.conflict) == ["capacity:owned#0", "capacity:quota#0", "deadline:A", "deadline:B"]
    fixes = {f.requirement: f for f in e.fixes}
    assert fixes["deadline:A"].detail["deadline:A"]["needed_hour"] == 12.0
    assert fixes["deadline:B"].detail["deadline:B"]["needed_hour"] == 12.0
    assert fixes["capacity:owned#0"].detail["capacity:owned#0"]["needed"] == 2
    assert fixes["capacity:quota#0"].detail["capacity:quota#0"]["needed"] == 4
    assert fixes["capacity:quota#0"].total_cost_usd == pytest.approx(36.0)
    assert e.fixes[0].total_cost_usd == pytest.approx(12.0)
    assert (
        "raise quota quoted H100-80GB by 2 GPUs, from 2 to 4 (for 'B' at once)"
        in fixes["capacity:quota#0"].change
    )
    assert "cannot all hold" in e.message and "Cheapest fix" in e.message


def test_a_job_that_cannot_fit_the_horizon_is_named_without_solving() -> None:
    box = offering("box", "owned", "owned", gpu=RTX4090, max_instances=1)
    slow = JobSpec("slow", [candidate(box, 1, 30, 30.0)], 0, None)
    r = solve_batch(BatchProblem.build([slow], [owned_resource(box, 1)], 24, GRID), CONFIG)
    assert r.status == Status.INFEASIBLE
    assert r.explanation is not None and "slow" in r.explanation.message
    assert "30.0 h" in r.explanation.message


def test_release_past_the_horizon_is_a_config_error() -> None:
    box = offering("box", "owned", "owned", gpu=RTX4090)
    with pytest.raises(ConfigError, match="release"):
        BatchProblem.build(
            [JobSpec("late", [candidate(box, 1, 1, 1)], release_h=30)], [owned_resource(box, 1)], 24, GRID
        )
