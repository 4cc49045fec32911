"""Serving jobs through the API: the cheapest replica mix, and the best per GPU type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optimizer.inputs.jobs.common import DocumentSource
from optimizer.inputs.jobs.serve import ServeJob
from optimizer.report.serve import serve_compare_json, serve_json
from optimizer.solve.serve.plan import run_serve, run_serve_compare

__all__ = ["serve", "serve_compare"]


def serve(
    job: ServeJob | DocumentSource,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    time_limit_s: float = 10.0,
) -> dict[str, Any]:
    """Cheapest replica mix for a serving job (TOML path, dict or ServeJob), as `ccopt serve
    --json` returns it."""
    return serve_json(run_serve(job, prices=prices, offline=offline, time_limit_s=time_limit_s))


def serve_compare(
    job: ServeJob | DocumentSource,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    time_limit_s: float = 10.0,
) -> dict[str, Any]:
    """Best serving deployment per GPU type."""
    return serve_compare_json(
        run_serve_compare(job, prices=prices, offline=offline, time_limit_s=time_limit_s)
    )
