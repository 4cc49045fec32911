"""Python API: everything the CLI does, as functions returning plain dicts / results.

>>> from optimizer import api
>>> api.estimate("llama-2-7b", "A100-80GB", num_gpus=8, zero_stage=3, seq_len=4096)
>>> result = api.plan("examples/llama7b_10days.toml")
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optimizer.api.estimate import estimate, resolve_model
from optimizer.inputs.jobs.train import Job, coerce_document, job_from_dict, load_job
from optimizer.pricing.catalog import load_catalog_rows
from optimizer.pricing.schema import OfferingRow
from optimizer.report.batch import batch_dict
from optimizer.report.serve import serve_compare_json, serve_json
from optimizer.report.sizing import sizing_json
from optimizer.report.train import compare_json, plan_json
from optimizer.solve.batch.plan import plan_batch
from optimizer.solve.cpsat.solver import SolverConfig
from optimizer.solve.serve.plan import run_serve, run_serve_compare
from optimizer.solve.train.compare import compare_job
from optimizer.solve.train.plan import PlanResult, plan_job
from optimizer.solve.train.sizing import SizingRule, size_job

# ---- front-end support (branch `report`, issue 24 part 4): catalogs, schemas, argument
# checks; what the CLI needs below the API, re-exported here. `optimizer.api.report` (the
# `ccopt report` sweeps and page) builds on the functions of this module: import it as
# `from optimizer.api import report`.
# isort: split
from optimizer.api.catalog import (
    PriceListing,
    gpu_rows,
    gpus_json,
    model_rows,
    models_json,
    price_listing,
    refresh_prices,
    stack_rows,
    stacks_json,
)
from optimizer.api.checks import DeprecatedName, check_number, warn_renamed
from optimizer.api.schema import schema_names, schema_of

# ---- end of the front-end block

__all__ = [
    "estimate",
    "plan",
    "plan_result",
    "plan_json",
    "compare",
    "serve",
    "serve_compare",
    "batch",
    "batch_json",
    "resolve_model",
    "sizing",
    # front-end support (branch `report`, the block above)
    "PriceListing",
    "gpu_rows",
    "gpus_json",
    "model_rows",
    "models_json",
    "price_listing",
    "refresh_prices",
    "stack_rows",
    "stacks_json",
    "DeprecatedName",
    "check_number",
    "warn_renamed",
    "schema_names",
    "schema_of",
]


def _train_job(
    job: Any, prices: str | Path | None, offline: bool | None
) -> tuple[Job, Path | None, tuple[OfferingRow, ...] | None, dict[str, Any] | None]:
    """The job (TOML path, dict or Job), its base directory, the price rows it needs and their
    age (None without cloud)."""
    job, base_dir = coerce_document(job, Job, load_job, job_from_dict)
    if not job.constraints.cloud:
        return job, base_dir, None, None
    loaded = load_catalog_rows(prices, offline=offline)
    return job, base_dir, loaded.rows, loaded.age.as_dict()


def plan_result(
    job: Any,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    alternatives: int = 3,
    pareto: bool = False,
    time_limit_s: float = 10.0,
) -> PlanResult:
    """Plan a job (a Job, a dict, or a TOML path). Returns the PlanResult (objects).

    `prices` is an offerings CSV to use instead of the user cache / bundled tables.
    """
    job, base_dir, rows, age = _train_job(job, prices, offline)
    result = plan_job(
        job,
        rows,
        base_dir,
        alternatives=alternatives,
        pareto=pareto,
        config=SolverConfig(time_limit_s=time_limit_s),
    )
    result.catalog = age
    return result


def plan(job: Any, **options: Any) -> dict[str, Any]:
    """Plan a job, as the `ccopt plan --json` contract (options as in `plan_result`)."""
    return plan_json(plan_result(job, **options))


def compare(job: Any, *, prices: str | Path | None = None, offline: bool | None = None) -> dict[str, Any]:
    """Best plan per GPU type, per provider, and cloud vs owned/bought with the break-even."""
    job, base_dir, rows, age = _train_job(job, prices, offline)
    out = compare_json(compare_job(job, rows, base_dir))
    return {**out, "catalog": age} if age is not None else out


def sizing(
    job: Any, *, prices: str | Path | None = None, offline: bool | None = None, rule: SizingRule | None = None
) -> dict[str, Any]:
    """The sizing runs that would settle a training job: contending GPU types, steps, minutes,
    offering and cost of each reading, and the `ccopt calibrate` line to feed it back."""
    job, base_dir, rows, age = _train_job(job, prices, offline)
    out = sizing_json(size_job(job, rows, base_dir, rule), rule)
    return {**out, "catalog": age} if age is not None else out


def serve(
    job: Any, *, prices: str | Path | None = None, offline: bool | None = None, time_limit_s: float = 10.0
) -> dict[str, Any]:
    """Cheapest replica mix for a serving job (TOML path, dict or ServeJob), as `ccopt serve
    --json` returns it."""
    return serve_json(run_serve(job, prices=prices, offline=offline, time_limit_s=time_limit_s))


def serve_compare(
    job: Any, *, prices: str | Path | None = None, offline: bool | None = None, time_limit_s: float = 10.0
) -> dict[str, Any]:
    """Best serving deployment per GPU type."""
    return serve_compare_json(
        run_serve_compare(job, prices=prices, offline=offline, time_limit_s=time_limit_s)
    )


def batch(
    batch_file: Any,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    time_limit_s: float = 30.0,
    workers: int = 2,
    on_progress: Any = None,
    on_job: Any = None,
) -> Any:
    """Plan many jobs at once (a batch TOML path, a dict or a BatchFile). Returns a BatchResult;
    batch_json(result) gives the `ccopt batch --json` contract. `on_job(i, n, name)` is called before
    job i of n is enumerated, `on_progress(event)` with each improving solution."""
    return plan_batch(
        batch_file,
        prices=prices,
        offline=offline,
        config=SolverConfig(time_limit_s=time_limit_s, workers=workers),
        on_progress=on_progress,
        on_job=on_job,
    )


def batch_json(result: Any) -> dict[str, Any]:
    """A BatchResult in the `ccopt batch --json` contract."""
    return batch_dict(result)


# ---- one request shape (issue 24): the configuration request of estimate, calibrate, sizing
# and measure, and what their CLI modules use (they import nothing below optimizer.api) ----
from optimizer.api.calibrate_run import calibrate_request, calibrate_run, point_request  # noqa: E402
from optimizer.api.configuration import Built, build_configuration  # noqa: E402
from optimizer.api.estimate import assumptions_with, estimate_request, evaluate  # noqa: E402
from optimizer.api.plan_row import plan_row_request, read_plan_file  # noqa: E402
from optimizer.inputs.calibration_file import MIN_EFFICIENCY  # noqa: E402
from optimizer.inputs.request import (  # noqa: E402
    OLD_NAMES,
    SERVE_FIELDS,
    ConfigRequest,
    RequestOption,
    request_flags,
    request_from_options,
    request_options,
)

__all__ += [
    "ConfigRequest",
    "RequestOption",
    "OLD_NAMES",
    "SERVE_FIELDS",
    "request_from_options",
    "request_options",
    "request_flags",
    "Built",
    "build_configuration",
    "estimate_request",
    "evaluate",
    "assumptions_with",
    "plan_row_request",
    "read_plan_file",
    "calibrate_run",
    "calibrate_request",
    "point_request",
    "MIN_EFFICIENCY",
    "check_number",
    "SizingRule",
]
