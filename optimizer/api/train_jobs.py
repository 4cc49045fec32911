"""Training jobs through the API: plan, compare, sizing and replan of a job file, dict or Job."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from optimizer.api.job_files import rows_if_cloud
from optimizer.inputs.jobs.common import DocumentSource
from optimizer.inputs.jobs.train import Job, coerce_document, job_from_dict, load_job, with_confidence
from optimizer.pricing.schema import OfferingRow
from optimizer.report.train import compare_json, plan_json
from optimizer.solve.cpsat.solver import SolverConfig
from optimizer.solve.train.plan import PlanResult, plan_job

if TYPE_CHECKING:  # the sizing stack loads with `sizing` (ccopt plan does not need it)
    from optimizer.solve.train.sizing import SizingRule

__all__ = ["plan_result", "plan", "plan_json", "compare", "sizing", "SizingRule", "replan"]


def _train_job(
    job: Job | DocumentSource,
    prices: str | Path | None,
    offline: bool | None,
    confidence: float | None = None,
) -> tuple[Job, Path | None, tuple[OfferingRow, ...] | None, dict[str, Any] | None]:
    """The job (TOML path, dict or Job) at `confidence` (None: its own), its base directory,
    the price rows it needs and their age (None without cloud)."""
    loaded_job, base_dir = coerce_document(job, Job, load_job, job_from_dict)
    the_job = with_confidence(loaded_job, confidence)
    rows, age = rows_if_cloud(the_job, the_job.constraints.cloud, prices, offline)
    return the_job, base_dir, rows, age


def _with_catalog(out: dict[str, Any], age: dict[str, Any] | None) -> dict[str, Any]:
    """An output with the catalog's age added (as the plan states it), unchanged without cloud."""
    return out if age is None else {**out, "catalog": age}


def plan_result(
    job: Job | DocumentSource,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    alternatives: int = 3,
    pareto: bool = False,
    time_limit_s: float = 10.0,
    confidence: float | None = None,
) -> PlanResult:
    """Plan a job (a Job, a dict, or a TOML path). Returns the PlanResult (objects).

    `prices` is an offerings CSV to use instead of the user cache / bundled tables;
    `confidence` overrides the job's constraints.confidence (the quantile the deadline and the
    budget are met at, 0.5-0.99).
    """
    job, base_dir, rows, age = _train_job(job, prices, offline, confidence)
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


def plan(job: Job | DocumentSource, **options: Any) -> dict[str, Any]:
    """Plan a job, as the `ccopt plan --json` contract (options as in `plan_result`)."""
    return plan_json(plan_result(job, **options))


def compare(
    job: Job | DocumentSource,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    confidence: float | None = None,
) -> dict[str, Any]:
    """Best plan per GPU type, per provider, and cloud vs owned/bought with the break-even."""
    from optimizer.solve.train.compare import compare_job  # lazy: ccopt plan needs no comparison

    job, base_dir, rows, age = _train_job(job, prices, offline, confidence)
    out = compare_json(compare_job(job, rows, base_dir))
    return _with_catalog(out, age)


def sizing(
    job: Job | DocumentSource,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    rule: SizingRule | None = None,
    confidence: float | None = None,
) -> dict[str, Any]:
    """The sizing runs that would settle a training job: contending GPU types, steps, minutes,
    offering and cost of each reading, and the `ccopt calibrate` line to feed it back."""
    from optimizer.report.sizing import sizing_json  # lazy: ccopt plan needs no sizing stack
    from optimizer.solve.train.sizing import size_job  # lazy: as above

    job, base_dir, rows, age = _train_job(job, prices, offline, confidence)
    out = sizing_json(size_job(job, rows, base_dir, rule), rule)
    return _with_catalog(out, age)


def replan(
    job: Job | DocumentSource,
    *,
    prices: str | Path | None = None,
    offline: bool | None = None,
    confidence: float | None = None,
) -> dict[str, Any]:
    """A job under way (its `[progress]`) planned for the rest: keep, grow, shrink or switch,
    with the cost of switching, against the remaining deadline and budget."""
    from optimizer.report.replan import replan_json  # lazy: ccopt plan needs no re-plan stack
    from optimizer.solve.train.replan_job import replan_job  # lazy: as above

    job, base_dir, rows, age = _train_job(job, prices, offline, confidence)
    out = replan_json(replan_job(job, rows, base_dir))
    return _with_catalog(out, age)


def __getattr__(name: str) -> Any:
    """`SizingRule`, loaded with the sizing stack on first use (PEP 562)."""
    if name == "SizingRule":
        from optimizer.solve.train.sizing import SizingRule  # lazy: as `sizing`

        return SizingRule
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
