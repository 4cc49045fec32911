"""`ccopt compare`: the best plan per GPU type and per provider, and cloud vs owned/bought."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optimizer.inputs.jobs.train import Job
from optimizer.pricing.ownership import NO_USAGE
from optimizer.pricing.schema import OfferingRow
from optimizer.pricing.verdict import Verdict, rent_or_buy
from optimizer.solve.train.enumerate import Candidate
from optimizer.solve.train.figures import JobFigures
from optimizer.solve.train.mix.check import mix_outcome
from optimizer.solve.train.mix.search import MixOutcome
from optimizer.solve.train.model import fewer_gpus_within, solve_table
from optimizer.solve.train.plan_figures import job_figures, with_figures
from optimizer.solve.train.prepare import PreparedJob, prepare_job
from optimizer.units import HOURS_PER_DAY

if TYPE_CHECKING:  # the explanation loads with an infeasible job only (compare_job)
    from optimizer.solve.train.explain import Diagnosis

__all__ = ["BreakEven", "CompareResult", "compare_job", "break_even", "rent_or_own", "job_verdict"]


@dataclass(frozen=True)
class BreakEven:
    """Rent one cloud plan or own the boxes, at equal work (pricing/verdict.rent_or_buy)."""

    net_capital_usd: float
    power_usd_per_job: float  # running cost of one job on the boxes: power (+ its data)
    cloud_usd_per_job: float
    jobs: float | None  # to break even at the user's rate (None: never)
    months: float | None  # at the user's rate: jobs_per_month / duty cycle, else back to back
    months_continuous: float | None = None  # break-even with the boxes busy 100% (equal work)
    gpu: str | None = None  # the GPU type of the cloud plan
    #: the rate behind `months`: jobs a month the boxes do at the stated workload
    jobs_per_month: float | None = None
    cloud_plan: str | None = None
    verdict: Verdict | None = None
    own_plan: str = ""  # the boxes, in words
    own_gpu: str = ""
    note: str = (
        "equal work: the same jobs a month rented or on the boxes; owning = net capital "
        "(purchase − resale at the end of the holding period) and ops fee spread over the jobs "
        "the boxes really do, + power while running"
    )


@dataclass(frozen=True)
class CompareResult:
    job: Job  # as planned (fitted to the model: a per-sample job counts samples, not tokens)
    per_gpu: dict[str, Candidate | None]
    per_provider: dict[str, Candidate | None]
    cloud: Candidate | None
    local: Candidate | None
    break_even: BreakEven | None
    rejected: dict[str, str]
    break_even_per_gpu: dict[str, BreakEven] = field(default_factory=dict)
    #: why a GPU type / provider with candidates has no plan (deadline or budget, with numbers)
    per_gpu_explanation: dict[str, str] = field(default_factory=dict)
    per_provider_explanation: dict[str, str] = field(default_factory=dict)
    solver: dict[str, Any] = field(default_factory=dict)  # every solve: rows, wall_s, proven
    diagnosis: Diagnosis | None = None  # no plan at all: the single-job planner's explanation
    prepared: PreparedJob | None = None  # the job with its model and candidate table
    job_figures: JobFigures | None = None  # the job as planned (plan_figures.job_figures)
    #: the job's mixed cluster against the best single-type plan: plan_job's mix_outcome
    mix: MixOutcome | None = None


class _Solves:
    """The solver calls of one comparison, summed into the contract's solver block."""

    def __init__(self, rows: int, share: float = 0.0) -> None:
        self.rows, self.wall_s, self.calls, self.proven = rows, 0.0, 0, True
        self.share = share  # the planner's fewer-GPUs rule (model.fewer_gpus_within)

    def best(
        self, cands: Sequence[Candidate], deadline_h: float | None, budget_usd: float | None
    ) -> tuple[Candidate | None, list[str]]:
        result, best, core = solve_table(cands, deadline_h, budget_usd)
        self.wall_s += result.wall_s
        self.calls += 1
        self.proven = self.proven and result.proven_optimal
        if best is not None:
            best = fewer_gpus_within(cands, best, self.share, deadline_h, budget_usd)
        return best, core

    def block(self, found: bool) -> dict[str, Any]:
        return {
            "name": "cp-sat",
            "status": "optimal" if found else "infeasible",
            "proven_optimal": self.proven,
            "wall_s": round(self.wall_s, 4),
            "rows": self.rows,
            "solves": self.calls,
        }


