"""Solve a batch: cheapest plan in cents (CP-SAT), then every job as early as that cost allows."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ortools.sat.python import cp_model

from optimizer.errors import SolverError, Status
from optimizer.solve.batch.benders import BendersOutcome, solve_benders
from optimizer.solve.batch.explain import explain_infeasible, trivially_infeasible
from optimizer.solve.batch.hints import GreedyPlan, add_hints, greedy_plans, left_shift
from optimizer.solve.batch.model import BatchVars, build_model, read_plan
from optimizer.solve.batch.placement import placements
from optimizer.solve.batch.problem import BatchProblem, BatchResult, ProgressEvent, ScheduledJob
from optimizer.solve.batch.usage import usage_profiles
from optimizer.solve.batch.validate import validate_batch
from optimizer.solve.cpsat.scale import from_cents
from optimizer.solve.cpsat.solver import SolverConfig, SolveResult, solve
from optimizer.solve.train.plan_figures import plan_figures

#: the least solver time a batch gets, even when enumeration used up the user's time limit
MIN_SOLVE_S = 0.1
#: CHOICE (measured, README "Batch planner scaling"): share of the solve budget the Benders loop
#: may use before handing over to the full CP-SAT model. Small batches: 10% (Benders proves the
#: easy ones in < 0.5 s; on a saturated one the direct CP-SAT model finds cheaper plans than
#: the rounds, so it gets the rest). Large batches (> BENDERS_LARGE_JOBS): 50% (CP-SAT barely
#: moves from its hint there, and the master's dual bound and repaired choices are the answer)
BENDERS_SHARE = 0.1
BENDERS_LARGE_SHARE = 0.5
BENDERS_LARGE_JOBS = 100

__all__ = ["ProgressCallback", "solve_batch"]


class ProgressCallback(cp_model.CpSolverSolutionCallback):  # type: ignore[misc]
    """Records each improving solution as a ProgressEvent and passes it to `on_progress`."""

    def __init__(self, on_progress: Callable[[ProgressEvent], None] | None = None) -> None:
        super().__init__()
        self.on_progress = on_progress
        self.events: list[ProgressEvent] = []

    def on_solution_callback(self) -> None:
        event = ProgressEvent(
            self.wall_time, from_cents(int(self.objective_value)), from_cents(int(self.best_objective_bound))
        )
        self.events.append(event)
        if self.on_progress is not None:
            self.on_progress(event)


def _elapsed(started: float) -> float:
    return round(time.perf_counter() - started, 4)


def _proven(
    problem: BatchProblem,
    bend: BendersOutcome,
    info: dict[str, Any],
    started: float,
    compact: bool,
    on_progress: Callable[[ProgressEvent], None] | None,
) -> BatchResult:
    """The result of a plan the Benders decomposition proved optimal."""
    cents = bend.objective_cents or 0
    info.update(
        status=Status.OPTIMAL,
        solve_s=_elapsed(started),
        proven_optimal=True,
        objective_usd=from_cents(cents),
        best_bound_usd=from_cents(cents),
        gap=0.0,
    )
    jobs = [
        ScheduledJob(job, job.rows[i] if i is not None else None, t, problem.grid.unit_h)
        for job, i, t in zip(problem.jobs, bend.rows, bend.starts, strict=True)
    ]
    if compact:
        jobs = left_shift(problem, jobs, bend.reserved)
    event = ProgressEvent(_elapsed(started), from_cents(cents), from_cents(cents))
    if on_progress is not None:
        on_progress(event)
    out = BatchResult(Status.OPTIMAL, problem, jobs, dict(bend.reserved), solver=info, progress=[event])
    return _validated(out, info, started)


def solve_batch(
    problem: BatchProblem,
    config: SolverConfig | None = None,
    *,
    on_progress: Callable[[ProgressEvent], None] | None = None,
    compact: bool = True,
    explain: bool = True,
    started: float | None = None,
) -> BatchResult:
    """Solve a batch: cheapest plan (cents), then earliest starts at that cost.

    Args:
        problem: jobs with their rows and the shared resources (BatchProblem.build).
        config: time limit, workers, seed; the best plan found is returned at the limit,
            with its optimality gap.
        on_progress: called with each improving solution (objective and bound in USD).
        compact: run phase 2 (left_shift: jobs earlier, the cost unchanged).
        explain: for an infeasible batch, find the conflict and the cheapest fixes.
        started: when the command started (time.perf_counter()): the time limit covers
            everything since (reading the catalog, enumeration, the model, every solve);
            default: the problem's enumeration time before this call.

    Returns:
        BatchResult (status infeasible with an Explanation instead of raising).

    Raises:
        SolverError: no plan within the time limit (neither the solver nor the greedy first
            plan placed every job; the message names where the time went), an invalid model,
            or a plan that fails validate_batch (a bug).
    """
    cfg = config or SolverConfig()
    began = time.perf_counter()
    started = began - problem.enumerate_s if started is None else started
    # the user's time limit covers the whole command: what ran before this call is spent;
    # the solver's own times (solve_s, wall_s) count from this call
    deadline = started + cfg.time_limit_s
    info = _solver_info(problem)
    trivial = trivially_infeasible(problem)
    if trivial is not None:
        info.update(status=Status.INFEASIBLE, wall_s=_elapsed(began), proven_optimal=True)
        return BatchResult(Status.INFEASIBLE, problem, explanation=trivial, solver=info)
    v = build_model(problem)
    info["model_rows"] = sum(len(r) for r in v.rows)
    greedy = greedy_plans(problem, v.rows)[0]  # a first plan, whatever the solvers reach
    bend, stats = _benders_phase(problem, max(MIN_SOLVE_S, deadline - time.perf_counter()))
    if bend.proven:
        out = _proven(problem, bend, info, began, compact, on_progress)
        out.benders = stats
        return out
    # CP-SAT starts from the greedy plan: measured on the saturated 50-job benchmark, a start
    # from the (cheaper) repaired Benders choice ends dearer (gap 10.3% vs 5.7% at 20 s); that
    # choice is kept as the fallback if it is the cheapest plan at the limit
    add_hints(v, problem, greedy if not greedy.missing else _better_start(greedy, bend))
    greedy = _better_start(greedy, bend)
    _add_benders_cuts(v, bend)
    callback = ProgressCallback(on_progress)
    result, cpsat_s = _cpsat_phase(v, cfg, max(MIN_SOLVE_S, deadline - time.perf_counter()), callback)
    if result is None or (
        result.objective is not None and not greedy.missing and greedy.cost_cents < round(result.objective)
    ):
        if greedy.missing:
            raise SolverError(_no_plan(cfg, started, problem, stats, cpsat_s, greedy))
        return _greedy(problem, greedy, result, bend, info, stats, began, compact)
    solved = _Solved(v, result, bend, stats, callback, began)
    return _from_cpsat(problem, solved, info, cfg, compact=compact, explain=explain)


def _solver_info(problem: BatchProblem) -> dict[str, Any]:
    """The solver block's facts about the problem (status and times are added as they come)."""
    return {
        "name": "cp-sat",
        "jobs": len(problem.jobs),
        "rows": sum(len(j.rows) for j in problem.jobs),
        "resources": len(problem.resources),
        "time_unit_hours": problem.grid.unit_h,
        "horizon_steps": problem.horizon,
        "enumerate_s": round(problem.enumerate_s, 3),
    }


