"""The single-job planner end to end: prepare → solve → check → alternatives → Pareto front."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optimizer.errors import Status
from optimizer.inputs.jobs.train import Job
from optimizer.pricing.offerings import flag_notes
from optimizer.pricing.schema import OfferingRow
from optimizer.solve.cpsat.scale import to_cents, to_seconds, within_scale
from optimizer.solve.cpsat.solver import SolverConfig
from optimizer.solve.train.capacity_note import capacity_note
from optimizer.solve.train.confidence import at_confidence
from optimizer.solve.train.enumerate import BatchRule, Candidate
from optimizer.solve.train.excluded import excluded_notes
from optimizer.solve.train.figures import JobFigures
from optimizer.solve.train.mix.check import mix_outcome
from optimizer.solve.train.mix.search import MixOutcome
from optimizer.solve.train.model import candidate_key, fewer_gpus_within, solve_table
from optimizer.solve.train.pcie_note import tp_avoided, tp_avoided_text
from optimizer.solve.train.plan_figures import LoaderBound, job_figures, loader_bound_list, with_figures
from optimizer.solve.train.prepare import PreparedJob, headroom_of, prepare_job
from optimizer.solve.train.settle import Settle, plan_settle
from optimizer.solve.train.validate import validate_plan
from optimizer.solve.train.warnings import network_notes
from optimizer.units import HOURS_PER_DAY, SECONDS_PER_HOUR, quantile_label

if TYPE_CHECKING:  # the explanation and the comparison load when needed (_explained, _verdict)
    from optimizer.solve.train.compare import BreakEven
    from optimizer.solve.train.explain import Diagnosis

__all__ = ["PlanResult", "plan_job", "pareto_front", "degenerate"]


@dataclass
class PlanResult:
    status: Status
    plan: Candidate | None
    alternatives: list[Candidate] = field(default_factory=list)
    pareto: list[Candidate] = field(default_factory=list)
    explanation: str | None = None
    solver: dict[str, Any] = field(default_factory=dict)
    prepared: PreparedJob | None = None
    binding: str | None = None  # deadline | budget | memory | filters | none
    fixes: tuple[dict[str, Any], ...] = ()
    notes: tuple[str, ...] = ()
    catalog: dict[str, Any] | None = None
    tp_avoided: dict[str, Any] | None = None  # pcie_note.tp_avoided of the plan
    cheaper_if_later: Candidate | None = None  # binding "deadline": the cheaper, slower plan
    #: the plan a median (P50) prediction would pick, when it differs from the plan at the job's
    #: confidence, and why the confident plan does not take it
    median_plan: Candidate | None = None
    median_plan_rejected: str | None = None
    #: the sizing run that would settle the choice (solve/train/settle.py): the contender of
    #: largest expected saving when another GPU type's cheaper plan could hold once measured
    sizing_run: Settle | None = None
    #: offerings slowed to their data loader's rate, with the nearest fix (plan_figures)
    loader_bound: list[LoaderBound] = field(default_factory=list)
    job_figures: JobFigures | None = None  # the job as planned (None without `prepared`)
    #: boxes to buy (or owned with charge_capital): rent or own, as `compare` says it
    rent_or_buy: BreakEven | None = None
    #: the mixed cluster (solve/train/mix/search.py): shown when cheaper than `plan` or the only plan
    mix: MixOutcome | None = None


def _explained(prep: PreparedJob, core: list[str]) -> Diagnosis:
    """What binds an infeasible job and the nearest fix (solve/train/explain.py)."""
    from optimizer.solve.train.explain import explain_infeasible  # lazy: a feasible plan needs none

    return explain_infeasible(prep, core)


def _verdict(prep: PreparedJob) -> BreakEven | None:
    """The rent-or-own verdict of the table (compare.job_verdict), which needs an owned or
    bought row beside the cloud ones: an all-cloud table has none."""
    cands = prep.table.candidates
    if all(c.offering.kind == "cloud" for c in cands):
        return None
    from optimizer.solve.train.compare import job_verdict  # lazy: only with boxes to compare

    return job_verdict(cands, prep.deadline_h, prep.budget_usd, prep.assumptions.fewer_gpus_within_share)


def _infeasible(diagnosis: Diagnosis, solver: dict[str, Any], prep: PreparedJob) -> PlanResult:
    return PlanResult(
        Status.INFEASIBLE,
        None,
        explanation=diagnosis.text,
        solver=solver,
        prepared=prep,
        binding=diagnosis.binding,
        fixes=diagnosis.fixes,
        loader_bound=loader_bound_list(prep),
        job_figures=job_figures(prep),
    )


def cheaper_than(plan: Candidate, cands: Sequence[Candidate], budget_usd: float | None) -> Candidate | None:
    """The cheapest candidate (within budget) that costs less than `plan` in the solver's
    unit (whole cents), if any (ties: the faster, then fewer GPUs); rows past the solver's
    scale (cpsat/scale.py) are never cheaper."""
    plan_cents = to_cents(plan.cost_usd)
    cheaper = [
        c
        for c in cands
        if within_scale(c.cost_usd, c.hours)
        and to_cents(c.cost_usd) < plan_cents
        and (budget_usd is None or c.cost_usd <= budget_usd)
    ]
    return min(cheaper, key=lambda c: (c.cost_usd, c.hours, c.gpus, candidate_key(c)), default=None)


def cheaper_if_later(prep: PreparedJob, plan: Candidate) -> Candidate | None:
    """The cheapest plan that only the deadline rules out, or None when there is no deadline
    or the plan is the cheapest at any speed. The candidate table skips instance counts that
    cannot meet the deadline; when it skipped any, the deadline-free table is searched too
    (from the pruned enumeration's layouts and step times, over the offerings whose cost floor
    is below the plan's: PreparedJob.deadline_free_below)."""
    if prep.deadline_h is None:
        return None
    # the rows cheaper than the plan are all that is asked (a cent of margin for the rounding)
    below = plan.cost_usd + 0.01
    tables = [prep.table] + ([prep.deadline_free_below(below)] if prep.table.pruned_by_deadline else [])
    late = [c for t in tables for c in t.candidates if c.hours > prep.deadline_h]
    return cheaper_than(plan, late, prep.budget_usd)


def same_row(a: Candidate, b: Candidate) -> bool:
    """The same offering, instance count and layout (whatever quantile each is planned at)."""
    return (a.offering, a.instances, a.layout, a.setup) == (b.offering, b.instances, b.layout, b.setup)


def median_plan(
    prep: PreparedJob, plan: Candidate, config: SolverConfig | None
) -> tuple[Candidate, str] | None:
    """(the plan a P50 prediction would pick, why the confident plan rejects it), or None when
    the job plans at P50 or both agree. Every row re-read at P50 (solve/train/confidence.py)."""
    q = prep.job.constraints.confidence
    if q <= 0.5:
        return None
    rows = [r for r in (at_confidence(c, 0.5) for c in prep.table.candidates) if r is not None]
    _, median, _ = solve_table(rows, prep.deadline_h, prep.budget_usd, config=config)
    if median is None or same_row(median, plan):
        return None
    at_q = at_confidence(median, q)
    label = quantile_label(q)
    if at_q is None:
        why = f"at {label} it overruns its reservation's term"
    elif prep.deadline_h is not None and at_q.hours > prep.deadline_h:
        why = (
            f"at {label} it needs {at_q.hours / HOURS_PER_DAY:.1f} days, past the "
            f"{prep.deadline_h / HOURS_PER_DAY:.1f}-day deadline"
        )
    elif prep.budget_usd is not None and at_q.cost_usd > prep.budget_usd:
        why = f"at {label} it costs ${at_q.cost_usd:,.0f}, over the ${prep.budget_usd:,.0f} budget"
    else:
        why = (
            f"at {label} it costs ${at_q.cost_usd:,.0f} against this plan's ${plan.cost_usd:,.0f}: "
            f"its wider band ({median.band.cases if median.band else 0} runs behind it) outweighs "
            "its lower median"
        )
    return median, why


def plan_job(
    job: Job,
    rows: Sequence[OfferingRow] | None = None,
    base_dir: Path | None = None,
    *,
    alternatives: int = 3,
    pareto: bool = False,
    config: SolverConfig | None = None,
    prepared: PreparedJob | None = None,
) -> PlanResult:
    """Plan one job end to end. Never raises for infeasibility: see PlanResult.status.

    Every plan the result returns (plan, alternatives, Pareto front, cheaper_if_later) carries
    its figures (Candidate.figures, solve/train/plan_figures.py)."""
    prep = prepared or prepare_job(job, rows, base_dir, pareto=pareto)
    out = _plan_single(prep, alternatives=alternatives, pareto=pareto, config=config)
    out.mix = mix_outcome(prep, out.plan, rows, config)  # issue 32: mixed clusters
    out.notes = out.notes + tuple(excluded_notes(prep, out.plan, rows, config))  # issue 42
    scarce = capacity_note(out.plan, prep.assumptions)  # issue 43
    if scarce is not None:
        out.notes = (*out.notes, scarce)
    return out


def _plan_single(
    prep: PreparedJob, *, alternatives: int, pareto: bool, config: SolverConfig | None
) -> PlanResult:
    """The single-type plan of a prepared job (plan_job without the mix)."""
    cands = prep.table.candidates
    solver_info: dict[str, Any] = {
        "name": "cp-sat",
        "candidates": len(cands),
        "enumerate_s": round(prep.enumerate_s, 4),
    }
    if not cands:
        return _infeasible(_explained(prep, []), {**solver_info, "wall_s": 0.0, "proven_optimal": True}, prep)
    result, best, core = solve_table(cands, prep.deadline_h, prep.budget_usd, config=config)
    solver_info.update(wall_s=round(result.wall_s, 4), proven_optimal=result.proven_optimal)
    if best is None:
        return _infeasible(_explained(prep, core), solver_info, prep)
    cheapest = best
    share = prep.assumptions.fewer_gpus_within_share
    best = fewer_gpus_within(cands, best, share, prep.deadline_h, prep.budget_usd)
    _check(prep, best)
    avoided = tp_avoided(best, prep.model, best.setup or prep.job.workload.setup(), prep.assumptions)
    later = cheaper_if_later(prep, best)
    out = PlanResult(
        Status(result.status),
        with_figures(best, prep.job, assumptions=prep.assumptions),
        solver=solver_info,
        prepared=prep,
        binding="deadline" if later is not None else "none",
        cheaper_if_later=None
        if later is None
        else with_figures(later, prep.job, assumptions=prep.assumptions),
        notes=tuple(
            network_notes(best)
            + flag_notes([best.offering])
            + ([tp_avoided_text(avoided)] if avoided else [])
            + _fewer_note(cheapest, best, share)
        ),
        tp_avoided=avoided,
        loader_bound=loader_bound_list(prep),
        job_figures=job_figures(prep),
        rent_or_buy=_verdict(prep),
    )
    median = median_plan(prep, best, config)
    if median is not None:
        out.median_plan = with_figures(median[0], prep.job, assumptions=prep.assumptions)
        out.median_plan_rejected = median[1]
    out.sizing_run = plan_settle(prep, best)
    excluded = [candidate_key(best)]
    for _ in range(alternatives):
        res, alt, _core = solve_table(
            cands, prep.deadline_h, prep.budget_usd, exclude=excluded, config=config
        )
        if alt is None:
            break
        _check(prep, alt)
        out.alternatives.append(with_figures(alt, prep.job, chosen=best, assumptions=prep.assumptions))
        excluded.append(candidate_key(alt))
    if pareto:
        front = pareto_front(cands, prep.budget_usd, prep.deadline_h, config)
        out.pareto = [with_figures(c, prep.job, assumptions=prep.assumptions) for c in front]
    return out


def _fewer_note(cheapest: Candidate, chosen: Candidate, share: float) -> list[str]:
    """Why the plan is not the cheapest row: the fewer-GPUs rule (fewer_gpus_within)."""
    if chosen is cheapest:
        return []
    return [
        f"size: {chosen.gpus} GPUs chosen over the cheapest plan's {cheapest.gpus} "
        f"({cheapest.offering.gpu_id}, ${cheapest.cost_usd:,.0f}, "
        f"${chosen.cost_usd - cheapest.cost_usd:,.0f} less): within {share:.0%} of its cost a team "
        "takes fewer GPUs (assumptions.fewer_gpus_within_share = 0 turns this off)"
    ]


def _check(prep: PreparedJob, plan: Candidate) -> None:
    w, c = prep.job.workload, prep.job.constraints
    validate_plan(
        plan,
        prep.model,
        plan.setup or w.setup(),
        BatchRule(w.batch_sequences, w.batch_tolerance),
        prep.deadline_h,
        prep.budget_usd,
        prep.assumptions,
        max_gpus=c.max_gpus,
        max_instances=c.max_instances,
        headroom=headroom_of(c, prep.assumptions),
    )


def degenerate(c: Candidate) -> bool:
    """A size the job's batch cannot use: one sequence per data-parallel rank per step
    (micro-batch 1, no accumulation) on more GPUs than the global batch has sequences — the GPUs
    past the batch only split single sequences over tensor/pipeline/context ranks that memory
    does not need (a stated rule, not a measured limit)."""
    lay = c.layout
    return lay.micro_batch * lay.grad_accum == 1 and c.gpus > lay.global_batch


def pareto_front(
    cands: Sequence[Candidate],
    budget_usd: float | None,
    deadline_h: float | None,
    config: SolverConfig | None = None,
    max_points: int = 25,
) -> list[Candidate]:
    """Cost-vs-finish-time front by the ε-constraint method: cheapest plan finishing before T,
    then T := its time − 1 s, until nothing is left; over the rows a team would run (not
    `degenerate`: the offering's max_instances already bounds every row, scan.py)."""
    cands = [c for c in cands if not degenerate(c)]
    front: list[Candidate] = []
    limit = deadline_h
    while len(front) < max_points:
        res, best, _ = solve_table(cands, limit, budget_usd, config=config)
        if best is None:
            break
        front.append(best)
        limit = (to_seconds(best.hours) - 1) / SECONDS_PER_HOUR
        if limit <= 0:
            break
    return front
