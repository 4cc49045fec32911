"""The CP-SAT wrapper: statuses and extra parameters."""

import pytest
from ortools.sat.python import cp_model

from optimizer.errors import SolverError
from optimizer.solve.cpsat.scale import budget_cents, deadline_seconds, to_cents, to_seconds
from optimizer.solve.cpsat.solver import SolverConfig, solve


def _model(feasible: bool) -> cp_model.CpModel:
    m = cp_model.CpModel()
    x = m.new_int_var(0, 10, "x")
    m.add(x >= (3 if feasible else 11))
    m.minimize(x)
    return m


def test_optimal_and_infeasible() -> None:
    res = solve(_model(True), SolverConfig(extra={"linearization_level": 2, "subsolvers": ["default_lp"]}))
    assert res.status == "optimal" and res.proven_optimal and res.objective == 3
    assert solve(_model(False)).status == "infeasible"


def test_invalid_model_raises() -> None:
    m = cp_model.CpModel()
    x = m.new_int_var(0, 10, "x")
    m.add_division_equality(x, x, 0)  # division by zero: MODEL_INVALID
    with pytest.raises(SolverError, match="invalid"):
        solve(m)


def test_scaling_rounds_in_the_safe_direction() -> None:
    # costs and durations round up, limits round down: a plan the solver accepts never
    # exceeds what the user allowed
    assert to_cents(10.001) == 1001 and budget_cents(10.009) == 1000
    assert to_seconds(1 / 3600 * 1.5) == 2 and deadline_seconds(1 / 3600 * 1.5) == 1