def _benders_phase(problem: BatchProblem, budget_s: float) -> tuple[BendersOutcome, dict[str, Any]]:
    """Benders with its share of the budget (BENDERS_SHARE, larger for large batches: there the
    master is the only source of a lower bound), and the statistics the result reports."""
    phase = time.perf_counter()
    share = BENDERS_LARGE_SHARE if len(problem.jobs) > BENDERS_LARGE_JOBS else BENDERS_SHARE
    bend = solve_benders(problem, share * budget_s)
    stats = {
        "rounds": bend.rounds,
        "cuts": len(bend.cuts),
        "proven": bend.proven,
        "stopped": bend.stopped,
        "wall_s": _elapsed(phase),
    }
    return bend, stats


def _add_benders_cuts(v: BatchVars, bend: BendersOutcome) -> None:
    """Benders' no-goods in the full model: row sets no schedule realises (valid cuts)."""
    lit = {(j, i): xi for j in range(len(v.rows)) for xi, i in zip(v.x[j], v.rows[j], strict=True)}
    for cut in bend.cuts:
        v.model.add(sum(lit[j, i] for j, group in cut for i in group) <= len(cut) - 1)


def _cpsat_phase(
    v: BatchVars, cfg: SolverConfig, left_s: float, callback: ProgressCallback
) -> tuple[SolveResult | None, float]:
    """The full model solved in the time left (None: no solution in time), and its seconds."""
    phase = time.perf_counter()
    try:
        result: SolveResult | None = solve(v.model, replace(cfg, time_limit_s=left_s), callback)
    except SolverError as exc:
        if "status UNKNOWN" not in str(exc):
            raise
        result = None  # no solution in time: the greedy plan, if it places every job
    return result, time.perf_counter() - phase