def why_no_plan(rows: Sequence[Candidate], deadline_h: float | None, budget_usd: float | None) -> str:
    """Why none of `rows` is a plan: the fastest misses the deadline, or the cheapest the
    budget, or each meets one requirement but not both."""
    fastest = min(rows, key=lambda c: (c.hours, c.cost_usd))
    cheapest = min(rows, key=lambda c: (c.cost_usd, c.hours))
    if deadline_h is not None and fastest.hours > deadline_h:
        return (
            f"deadline: the fastest plan needs {fastest.hours / HOURS_PER_DAY:.1f} days "
            f"({fastest.gpus} GPUs, ${fastest.cost_usd:,.0f})"
        )
    if budget_usd is not None and cheapest.cost_usd > budget_usd:
        return (
            f"budget: the cheapest plan costs ${cheapest.cost_usd:,.0f} "
            f"({cheapest.hours / HOURS_PER_DAY:.1f} days)"
        )
    return (
        "deadline and budget together: no plan meets both (fastest "
        f"{fastest.hours / HOURS_PER_DAY:.1f} days for ${fastest.cost_usd:,.0f}; cheapest "
        f"${cheapest.cost_usd:,.0f} in {cheapest.hours / HOURS_PER_DAY:.1f} days)"
    )


def _best_by(
    cands: Sequence[Candidate],
    key: Callable[[Candidate], str],
    deadline_h: float | None,
    budget_usd: float | None,
    solves: _Solves,
) -> tuple[dict[str, Candidate | None], dict[str, str]]:
    groups: dict[str, list[Candidate]] = {}
    for c in cands:
        groups.setdefault(key(c), []).append(c)
    out: dict[str, Candidate | None] = {}
    why: dict[str, str] = {}
    for name, rows in sorted(groups.items()):
        out[name] = solves.best(rows, deadline_h, budget_usd)[0]
        if out[name] is None:
            why[name] = why_no_plan(rows, deadline_h, budget_usd)
    return out, why


def break_even(cloud: Candidate, owned: Candidate) -> BreakEven:
    """Rent `cloud` or own the boxes of `owned`, at the workload the owned offering states
    (pricing/verdict.rent_or_buy: the one verdict of plan, compare and the report)."""
    off = owned.offering
    terms = off.ownership
    if terms is None:
        raise ValueError(f"{off.key} is not a box (no ownership terms)")
    running = owned.cost_usd - owned.capital_usd
    v = rent_or_buy(terms, owned.instances, owned.hours, running, cloud.cost_usd, cloud.hours, off.usage)
    full = rent_or_buy(terms, owned.instances, owned.hours, running, cloud.cost_usd, cloud.hours, NO_USAGE)
    c = cloud.offering
    return BreakEven(
        net_capital_usd=v.net_capital_usd,
        power_usd_per_job=running,
        cloud_usd_per_job=cloud.cost_usd,
        jobs=v.break_even_jobs,
        months=v.break_even_months,
        months_continuous=full.break_even_months,
        gpu=c.gpu_id,
        jobs_per_month=v.break_even_jobs_per_month,
        cloud_plan=f"{cloud.instances}× {c.instance} ({cloud.gpus}× {c.gpu_id}, {c.provider} {c.pricing})",
        verdict=v,
        own_plan=f"{owned.instances}× {off.instance} ({owned.gpus}× {off.gpu_id}, {off.kind})",
        own_gpu=off.gpu_id,
    )


