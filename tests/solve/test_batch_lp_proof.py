"""A large batch whose Benders master has no LP solution is answered infeasible, proven, at
once (solve.py, benders._first_bound): by hand on one owned box."""

from __future__ import annotations

import pytest
from test_batch_synth import RTX4090, candidate, offering, owned_resource

from optimizer.errors import Status
from optimizer.solve.batch import solve as batch_solve
from optimizer.solve.batch.grid import TimeGrid
from optimizer.solve.batch.leftout import PROVEN
from optimizer.solve.batch.master import Master
from optimizer.solve.batch.problem import BatchProblem, JobSpec
from optimizer.solve.cpsat.solver import SolverConfig

GRID = TimeGrid(1.0)


def _two_on_one_box(hours: float) -> BatchProblem:
    """One box, 12 h; A and B each need it for `hours` inside [0, 6)."""
    box = offering("box", "owned", "owned", gpu=RTX4090, usd_per_hour=1.0, max_instances=1)
    jobs = [JobSpec(n, [candidate(box, 1, hours, hours)], 0, 6) for n in ("A", "B")]
    return BatchProblem.build(jobs, [owned_resource(box, 1)], 12, GRID)


def test_lp_relaxation_by_hand() -> None:
    """3 h + 3 h fit the box's 6 h in [0, 6): LP optimum $6 (600 cents, less LP_SLACK);
    4 h + 4 h = 8 box-hours in a 6-hour window: no LP solution (bound inf)."""
    fits = _two_on_one_box(3)
    relaxed = Master(fits, [[0], [0]]).relaxed(5.0)
    assert relaxed is not None
    bound, chosen, _ = relaxed
    assert bound == pytest.approx(600, abs=0.01) and bound <= 600
    assert chosen == [0, 0]
    tight = _two_on_one_box(4)
    master = Master(tight, [[0], [0]])
    relaxed = master.relaxed(5.0)
    assert relaxed is not None and relaxed[0] == float("inf")
    # 8 box-hours in 6 hours: the box would have to be 8/6 = 1.33 boxes
    assert master.capacity_factor(5.0) == pytest.approx(8 / 6)


def test_large_path_answers_proven_infeasible(monkeypatch: pytest.MonkeyPatch) -> None:
    """The large-batch path on the 4 h + 4 h batch: infeasible, proven, one job named with
    the proof's wording, within the first second (no window search)."""
    monkeypatch.setattr(batch_solve, "BENDERS_LARGE_JOBS", 0)
    result = batch_solve.solve_batch(_two_on_one_box(4), SolverConfig(time_limit_s=20.0))
    assert result.status == Status.INFEASIBLE
    assert result.solver["proven_optimal"] is True
    assert result.explanation is not None and PROVEN in result.explanation.message
    assert len(result.explanation.conflict) == 1
    assert "owned resource ×1.33" in result.explanation.message
    assert result.solver["solve_s"] < 5.0
