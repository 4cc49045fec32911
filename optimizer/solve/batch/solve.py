"""Solve a batch: cheapest plan in cents (CP-SAT), then every job as early as that cost allows."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from ortools.sat.python import cp_model

from optimizer.errors import SolverError, Status
from optimizer.solve.batch.benders import BendersOutcome, as_plan, solve_benders
from optimizer.solve.batch.explain import explain_infeasible, trivially_infeasible
from optimizer.solve.batch.hints import GreedyPlan, add_hints, greedy_plans, hint_solution, left_shift
from optimizer.solve.batch.leftout import left_out_explanation, searched_phases
from optimizer.solve.batch.lns import improve_by_windows
from optimizer.solve.batch.model import BatchVars, build_model, read_plan, symmetry_groups, usable_rows
from optimizer.solve.batch.placement import placements
from optimizer.solve.batch.problem import (
    BatchProblem,
    BatchResult,
    ProgressEvent,
    ScheduledJob,
    choice_cost_cents,
)
from optimizer.solve.batch.repair import repair_plans
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
#: the rounds, so it gets the rest). Large batches (> BENDERS_LARGE_JOBS): 40%, for the
#: master's LP and one MIP solve (bound_only; no probe). 200 generated jobs, 2 boxes, 30 s: the
#: MIP's bound $52,280.32 at 25%, $52,404.97 from 33%; gap 25% 1.05% x3, 40% 0.81-0.99% x4
BENDERS_SHARE = 0.1
BENDERS_LARGE_SHARE = 0.4
BENDERS_LARGE_JOBS = 100
#: CHOICE (measured on 500 generated jobs): CP-SAT parameters for large batches: its probing
#: presolve took 7 s of the 30 s limit there (twice 3.4 s) before the first solution
LARGE_CPSAT: dict[str, Any] = {"cp_model_probing_level": 0}
#: CHOICE: the most of the time left the repair of a first plan may take (its moves are
#: counted; at 500 generated jobs three plans' repair takes ~4 s of CPU)
REPAIR_SHARE = 0.5
#: CHOICE: the least time (s) left after an unproven CP-SAT answer worth solving again from it
RESOLVE_S = 2.0

__all__ = ["ProgressCallback", "solve_batch"]


class ProgressCallback(cp_model.CpSolverSolutionCallback):  # type: ignore[misc]
    """Records each improving solution as a ProgressEvent and passes it to `on_progress`."""

    def __init__(self, on_progress: Callable[[ProgressEvent], None] | None = None) -> None:
        super().__init__()
        self.on_progress = on_progress
        self.events: list[ProgressEvent] = []
        self.offset_s = 0.0  # seconds of the CP-SAT phase before the current solve began

    def on_solution_callback(self) -> None:
        event = ProgressEvent(
            self.offset_s + self.wall_time,
            from_cents(int(self.objective_value)),
            from_cents(int(self.best_objective_bound)),
        )
        self.events.append(event)
        if self.on_progress is not None:
            self.on_progress(event)


def _elapsed(started: float) -> float:
    return round(time.perf_counter() - started, 4)


def _record_cost(info: dict[str, Any], objective_cents: int, bound_cents: int) -> None:
    """The plan's cost, the best lower bound proved and the relative gap between them, in the
    solver block (USD)."""
    info.update(
        objective_usd=from_cents(objective_cents),
        best_bound_usd=from_cents(bound_cents),
        gap=round((objective_cents - bound_cents) / max(1, abs(objective_cents)), 6),
    )


def _scheduled(
    problem: BatchProblem,
    plan: Iterable[tuple[int | None, int | None]],
    reserved: dict[str, int],
    compact: bool,
) -> list[ScheduledJob]:
    """Each job of `problem` on its planned (row index, start step) (None: left out), moved to
    its earliest start at the same cost when `compact` (left_shift)."""
    jobs = [
        ScheduledJob(job, job.rows[i] if i is not None else None, t, problem.grid.unit_h)
        for job, (i, t) in zip(problem.jobs, plan, strict=True)
    ]
    return left_shift(problem, jobs, reserved) if compact else jobs


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
    )
    _record_cost(info, cents, cents)
    jobs = _scheduled(problem, zip(bend.rows, bend.starts, strict=True), bend.reserved, compact)
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
    """Solve a batch (BatchProblem.build): cheapest plan (cents), then earliest starts at that
    cost (`compact`: left_shift). `config`: time limit, workers, seed (at the limit, the best
    plan found and its gap); `on_progress`: each improving solution (objective and bound in
    USD); `explain`: an infeasible batch's conflict and cheapest fixes; `started`: when the
    command started (the limit covers everything since; default: the enumeration time before
    this call). Returns a BatchResult: infeasible with an Explanation instead of raising, or,
    when no plan within the limit runs every must-run job, infeasible and not proven, naming
    the jobs left out and each one's nearest fix. Raises SolverError for an invalid model or a
    plan that fails validate_batch (a bug)."""
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
    rows = [usable_rows(job, problem, {}) for job in problem.jobs]
    # a first plan, whatever the solvers reach; one that leaves must-run jobs out is repaired,
    # after Benders (500 generated jobs: repairing three plans takes ~4 s of CPU; run first,
    # it left the master's first solve, the only bound there, no time to finish: bound $0)
    plans = greedy_plans(problem, rows)
    bend, stats = _benders_phase(problem, max(MIN_SOLVE_S, deadline - time.perf_counter()), plans[0])
    info["model_rows"] = sum(len(r) for r in rows)
    if bend.proven:
        out = _proven(problem, bend, info, began, compact, on_progress)
        out.benders = stats
        return out
    now = time.perf_counter()
    greedy = repair_plans(problem, rows, plans, now + REPAIR_SHARE * max(0.0, deadline - now))
    # CP-SAT starts from the greedy plan: measured on the saturated 50-job benchmark, a start
    # from the (cheaper) repaired Benders choice ends dearer (gap 10.3% vs 5.7% at 20 s); that
    # choice is kept as the fallback if it is the cheapest plan at the limit
    start = greedy if not greedy.missing else _better_start(greedy, bend)
    greedy = _better_start(greedy, bend)
    # jobs the start leaves out may stay out in CP-SAT's model at a cost above every plan:
    # the start is then a complete feasible hint, CP-SAT always has a solution to improve
    # (before, 500 jobs: no plan in 30 s), and its bound stays valid (a relaxation)
    clocks, ran = (started, began), (bend, stats, info)
    if len(problem.jobs) > BENDERS_LARGE_JOBS:  # window by window (lns.py): the full model barely moves
        return _by_windows(problem, rows, greedy, ran, cfg, clocks, compact)
    return _direct(problem, rows, (start, greedy), ran, cfg, clocks, (compact, explain), on_progress)


def _direct(
    problem: BatchProblem,
    rows: list[list[int]],
    plans: tuple[GreedyPlan, GreedyPlan],
    ran: tuple[BendersOutcome, dict[str, Any], dict[str, Any]],
    cfg: SolverConfig,
    clocks: tuple[float, float],
    flags: tuple[bool, bool],
    on_progress: Callable[[ProgressEvent], None] | None,
) -> BatchResult:
    """A batch of up to BENDERS_LARGE_JOBS jobs: the direct CP-SAT model from the `plans`
    (its start, the best plan so far) with the Benders cuts and reservation limits; the best
    plan so far when CP-SAT finds nothing cheaper (solve_batch)."""
    (start, greedy), (bend, stats, info) = plans, ran
    (started, began), (compact, explain) = clocks, flags
    v = build_model(problem, unplaced=_left_out(problem, rows, start), energy=True)
    add_hints(v, problem, start, complete=bool(v.unplaced))
    _add_benders_cuts(v, bend)
    for key, limit in bend.reserve_limits.items():  # probe.py: no cheaper plan reserves more
        v.model.add(v.reserve[key] <= limit)
    callback, budget = ProgressCallback(on_progress), started + cfg.time_limit_s - time.perf_counter()
    result, cpsat_s = _cpsat_phase(v, cfg, max(MIN_SOLVE_S, budget), callback)
    if result is not None and v.unplaced and (result.bound or 0) >= v.overshoot_weight:
        # every solution leaves a must-run job out: the batch is infeasible, proven
        result = replace(result, status=Status.INFEASIBLE, objective=None, proven_optimal=True)
    if result is None or (result.status != Status.INFEASIBLE and not _cheaper(v, result, greedy)):
        if greedy.missing:
            best = _fewest_left_out(problem, greedy, v, result)
            why = searched_phases(problem, stats, cpsat_s, started, cfg.time_limit_s)
            return _left_out_result(problem, rows, best, why, (result, bend, info, stats, callback), began)
        return _greedy(problem, greedy, result, bend, info, stats, began, compact)
    solved = _Solved(v, result, bend, stats, callback, began)
    return _from_cpsat(problem, solved, info, cfg, compact=compact, explain=explain)


def _by_windows(
    problem: BatchProblem,
    rows: list[list[int]],
    first: GreedyPlan,
    ran: tuple[BendersOutcome, dict[str, Any], dict[str, Any]],
    cfg: SolverConfig,
    clocks: tuple[float, float],
    compact: bool,
) -> BatchResult:
    """A large batch's answer: the best plan so far improved window by window (lns.py) in the
    time left; the bound is the Benders master's."""
    (bend, stats, info), (started, began) = ran, clocks
    phase = time.perf_counter()
    deadline = started + cfg.time_limit_s
    proven = bend.stopped == "infeasible"  # answer now, naming the repaired plan's jobs left out
    large = replace(cfg, extra={**LARGE_CPSAT, **cfg.extra})
    best = first if proven else improve_by_windows(problem, first, deadline, large)
    stats["windows_s"] = _elapsed(phase)
    if best.missing:
        spent = time.perf_counter() - phase
        why = searched_phases(
            problem, stats, spent, started, cfg.time_limit_s, "" if proven else "CP-SAT window by window"
        )
        ran_all = (None, bend, info, stats, ProgressCallback())
        return _left_out_result(problem, rows, best, why, ran_all, began)
    how = "greedy" if best is first else "windows"
    return _greedy(problem, best, None, bend, info, stats, began, compact, how)


