"""Plan a loaded batch end to end: enumerate → solve → validate (solve_batch validates).

Reading the batch file and the price tables is the API's (optimizer/api/batch_jobs.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from optimizer.inputs.jobs.batch import BatchFile
from optimizer.pricing.schema import OfferingRow
from optimizer.solve.batch.enumerate import build_problem
from optimizer.solve.batch.problem import BatchResult, ProgressEvent
from optimizer.solve.batch.solve import solve_batch
from optimizer.solve.cpsat.solver import SolverConfig

__all__ = ["plan_batch"]


def plan_batch(
    batch: BatchFile,
    rows: Sequence[OfferingRow] | None,
    base_dir: Path | None = None,
    *,
    config: SolverConfig | None = None,
    on_progress: Callable[[ProgressEvent], None] | None = None,
    on_job: Callable[[int, int, str], None] | None = None,
    started: float | None = None,
) -> BatchResult:
    """Plan a validated batch over the price catalog's rows.

    Args:
        batch: the batch, as loaded (and its confidence applied) by the API.
        rows: the price catalog as typed rows (None: no cloud, no reservations).
        base_dir: where relative model paths (hf_config) are resolved.
        config: solver time limit (for the whole call since `started`), workers, seed.
        on_progress: called with each improving solution.
        on_job: called as on_job(i, n, name) before job i (1-based) of n is enumerated.
        started: when the command started (time.perf_counter()); default: now.

    Returns:
        The validated BatchResult (status infeasible with an explanation, not an exception;
        also when no plan found within the time limit runs every job, not proven then).

    Raises:
        SolverError: an invalid model or a plan that fails validation (a bug).
    """
    started = time.perf_counter() if started is None else started
    problem = build_problem(batch, rows, base_dir, on_job=on_job)
    return solve_batch(problem, config, on_progress=on_progress, started=started)