@dataclass(frozen=True)
class _Solved:
    """What the CP-SAT phase left to turn into a result."""

    v: BatchVars
    result: SolveResult
    bend: BendersOutcome
    stats: dict[str, Any]
    callback: ProgressCallback
    began: float


def _from_cpsat(
    problem: BatchProblem,
    solved: _Solved,
    info: dict[str, Any],
    cfg: SolverConfig,
    *,
    compact: bool,
    explain: bool,
) -> BatchResult:
    """The batch result of CP-SAT's answer: proven when its cost meets the Benders bound;
    infeasible with the explanation; else the plan, left-shifted and validated."""
    result, bend, began = solved.result, solved.bend, solved.began
    status, proven = Status(result.status), result.proven_optimal
    if bend.bound_cents is not None and result.objective is not None:
        if int(round(result.objective)) <= bend.bound_cents:
            proven, status = True, Status.OPTIMAL  # the Benders master proved this bound
    info.update(status=status, solve_s=_elapsed(began), proven_optimal=proven)
    events, stats = solved.callback.events, solved.stats
    if status == Status.INFEASIBLE:
        out = BatchResult(status, problem, solver=info, progress=events, benders=stats)
        if explain:
            out.explanation = explain_infeasible(problem, cfg)
        info["wall_s"] = _elapsed(began)
        return out
    objective = int(round(result.objective or 0))
    bound = min(objective, max(int(round(result.bound or 0)), bend.bound_cents or 0))
    info.update(
        objective_usd=from_cents(objective),
        best_bound_usd=from_cents(bound),
        gap=round((objective - bound) / max(1, abs(objective)), 6),
    )
    jobs, reserved = read_plan(solved.v, problem, result)
    if compact:
        jobs = left_shift(problem, jobs, reserved)
    out = BatchResult(status, problem, jobs, reserved, solver=info, progress=events, benders=stats)
    return _validated(out, info, began)


def _better_start(greedy: GreedyPlan, bend: BendersOutcome) -> GreedyPlan:
    """The plan returned if CP-SAT finds none cheaper (and its start when the greedy plan
    leaves a job out): the greedy one, or the Benders rounds' repaired incumbent when it
    places every job more cheaply."""
    if bend.incumbent is None:
        return greedy
    cost, rows, starts, reserved = bend.incumbent
    if not greedy.missing and greedy.cost_cents <= cost:
        return greedy
    it = iter(starts)
    plan: list[tuple[int | None, int | None]] = [(i, next(it) if i is not None else None) for i in rows]
    return GreedyPlan(plan, dict(reserved), cost, ())


