"""Plan a batch end to end: load → enumerate → solve → validate (solve_batch validates)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optimizer.inputs.jobs.batch import BatchFile, batch_from_dict, load_batch
from optimizer.inputs.jobs.train import coerce_document, with_confidence
from optimizer.pricing.catalog import load_catalog_rows
from optimizer.solve.batch.enumerate import build_problem
from optimizer.solve.batch.problem import BatchResult, ProgressEvent
from optimizer.solve.batch.solve import solve_batch
from optimizer.solve.cpsat.solver import SolverConfig

__all__ = ["plan_batch"]


def plan_batch(
    batch: BatchFile | dict[str, Any] | str | Path,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    config: SolverConfig | None = None,
    on_progress: Callable[[ProgressEvent], None] | None = None,
    on_job: Callable[[int, int, str], None] | None = None,
    confidence: float | None = None,
) -> BatchResult:
    """Plan a batch: a BatchFile, a dict, or the path of a batch TOML file.

    Args:
        batch: the batch to plan.
        prices: an offerings CSV instead of the user cache / bundled tables.
        offline: True forces the bundled tables; None reads CCOPT_OFFLINE.
        config: solver time limit (for the whole call: loading, enumeration and solving),
            workers, seed.
        on_progress: called with each improving solution.
        on_job: called as on_job(i, n, name) before job i (1-based) of n is enumerated.
        confidence: every job's deadline met at this quantile of its band (None: each job's
            constraints.confidence).

    Returns:
        The validated BatchResult (status infeasible with an explanation, not an exception).

    Raises:
        ConfigError: invalid batch file or [capacity] entry (one line naming the field).
        CatalogError: the price tables fail validation.
        SolverError: no plan within the time limit (the message says where the time went).
    """
    started = time.perf_counter()  # the time limit covers the whole command
    batch_file, base_dir = coerce_document(batch, BatchFile, load_batch, batch_from_dict, "batch")
    if confidence is not None:
        jobs = tuple(with_confidence(j, confidence) for j in batch_file.job)
        batch_file = batch_file.model_copy(update={"job": jobs})
    loaded = load_catalog_rows(
        prices,
        offline=offline,
        overlay=batch_file.pricing,
        overlay_label=f"{batch_file.name} [pricing]",
        keep_regions=batch_file.named_regions(),
    )
    problem = build_problem(batch_file, loaded.rows, base_dir, on_job=on_job)
    result = solve_batch(problem, config, on_progress=on_progress, started=started)
    result.catalog = loaded.age.as_dict()
    return result
