"""Solve a batch: cheapest plan in cents (CP-SAT), then every job as early as that cost allows."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ortools.sat.python import cp_model

from optimizer.errors import SolverError, Status
from optimizer.solve.batch.benders import BendersOutcome, solve_benders
from optimizer.solve.batch.explain import explain_infeasible, trivially_infeasible
from optimizer.solve.batch.hints import add_hints, left_shift
from optimizer.solve.batch.model import build_model, read_plan
from optimizer.solve.batch.placement import placements
from optimizer.solve.batch.problem import BatchProblem, BatchResult, ProgressEvent, ScheduledJob
from optimizer.solve.batch.usage import usage_profiles
from optimizer.solve.batch.validate import validate_batch
from optimizer.solve.cpsat.scale import from_cents
from optimizer.solve.cpsat.solver import SolverConfig, solve
from optimizer.solve.train.plan_figures import plan_figures

#: the least solver time a batch gets, even when enumeration used up the user's time limit
MIN_SOLVE_S = 0.1
#: share of the solve budget the Benders loop may use before handing over to the full CP-SAT
#: model (a tuning choice, not a measurement): the rest is left for CP-SAT to find a plan
BENDERS_SHARE = 0.6

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
) -> BatchResult:
    """Solve a batch: cheapest plan (cents), then earliest starts at that cost.

    Args:
        problem: jobs with their rows and the shared resources (BatchProblem.build).
        config: time limit, workers, seed; the best plan found is returned at the limit,
            with its optimality gap.
        on_progress: called with each improving solution (objective and bound in USD).
        compact: run phase 2 (left_shift: jobs earlier, the cost unchanged).
        explain: for an infeasible batch, find the conflict and the cheapest fixes.

    Returns:
        BatchResult (status infeasible with an Explanation instead of raising).

    Raises:
        SolverError: no solution within the time limit (status UNKNOWN), or an invalid model;
            or the plan fails validate_batch (a bug).
    """
    cfg = config or SolverConfig()
    started = time.perf_counter()
    info: dict[str, Any] = {
        "name": "cp-sat",
        "jobs": len(problem.jobs),
        "rows": sum(len(j.rows) for j in problem.jobs),
        "resources": len(problem.resources),
        "time_unit_hours": problem.grid.unit_h,
        "horizon_steps": problem.horizon,
        "enumerate_s": round(problem.enumerate_s, 3),
    }
    trivial = trivially_infeasible(problem)
    if trivial is not None:
        info.update(status=Status.INFEASIBLE, wall_s=_elapsed(started), proven_optimal=True)
        return BatchResult(Status.INFEASIBLE, problem, explanation=trivial, solver=info)
    v = build_model(problem)
    info["model_rows"] = sum(len(r) for r in v.rows)
    # the user's time limit covers the whole plan: enumeration already spent part of it
    budget_s = max(MIN_SOLVE_S, cfg.time_limit_s - problem.enumerate_s)
    bend = solve_benders(problem, BENDERS_SHARE * budget_s)
    stats = {
        "rounds": bend.rounds,
        "cuts": len(bend.cuts),
        "proven": bend.proven,
        "stopped": bend.stopped,
        "wall_s": _elapsed(started),
    }
    if bend.proven:
        out = _proven(problem, bend, info, started, compact, on_progress)
        out.benders = stats
        return out
    add_hints(v, problem)
    lit = {(j, i): xi for j in range(len(v.rows)) for xi, i in zip(v.x[j], v.rows[j], strict=True)}
    for cut in bend.cuts:  # valid no-goods: row sets no schedule realises
        v.model.add(sum(lit[j, i] for j, group in cut for i in group) <= len(cut) - 1)
    left = max(MIN_SOLVE_S, budget_s - (time.perf_counter() - started))
    callback = ProgressCallback(on_progress)
    result = solve(v.model, replace(cfg, time_limit_s=left), callback)
    status = Status(result.status)
    proven = result.proven_optimal
    if (
        bend.bound_cents is not None
        and result.objective is not None
        and int(round(result.objective)) <= bend.bound_cents
    ):
        proven, status = True, Status.OPTIMAL  # the Benders master proved this bound
    info.update(status=status, solve_s=_elapsed(started), proven_optimal=proven)
    if status == Status.INFEASIBLE:
        out = BatchResult(status, problem, solver=info, progress=callback.events, benders=stats)
        if explain:
            out.explanation = explain_infeasible(problem, cfg)
        info["wall_s"] = _elapsed(started)
        return out
    objective = int(round(result.objective or 0))
    bound = min(objective, max(int(round(result.bound or 0)), bend.bound_cents or 0))
    info.update(
        objective_usd=from_cents(objective),
        best_bound_usd=from_cents(bound),
        gap=round((objective - bound) / max(1, abs(objective)), 6),
    )
    jobs, reserved = read_plan(v, problem, result)
    if compact:
        jobs = left_shift(problem, jobs, reserved)
    out = BatchResult(status, problem, jobs, reserved, solver=info, progress=callback.events, benders=stats)
    return _validated(out, info, started)


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
