"""Batches through the API: many jobs at once on shared quota, reservations and owned boxes."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optimizer.api.job_files import priced_rows
from optimizer.inputs.jobs.batch import BatchFile, batch_from_dict, load_batch
from optimizer.inputs.jobs.common import DocumentSource, coerce_document
from optimizer.inputs.jobs.train import with_confidence
from optimizer.report.batch import batch_dict
from optimizer.solve.batch.plan import plan_batch
from optimizer.solve.batch.problem import BatchResult, ProgressEvent
from optimizer.solve.cpsat.solver import SolverConfig

__all__ = ["batch", "batch_json"]


def batch(
    batch_file: BatchFile | DocumentSource,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    time_limit_s: float = 30.0,
    workers: int = 2,
    on_progress: Callable[[ProgressEvent], None] | None = None,
    on_job: Callable[[int, int, str], None] | None = None,
    confidence: float | None = None,
) -> BatchResult:
    """Plan many jobs at once (a batch TOML path, a dict or a BatchFile). Returns a BatchResult;
    batch_json(result) gives the `ccopt batch --json` contract. `on_job(i, n, name)` is called before
    job i of n is enumerated, `on_progress(event)` with each improving solution; `confidence`
    overrides every job's constraints.confidence.

    Raises:
        ConfigError: invalid batch file or [capacity] entry (one line naming the field).
        CatalogError: the price tables fail validation.
        SolverError: no plan within the time limit (the message says where the time went).
    """
    started = time.perf_counter()  # the time limit covers the whole command, loading too
    loaded_batch, base_dir = coerce_document(batch_file, BatchFile, load_batch, batch_from_dict, "batch")
    if confidence is not None:
        jobs = tuple(with_confidence(j, confidence) for j in loaded_batch.job)
        loaded_batch = loaded_batch.model_copy(update={"job": jobs})
    rows, catalog = priced_rows(loaded_batch, prices, offline)
    result = plan_batch(
        loaded_batch,
        rows,
        base_dir,
        config=SolverConfig(time_limit_s=time_limit_s, workers=workers),
        on_progress=on_progress,
        on_job=on_job,
        started=started,
    )
    result.catalog = catalog
    return result


def batch_json(result: BatchResult) -> dict[str, Any]:
    """A BatchResult in the `ccopt batch --json` contract."""
    return batch_dict(result)
