"""Serving jobs through the API: the cheapest replica mix, and the best per GPU type. The job
file (or dict) and the catalog are loaded here; the serving planner takes them parsed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from optimizer.api.job_files import rows_if_cloud
from optimizer.inputs.jobs.common import coerce_document
from optimizer.inputs.jobs.serve import ServeJob, load_serve_job, serve_job_from_dict
from optimizer.pricing.schema import OfferingRow
from optimizer.report.serve import serve_compare_json, serve_json
from optimizer.solve.cpsat.solver import SolverConfig
from optimizer.solve.serve.plan import compare_serving, plan_serving
from optimizer.solve.serve.result import ServeComparison, ServeResult

__all__ = ["serve", "serve_compare", "run_serve", "run_serve_compare", "ServeDocument"]

#: a serving job as the API takes it: a TOML path, a decoded dict or a validated ServeJob
ServeDocument = str | Path | dict[str, Any] | ServeJob


def _load(
    job: ServeDocument, prices: str | Path | None, offline: bool | None
) -> tuple[ServeJob, tuple[OfferingRow, ...] | None, Path | None, dict[str, Any] | None]:
    """The job (path, dict or ServeJob), the catalog rows if it may use cloud, its directory,
    and the catalog's age (None without cloud)."""
    parsed, base_dir = coerce_document(job, ServeJob, load_serve_job, serve_job_from_dict)
    rows, age = rows_if_cloud(parsed, parsed.constraints.cloud, prices, offline)
    return parsed, rows, base_dir, age


def run_serve(
    job: ServeDocument,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    time_limit_s: float = 10.0,
) -> ServeResult:
    """Plan a serving job given as a TOML path, a dict or a ServeJob (see plan_serving)."""
    j, rows, base_dir, age = _load(job, prices, offline)
    return replace(plan_serving(j, rows, base_dir, SolverConfig(time_limit_s=time_limit_s)), catalog=age)


def run_serve_compare(
    job: ServeDocument,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    time_limit_s: float = 10.0,
) -> ServeComparison:
    """Best deployment per GPU type for a serving job (see compare_serving)."""
    j, rows, base_dir, age = _load(job, prices, offline)
    result = compare_serving(j, rows, base_dir, SolverConfig(time_limit_s=time_limit_s))
    return replace(result, best=replace(result.best, catalog=age))


def serve(
    job: ServeDocument,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    time_limit_s: float = 10.0,
) -> dict[str, Any]:
    """Cheapest replica mix for a serving job (TOML path, dict or ServeJob), as `ccopt serve
    --json` returns it."""
    return serve_json(run_serve(job, prices=prices, offline=offline, time_limit_s=time_limit_s))


def serve_compare(
    job: ServeDocument,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    time_limit_s: float = 10.0,
) -> dict[str, Any]:
    """Best serving deployment per GPU type."""
    return serve_compare_json(
        run_serve_compare(job, prices=prices, offline=offline, time_limit_s=time_limit_s)
    )