def rent_or_own(cloud: Candidate | None, local: Candidate | None) -> BreakEven | None:
    """The verdict of a job: its best cloud plan against its best owned/bought plan, when the
    boxes carry a cost of ownership (a box to buy, or owned with charge_capital)."""
    if cloud is None or local is None or local.offering.ownership is None:
        return None
    if not local.offering.ownership.charged:
        return None
    return break_even(cloud, local)


def job_verdict(
    cands: Sequence[Candidate], deadline_h: float | None, budget_usd: float | None, share: float = 0.0
) -> BreakEven | None:
    """`plan`'s rent-or-own verdict: the best cloud and the best owned/bought plan of the table,
    solved as `compare_job` solves them (with the planner's fewer-GPUs rule, `share`), through
    the same `rent_or_own`."""
    cloud = [c for c in cands if c.offering.kind == "cloud"]
    local = [c for c in cands if c.offering.kind != "cloud"]
    if not cloud or not local:
        return None
    solves = _Solves(len(cands), share)
    best_local = solves.best(local, deadline_h, budget_usd)[0]
    if (
        best_local is None
        or best_local.offering.ownership is None
        or not best_local.offering.ownership.charged
    ):
        return None
    return rent_or_own(solves.best(cloud, deadline_h, budget_usd)[0], best_local)


def compare_job(
    job: Job, rows: Sequence[OfferingRow] | None = None, base_dir: Path | None = None
) -> CompareResult:
    """Best plan per GPU type / provider, and cloud vs owned/buy side by side."""
    prep = prepare_job(job, rows, base_dir)
    cands = prep.table.candidates
    d, b = prep.deadline_h, prep.budget_usd
    solves = _Solves(len(cands), prep.assumptions.fewer_gpus_within_share)
    cloud = [c for c in cands if c.offering.kind == "cloud"]
    local = [c for c in cands if c.offering.kind != "cloud"]
    best_cloud = solves.best(cloud, d, b)[0] if cloud else None
    best_local = solves.best(local, d, b)[0] if local else None
    be = rent_or_own(best_cloud, best_local)
    per_gpu, gpu_why = _best_by(cands, lambda c: c.offering.gpu_id, d, b, solves)
    per_provider, provider_why = _best_by(cands, lambda c: c.offering.provider, d, b, solves)
    # the best cloud plan per GPU type: per_gpu's own where no owned/bought box has that type
    local_gpus = {c.offering.gpu_id for c in local}
    cloud_per_gpu = {g: p for g, p in per_gpu.items() if g not in local_gpus}
    cloud_per_gpu.update(
        _best_by(
            [c for c in cloud if c.offering.gpu_id in local_gpus], lambda c: c.offering.gpu_id, d, b, solves
        )[0]
    )
    per_gpu_be = {
        gpu: verdict
        for gpu, plan in cloud_per_gpu.items()
        if (verdict := rent_or_own(plan, best_local)) is not None
    }
    found = best_cloud is not None or best_local is not None
    diagnosis = None
    if not found:  # the single-job planner's explanation: what binds and the nearest fix
        core = solves.best(cands, d, b)[1] if cands else []
        from optimizer.solve.train.explain import explain_infeasible  # lazy: only without a plan

        diagnosis = explain_infeasible(prep, core)

    # the best single-type plan of the whole table (the cheaper of cloud and owned/bought, as
    # plan_job's): the mix is planned against its cost by the same mix_outcome as `ccopt plan`
    single = min(
        (c for c in (best_cloud, best_local) if c is not None), key=lambda c: c.cost_usd, default=None
    )
    mix = mix_outcome(prep, single, rows)

    def shown(c: Candidate | None) -> Candidate | None:  # a plan with its figures attached
        return None if c is None else with_figures(c, prep.job, assumptions=prep.assumptions)

    return CompareResult(
        prep.job,
        {k: shown(v) for k, v in per_gpu.items()},
        {k: shown(v) for k, v in per_provider.items()},
        shown(best_cloud),
        shown(best_local),
        be,
        prep.table.rejected,
        per_gpu_be,
        gpu_why,
        provider_why,
        solves.block(found),
        diagnosis,
        prep,
        job_figures(prep),
        mix,
    )