def _greedy(
    problem: BatchProblem,
    greedy: GreedyPlan,
    result: SolveResult | None,
    bend: BendersOutcome,
    info: dict[str, Any],
    stats: dict[str, Any],
    started: float,
    compact: bool,
) -> BatchResult:
    """The greedy first plan, when CP-SAT found none (or a dearer one) within the time limit:
    status feasible, with the gap to the best lower bound either solver proved."""
    objective = greedy.cost_cents
    bound = max(int(round(result.bound or 0)) if result is not None else 0, bend.bound_cents or 0)
    bound = min(objective, bound)
    info.update(
        status=Status.FEASIBLE,
        solve_s=_elapsed(started),
        proven_optimal=False,
        objective_usd=from_cents(objective),
        best_bound_usd=from_cents(bound),
        gap=round((objective - bound) / max(1, abs(objective)), 6),
        first_plan="greedy",
    )
    jobs = [
        ScheduledJob(job, job.rows[i] if i is not None else None, t, problem.grid.unit_h)
        for job, (i, t) in zip(problem.jobs, greedy.plan, strict=True)
    ]
    if compact:
        jobs = left_shift(problem, jobs, greedy.reserved)
    event = ProgressEvent(_elapsed(started), from_cents(objective), from_cents(bound))
    out = BatchResult(
        Status.FEASIBLE, problem, jobs, dict(greedy.reserved), solver=info, progress=[event], benders=stats
    )
    problem.notes.append(
        "plan: the greedy first plan (jobs by deadline, those an earlier pass left without a slot "
        "first, each on its cheapest row that fits, or on "
        "the row a Benders round chose for it where that still fits); "
        f"the solver found no cheaper one within the time limit (gap {info['gap']:.1%})"
    )
    return _validated(out, info, started)


def _no_plan(
    cfg: SolverConfig,
    started: float,
    problem: BatchProblem,
    stats: dict[str, Any],
    cpsat_s: float,
    greedy: GreedyPlan,
) -> str:
    """Why no plan came out within the limit: where the time went and what the greedy plan
    could not place (a batch too large for its capacity is infeasible, which CP-SAT may not
    prove in time)."""
    names = ", ".join(repr(n) for n in greedy.missing[:3]) + (
        f" and {len(greedy.missing) - 3} more" if len(greedy.missing) > 3 else ""
    )
    return (
        f"no plan for the {len(problem.jobs)} jobs within the {cfg.time_limit_s:g} s time limit "
        f"({time.perf_counter() - started:.1f} s: enumeration {problem.enumerate_s:.1f} s, Benders "
        f"decomposition {stats['wall_s']:.1f} s over {stats['rounds']} round"
        f"{'' if stats['rounds'] == 1 else 's'}, CP-SAT "
        f"{cpsat_s:.1f} s found none); the greedy first plan leaves {names} without a slot "
        "(the capacity may be too small for these deadlines: CP-SAT did not prove it in time); "
        "raise the time limit (--time-limit-s) or give more capacity"
    )


def _validated(out: BatchResult, info: dict[str, Any], started: float) -> BatchResult:
    """The plan, after validate_batch found no broken constraint (else a SolverError: a bug),
    with the plan figures of each scheduled row (solve/train/plan_figures.py; the rows stay the
    job's own candidate objects, which validate_batch checks), its placements and resource usage."""
    problems = validate_batch(out)
    if problems:
        raise SolverError("internal error, the batch plan breaks a constraint: " + "; ".join(problems[:5]))
    out.figures = {
        s.name: plan_figures(s.row.candidate, s.job.spec.job) for s in out.jobs if s.row is not None
    }
    out.placements = placements(out)
    out.usage = usage_profiles(out)
    info["wall_s"] = _elapsed(started)
    return out
