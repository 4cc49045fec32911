"""Thin CP-SAT wrapper: config -> parameters, status -> result (every status handled)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

from optimizer.errors import SolverError

__all__ = ["SolverConfig", "SolveResult", "solve"]


@dataclass(frozen=True)
class SolverConfig:
    time_limit_s: float = 10.0
    workers: int = 2  # this project targets 2-core machines
    seed: int = 0
    relative_gap: float = 0.0
    log: bool = False
    #: CP-SAT's interleaved search: the workers' subsolvers run in fixed batches, so the same
    #: model gives the same answer whatever the thread timing (ties between equal-cost optima
    #: are broken the same way every run; sat_parameters.proto `interleave_search`)
    deterministic: bool = True
    #: any other CP-SAT parameter by name (e.g. {"linearization_level": 2}); list values extend
    #: repeated fields such as "subsolvers"
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SolveResult:
    status: str  # optimal | feasible | infeasible
    objective: float | None
    bound: float | None
    wall_s: float
    proven_optimal: bool
    solver: Any  # the CpSolver, to read values

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": "cp-sat",
            "status": self.status,
            "wall_s": round(self.wall_s, 4),
            "proven_optimal": self.proven_optimal,
            "objective": self.objective,
            "best_bound": self.bound,
        }


def solve(
    model: cp_model.CpModel,
    config: SolverConfig | None = None,
    callback: cp_model.CpSolverSolutionCallback | None = None,
) -> SolveResult:
    """Solve a CpModel. Raises SolverError for MODEL_INVALID or UNKNOWN (time limit, no solution)."""

    cfg = config or SolverConfig()
    solver = cp_model.CpSolver()
    params = solver.parameters
    params.max_time_in_seconds = cfg.time_limit_s
    params.num_workers = cfg.workers
    params.random_seed = cfg.seed
    params.relative_gap_limit = cfg.relative_gap
    params.log_search_progress = cfg.log
    params.interleave_search = cfg.deterministic
    for name, value in cfg.extra.items():
        if isinstance(value, (list, tuple)):
            getattr(params, name).extend(value)
        else:
            setattr(params, name, value)
    start = time.perf_counter()
    status = solver.solve(model, callback) if callback is not None else solver.solve(model)
    wall = time.perf_counter() - start
    if status == cp_model.OPTIMAL:
        return SolveResult("optimal", solver.objective_value, solver.best_objective_bound, wall, True, solver)
    if status == cp_model.FEASIBLE:
        return SolveResult(
            "feasible", solver.objective_value, solver.best_objective_bound, wall, False, solver
        )
    if status == cp_model.INFEASIBLE:
        return SolveResult("infeasible", None, None, wall, True, solver)
    if status == cp_model.MODEL_INVALID:
        raise SolverError(f"CP-SAT model invalid: {model.validate()}")
    raise SolverError(
        f"CP-SAT found no solution within {cfg.time_limit_s} s (status UNKNOWN); raise the time limit"
    )