def _left_out(problem: BatchProblem, rows: list[list[int]], start: GreedyPlan) -> set[int]:
    """The must-run jobs `start` leaves out, with every job identical to one (the symmetry
    breaking may move a left-out place to any of them)."""
    out = {j for j, (i, _) in enumerate(start.plan) if i is None and problem.jobs[j].penalty_cents is None}
    for members in symmetry_groups(problem, rows, {}):
        if out & set(members):
            out |= set(members)
    return out


def _cheaper(v: BatchVars, result: SolveResult, greedy: GreedyPlan) -> bool:
    """Whether CP-SAT's solution is a plan (every must-run job runs: no soft drop taken)
    no dearer than the fallback plan (if that places every job)."""
    if result.objective is None or any(result.solver.boolean_value(d) for d in v.unplaced.values()):
        return False
    return bool(greedy.missing) or round(result.objective) <= greedy.cost_cents


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


def _benders_phase(
    problem: BatchProblem, budget_s: float, greedy: GreedyPlan
) -> tuple[BendersOutcome, dict[str, Any]]:
    """Benders with its share of the budget (BENDERS_SHARE; large batches: one master solve,
    the only source of a lower bound there), and the statistics the result reports."""
    phase = time.perf_counter()
    large = len(problem.jobs) > BENDERS_LARGE_JOBS
    share = BENDERS_LARGE_SHARE if large else BENDERS_SHARE
    # greedy plans leaving jobs out: the LP bound only, no MIP (benders._first_bound)
    lp_only = large and bool(greedy.missing)
    start = None if greedy.missing else as_plan(greedy)
    bend = solve_benders(problem, share * budget_s, bound_only=large, lp_only=lp_only, start=start)
    stats = {
        "rounds": bend.rounds,
        "cuts": len(bend.cuts),
        "proven": bend.proven,
        "stopped": bend.stopped,
        "reserve_limits": dict(bend.reserve_limits),
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
    """The full model solved in the time left (None: no solution in time), and its seconds.

    CP-SAT's interleaved search (SolverConfig.deterministic) runs its subsolvers in batches and
    stops when the next batch would not fit: on 50 generated jobs it returned after 10.2 s of
    an 18.3 s limit (search log). While RESOLVE_S or more is left after an unproven answer, the
    model is solved again from that answer (its values as the hint); the best answer is kept,
    with the highest bound either solve proved (each a bound on the same model)."""
    phase = time.perf_counter()
    best: SolveResult | None = None
    while True:
        callback.offset_s = time.perf_counter() - phase
        left = left_s - callback.offset_s
        try:
            result = solve(v.model, replace(cfg, time_limit_s=max(MIN_SOLVE_S, left)), callback)
        except SolverError as exc:
            if "status UNKNOWN" not in str(exc):
                raise
            break  # no solution in time: the best so far, else the greedy plan
        best = _better(best, result)
        if result.status != "feasible" or left_s - (time.perf_counter() - phase) < RESOLVE_S:
            break
        hint_solution(v, result)
    return best, time.perf_counter() - phase


def _better(best: SolveResult | None, new: SolveResult) -> SolveResult:
    """The answer with the lower objective, carrying the higher bound of the two."""
    if best is None or best.objective is None or new.status != "feasible":
        return new
    bound = max(best.bound or 0, new.bound or 0)
    keep = new if (new.objective or 0) <= best.objective else best
    return replace(keep, bound=bound)


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
    _record_cost(info, objective, bound)
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
    how: str = "greedy",
) -> BatchResult:
    """The greedy first plan, when CP-SAT found none (or a dearer one) within the time limit,
    or (`how` "windows", in the Benders statistics, not the JSON) the plan lns.py improved:
    status feasible, with the gap to the best lower bound either solver proved."""
    objective = greedy.cost_cents
    bound = max(int(round(result.bound or 0)) if result is not None else 0, bend.bound_cents or 0)
    bound = min(objective, bound)
    info.update(
        status=Status.FEASIBLE,
        solve_s=_elapsed(started),
        proven_optimal=False,
    )
    _record_cost(info, objective, bound)
    if how == "greedy":  # the JSON's first_plan names only the greedy plan (report contract)
        info["first_plan"] = how
    stats["plan"] = how
    jobs = _scheduled(problem, greedy.plan, greedy.reserved, compact)
    event = ProgressEvent(_elapsed(started), from_cents(objective), from_cents(bound))
    out = BatchResult(
        Status.FEASIBLE, problem, jobs, dict(greedy.reserved), solver=info, progress=[event], benders=stats
    )
    problem.notes.append(
        "plan: the greedy first plan (jobs by deadline, those an earlier pass left without a slot "
        "first, each on its cheapest row that fits, or on "
        "the row a Benders round chose for it where that still fits); "
        f"the solver found no cheaper one within the time limit (gap {info['gap']:.1%})"
        if how == "greedy"
        else "plan: the first plan re-optimised one time window at a time by CP-SAT (the jobs "
        f"whose window lies inside it freed, the others kept); gap {info['gap']:.1%} to the "
        "Benders master's bound"
    )
    return _validated(out, info, started)


