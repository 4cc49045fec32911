"""`ccopt replan`: a job file with `[progress]` planned for the rest (solve/train/replan.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from optimizer.errors import ConfigError, did_you_mean
from optimizer.inputs.jobs.progress import Progress
from optimizer.inputs.jobs.train import Job
from optimizer.model.host import checkpoint_gb
from optimizer.pricing.host import storage_rates
from optimizer.pricing.offering import cost_usd
from optimizer.pricing.schema import OfferingRow
from optimizer.solve.train.candidate import Candidate
from optimizer.solve.train.prepare import prepare_job
from optimizer.solve.train.replan import (
    Remaining,
    ReplanOption,
    SwitchCosts,
    best_per_kind,
    choose,
    replan_options,
    slowness,
)

__all__ = ["ReplanResult", "replan_job", "rest_of"]


@dataclass
class ReplanResult:
    job: Job
    progress: Progress
    fraction_done: float
    slowness: float  # measured ÷ predicted step time of the current GPU type
    slowness_source: str  # "measured step time" | "progress" | "model's point" (nothing timed yet)
    spent_usd: float
    remaining: Remaining
    costs: SwitchCosts
    egress_source: str  # where the egress price comes from, or why it is 0
    current: Candidate
    options: list[ReplanOption]
    best: dict[str, ReplanOption] = field(default_factory=dict)
    choice: ReplanOption | None = None
    #: why nothing fits (the deadline has passed, the budget is spent, or the fastest misses)
    infeasible: str | None = None


def rest_of(job: Job, progress: Progress) -> Job:
    """The job's remaining tokens with no deadline or budget (the options are filtered later).

    Raises:
        ConfigError: the job does not count tokens, or tokens_done is not below its tokens.
    """
    tokens = job.workload.tokens
    if tokens is None:
        raise ConfigError(
            "progress.tokens_done: the job gives no workload.tokens; allowed: a job counted in tokens"
        )
    if progress.tokens_done >= tokens:
        raise ConfigError(
            f"progress.tokens_done: {progress.tokens_done:g} is not below workload.tokens ({tokens:g}); "
            "allowed: 0 <= tokens_done < workload.tokens (a finished job needs no plan)"
        )
    workload = job.workload.model_copy(update={"tokens": tokens - progress.tokens_done})
    limits = {"deadline_days": None, "deadline_hours": None, "budget_usd": None}
    return job.model_copy(
        update={"workload": workload, "constraints": job.constraints.model_copy(update=limits)}
    )


def _current(rows: Sequence[Candidate], p: Progress) -> Candidate:
    """The row the job runs on now: its offering (provider, instance, pricing, region) × count.

    Raises:
        ConfigError: no candidate row is that offering at that count.
    """

    wanted = (p.provider, p.instance, p.pricing)
    offered = [c for c in rows if (c.offering.provider, c.offering.instance, c.offering.pricing) == wanted]
    mine = [c for c in offered if p.region is None or c.offering.region == p.region]
    regions = sorted({c.offering.region for c in offered})
    if not mine and regions:  # the offering is there, in other regions
        raise ConfigError(
            f"progress.region: {p.region!r} has no {p.provider}:{p.instance} ({p.pricing}) the job "
            f"admits; allowed: {', '.join(regions)}"
        )
    if not mine:
        names = sorted({f"{c.offering.provider}:{c.offering.instance}" for c in rows})
        raise ConfigError(
            f"progress.instance: {p.provider}:{p.instance} ({p.pricing}) is not among the job's candidate "
            f"offerings{did_you_mean(f'{p.provider}:{p.instance}', names)}; allowed: an offering "
            "`ccopt prices` lists that the job's constraints admit"
        )
    at = [c for c in mine if c.instances == p.instances]
    if not at:
        counts = sorted({c.instances for c in mine})
        raise ConfigError(
            f"progress.instances: {p.instances} instances of {p.instance} hold no layout of this job; "
            f"allowed: {', '.join(map(str, counts[:12]))}"
        )
    return min(at, key=lambda c: c.cost_usd)


def _egress(provider: str, region: str) -> tuple[float, str]:
    rates = storage_rates(provider, region)
    if rates is None or rates.egress_internet_usd_per_gb is None:
        return 0.0, f"no egress price for {provider} {region} in provider_storage.csv: counted as 0"
    return rates.egress_internet_usd_per_gb, f"{provider} {region} internet egress (provider_storage.csv)"


def replan_job(
    job: Job, rows: Sequence[OfferingRow] | None = None, base_dir: Path | None = None
) -> ReplanResult:
    """Plan the rest of a job under way (module doc of solve/train/replan.py).

    Raises:
        ConfigError: no [progress], or it does not fit the job or the catalog (exit 2).
    """
    p = job.progress
    if p is None:
        raise ConfigError(
            "[progress]: missing; allowed: a table with tokens_done, elapsed_hours, provider, "
            "instance, instances"
        )
    rest = rest_of(job, p)
    prep = prepare_job(rest, rows, base_dir)
    current = _current(prep.table.candidates, p)
    tokens = job.workload.tokens or 0.0
    done = p.tokens_done / tokens
    from_progress = slowness(current, p.tokens_done / (tokens - p.tokens_done), p.elapsed_hours)
    if p.measured_step_time_s is not None:
        r, source = p.measured_step_time_s / current.step.time_s, "measured step time"
    elif from_progress is not None:
        r, source = from_progress, "progress"
    else:  # no step timed yet: the model's point (progress.measured_step_time_s reads the speed)
        r, source = 1.0, "model's point"
    spent = (
        p.spent_usd
        if p.spent_usd is not None
        else cost_usd(current.offering, p.instances, p.elapsed_hours).running_usd
    )
    deadline, budget = job.constraints.deadline_h, job.constraints.budget_usd
    remaining = Remaining(
        None if deadline is None else deadline - p.elapsed_hours, None if budget is None else budget - spent
    )
    gb = p.checkpoint_gb or checkpoint_gb(prep.model, job.workload.setup(), prep.assumptions)
    egress, egress_source = _egress(current.offering.provider, current.offering.region)
    costs = SwitchCosts(gb, p.transfer_gbps, p.restart_minutes, egress)
    options = replan_options(prep.table.candidates, current, r, costs)
    result = ReplanResult(job, p, done, r, source, spent, remaining, costs, egress_source, current, options)
    result.best = best_per_kind(options, remaining)
    result.choice = choose(options, remaining)
    if result.choice is None:
        result.infeasible = _why_none(options, remaining)
    return result


def _why_none(options: Sequence[ReplanOption], remaining: Remaining) -> str:
    """The binding limit and the nearest fix when no option fits."""
    if remaining.deadline_h is not None and remaining.deadline_h <= 0:
        return f"the deadline has passed ({-remaining.deadline_h:,.1f} h ago): extend constraints.deadline"
    if remaining.budget_usd is not None and remaining.budget_usd <= 0:
        return f"the budget is spent (${-remaining.budget_usd:,.2f} over): raise constraints.budget_usd"
    fastest = min(options, key=lambda o: o.hours)
    if remaining.deadline_h is not None and fastest.hours > remaining.deadline_h:
        return (
            f"the fastest option ({fastest.kind}: {fastest.row.instances}× "
            f"{fastest.row.offering.instance}) needs "
            f"{fastest.hours:,.1f} h, {fastest.hours - remaining.deadline_h:,.1f} h past the "
            f"{remaining.deadline_h:,.1f} h left: extend the deadline by that much"
        )
    in_time = [o for o in options if remaining.deadline_h is None or o.hours <= remaining.deadline_h]
    cheapest = min(in_time, key=lambda o: o.cost_usd)
    return (
        f"the cheapest option in time costs ${cheapest.cost_usd:,.2f}, over the "
        f"${remaining.budget_usd or 0:,.2f} "
        "left of the budget: raise constraints.budget_usd"
    )
