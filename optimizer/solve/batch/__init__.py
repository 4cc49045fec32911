"""Batch planner: many jobs on shared quotas, owned boxes and sized reservations (CP-SAT).

Modules in data-flow order: grid (time steps) → problem (resources, jobs, rows, results) →
enumerate (a batch file as a problem) → model (CP-SAT builders) → hints (greedy schedule,
left shift) → repair (ejection moves) → master, benders (decomposition, its lower bound) →
probe (reserved counts a cheaper plan cannot use) → lns (large batches, window by window) →
solve (solve_batch) → explain (infeasibility core, fixes) → validate (plain Python check) →
plan (plan_batch, end to end). The JSON contract is optimizer/report/batch.py.
"""

from optimizer.solve.batch.enumerate import build_problem
from optimizer.solve.batch.grid import TimeGrid, choose_time_grid
from optimizer.solve.batch.plan import plan_batch
from optimizer.solve.batch.problem import (
    BatchProblem,
    BatchResult,
    Explanation,
    Fix,
    JobSpec,
    ProgressEvent,
    Resource,
    ScheduledJob,
)
from optimizer.solve.batch.solve import solve_batch
from optimizer.solve.batch.validate import validate_batch

__all__ = [
    "BatchProblem",
    "BatchResult",
    "Explanation",
    "Fix",
    "JobSpec",
    "ProgressEvent",
    "Resource",
    "ScheduledJob",
    "TimeGrid",
    "build_problem",
    "choose_time_grid",
    "plan_batch",
    "solve_batch",
    "validate_batch",
]