def _cpsat_plan(problem: BatchProblem, v: BatchVars, result: SolveResult) -> GreedyPlan:
    """CP-SAT's solution as a plan (it may take soft drops: must-run jobs left out)."""
    s = result.solver
    plan: list[tuple[int | None, int | None]] = []
    for j in range(len(problem.jobs)):
        chosen = [i for xi, i in zip(v.x[j], v.rows[j], strict=True) if s.boolean_value(xi)]
        plan.append((chosen[0], int(s.value(v.start[j]))) if chosen else (None, None))
    reserved = {k: int(s.value(r)) for k, r in v.reserve.items()}
    left = tuple(
        job.name
        for job, (i, _) in zip(problem.jobs, plan, strict=True)
        if i is None and job.penalty_cents is None
    )
    return GreedyPlan(plan, reserved, choice_cost_cents(problem, [i for i, _ in plan], reserved), left)


def _fewest_left_out(
    problem: BatchProblem, greedy: GreedyPlan, v: BatchVars, result: SolveResult | None
) -> GreedyPlan:
    """The plan leaving the fewest must-run jobs out: the (repaired) greedy one or CP-SAT's."""
    if result is None or result.objective is None:
        return greedy
    mine = _cpsat_plan(problem, v, result)
    return mine if len(mine.missing) < len(greedy.missing) else greedy


def _left_out_result(
    problem: BatchProblem,
    rows: list[list[int]],
    best: GreedyPlan,
    why: str,
    ran: tuple[SolveResult | None, BendersOutcome, dict[str, Any], dict[str, Any], ProgressCallback],
    began: float,
) -> BatchResult:
    """No plan found runs every must-run job: status infeasible, proven when the Benders
    master (a relaxation) has no solution, else not proven; the explanation names the jobs
    the best plan found leaves out and each one's nearest fix (leftout.py)."""
    result, bend, info, stats, callback = ran
    bound = max(int(round(result.bound or 0)) if result is not None else 0, bend.bound_cents or 0)
    proven = bend.stopped == "infeasible"  # the master, a relaxation, has no solution
    info.update(
        status=Status.INFEASIBLE,
        solve_s=_elapsed(began),
        proven_optimal=proven,
        best_bound_usd=from_cents(bound),
        wall_s=_elapsed(began),
    )
    explanation = left_out_explanation(problem, rows, best, why, proven, bend.capacity_factor)
    out = BatchResult(Status.INFEASIBLE, problem, explanation=explanation, solver=info, benders=stats)
    out.progress = callback.events
    return out


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
