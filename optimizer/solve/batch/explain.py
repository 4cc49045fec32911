"""Why a batch is infeasible: the requirements in conflict and the cheapest single fixes.

One assumption literal per deadline and per capacity (CP-SAT
``sufficient_assumptions_for_infeasibility``), the core shrunk by deletion, and each member
relaxed alone by as little as possible and the batch re-solved for the cost of that fix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from optimizer.errors import SolverError, Status
from optimizer.pricing.offering import Offering
from optimizer.solve.batch.model import (
    ASSUME,
    MINIMISE,
    BatchVars,
    build_model,
    capacity_req,
    deadline_req,
    read_plan,
)
from optimizer.solve.batch.problem import (
    EPS_H,
    BatchProblem,
    BatchResult,
    Explanation,
    Fix,
    Resource,
    ScheduledJob,
)
from optimizer.solve.cpsat.core import shrink_core
from optimizer.solve.cpsat.solver import SolverConfig, solve
from optimizer.units import hours_to_days

__all__ = ["trivially_infeasible", "explain_infeasible"]

#: what raising each kind of resource is called in a fix
_RAISE = {"quota": "raise", "owned": "grow", "reservation": "raise the maximum of"}


def trivially_infeasible(problem: BatchProblem) -> Explanation | None:
    """A required job with no row that fits [release, horizon]: no solver needed."""
    for job in problem.jobs:
        if job.rows or job.penalty_cents is not None:
            continue
        spec = job.spec
        window_h = problem.horizon_h - spec.release_h
        if spec.candidates:
            fastest = min(spec.candidates, key=lambda c: (c.hours, c.cost_usd))
            room = f"only {window_h:,.1f} h remain between its release and the horizon"
            block = _block_of(problem, fastest.offering)
            if block is not None and block.window_h is not None:
                start_h, end_h = max(block.window_h[0], spec.release_h), block.window_h[1]
                room = (
                    f"it may run only inside {block.label} (hours {block.window_h[0]:g}-{end_h:g}), "
                    f"which leaves {max(0.0, end_h - start_h):,.1f} h after its release"
                )
            why = (
                f"its fastest plan needs {fastest.hours:,.1f} h ({fastest.gpus}× "
                f"{fastest.offering.gpu_id}, {fastest.offering.provider}) but {room}"
            )
            if spec.budget_usd is not None and all(c.cost_usd > spec.budget_usd for c in spec.candidates):
                why = f"no plan fits its budget (${spec.budget_usd:,.0f})"
        elif spec.rejected:
            first = sorted(spec.rejected.items())[:3]
            why = "nothing fits: " + "; ".join(f"{k}: {r}" for k, r in first)
        else:
            why = "no offering matches its filters (gpus, providers, regions, pricing, quotas)"
        return Explanation(
            [f"job:{job.name}"], [f"job {job.name!r}"], f"job {job.name!r} cannot run at all: {why}"
        )
    return None


def _block_of(problem: BatchProblem, offering: Offering) -> Resource | None:
    """The capacity block (a reservation with a window) that rows of `offering` run on."""
    return next(
        (
            r
            for r in problem.resources.values()
            if r.kind == "reservation" and r.window_h is not None and r.demand(offering, 1) > 0
        ),
        None,
    )


def _requirements(problem: BatchProblem) -> list[str]:
    reqs = [deadline_req(j) for j in problem.jobs if j.due < problem.horizon]
    return reqs + [capacity_req(k) for k in problem.resources]


def _label(problem: BatchProblem, req: str) -> str:
    kind, _, name = req.partition(":")
    if kind == "deadline":
        job = next(j for j in problem.jobs if j.name == name)
        return f"deadline of {name!r} (day {hours_to_days(job.spec.deadline_h or 0):g})"
    res = problem.resources[name]
    if res.kind == "reservation":
        return f"{res.label}: at most {res.capacity} {res.unit}"
    return f"{res.label}: {res.capacity} {res.unit}"


def _check_config(cfg: SolverConfig) -> SolverConfig:
    """The time limit of one check or fix: a quarter of the solve's, within [0.5, 5] s."""
    return replace(cfg, time_limit_s=max(0.5, min(5.0, cfg.time_limit_s / 4)))


def _infeasible_with(
    v: BatchVars, lits: Mapping[str, Any], subset: Sequence[str], cfg: SolverConfig
) -> bool | None:
    """True if the requirements `subset` alone are proven to conflict; None: unknown in time."""
    v.model.clear_assumptions()
    v.model.add_assumptions([lits[r] for r in subset])
    try:
        return solve(v.model, cfg).status == Status.INFEASIBLE
    except SolverError:
        return None  # unknown: shrink_core keeps the requirement in the core


def explain_infeasible(problem: BatchProblem, config: SolverConfig | None = None) -> Explanation:
    """The requirements in conflict (a small core) and the cheapest single fixes.

    Every deadline shorter than the horizon and every capacity gets an assumption literal;
    CP-SAT names a sufficient subset; each member is dropped in turn if the rest still
    conflict (deletion filter, so the core is minimal when every check finishes in time).
    Then each member alone is relaxed by as little as possible (lateness in steps, extra
    GPUs/boxes/instances) and the batch re-solved for its cost.

    Args:
        problem: an infeasible batch.
        config: the solve's configuration; each check gets a quarter of its time limit.

    Returns:
        The conflict (requirement ids and labels), a message, and the fixes, cheapest first.
    """
    cfg = config or SolverConfig()
    reqs = _requirements(problem)
    per_check = _check_config(cfg)
    v = build_model(problem, {r: ASSUME for r in reqs}, objective=False)
    lits = {r: v.literal[r] for r in reqs if r in v.literal}
    v.model.add_assumptions(list(lits.values()))
    try:
        first = solve(v.model, per_check)
    except SolverError:
        first = None
    by_index = {lit.index: r for r, lit in lits.items()}
    if first is not None and first.status == Status.INFEASIBLE:
        core = [by_index[i] for i in first.solver.sufficient_assumptions_for_infeasibility() if i in by_index]
    else:
        core = list(lits)
    core = core or list(lits)
    core = shrink_core(core, lambda subset: _infeasible_with(v, lits, subset, per_check)) or core
    fixes = [f for f in (_relaxed_fix(problem, [r], cfg) for r in core) if f is not None]
    if not fixes and len(core) > 1:
        both = _relaxed_fix(problem, core, cfg)
        fixes = [both] if both else []
    fixes.sort(key=lambda f: f.total_cost_usd)
    labels = [_label(problem, r) for r in core]
    message = "these requirements cannot all hold: " + "; ".join(
        _named(problem, r, label, fixes) for r, label in zip(core, labels, strict=True)
    )
    if fixes:
        message += f". Cheapest fix: {fixes[0].change} (total ${fixes[0].total_cost_usd:,.2f})"
    else:
        message += ". No fix was found within the time limit: " + _no_fix_hint(problem, core)
    return Explanation(core, labels, message, fixes)


def _names(names: Sequence[str], most: int = 4) -> str:
    shown = ", ".join(repr(n) for n in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _only_on(problem: BatchProblem, key: str) -> list[str]:
    """Jobs that must run and whose every row takes `key`: they cannot go elsewhere."""
    return [
        j.name
        for j in problem.jobs
        if j.penalty_cents is None and j.rows and all(dict(r.usage).get(key, 0) > 0 for r in j.rows)
    ]


def _named(problem: BatchProblem, req: str, label: str, fixes: Sequence[Fix]) -> str:
    """A capacity's label with the jobs in its conflict: those the cheapest fix runs over it
    at once, else those that can run nowhere else."""
    kind, _, key = req.partition(":")
    if kind != "capacity":
        return label
    for f in fixes:
        jobs = f.detail.get(req, {}).get("jobs")
        if jobs:
            return f"{label} (needed at once by {_names(jobs)})"
    only = _only_on(problem, key)
    return f"{label} (the only place {_names(only)} can run)" if only else label


def _no_fix_hint(problem: BatchProblem, core: Sequence[str]) -> str:
    """What to try when no fix was solved in time: each relaxation the core allows."""
    tips = []
    for req in core:
        kind, _, name = req.partition(":")
        if kind == "deadline":
            tips.append(f"move the deadline of {name!r} later")
        else:
            res = problem.resources[name]
            tips.append(f"{_RAISE[res.kind]} {res.label} above {res.capacity} {res.unit}")
    return "; ".join(tips) + " (or raise --time-limit-s for the exact fix)"


def _over_capacity(problem: BatchProblem, jobs: Sequence[ScheduledJob], key: str) -> list[str]:
    """Jobs running on `key` at a step where the plan takes more than its capacity."""
    cap = problem.resources[key].capacity
    spans = [
        (s.start, s.start + s.row.duration, dict(s.row.usage).get(key, 0), s.name)
        for s in jobs
        if s.row is not None and s.start is not None and dict(s.row.usage).get(key, 0)
    ]
    names: set[str] = set()
    for t in sorted({a for a, _, _, _ in spans}):
        running = [(d, n) for a, b, d, n in spans if a <= t < b]
        if sum(d for d, _ in running) > cap:
            names |= {n for _, n in running}
    return sorted(names)


def _relaxed_fix(problem: BatchProblem, relax: Sequence[str], cfg: SolverConfig) -> Fix | None:
    """Relax `relax` as little as possible, then minimise cost; describe the change."""
    v = build_model(problem, {r: MINIMISE for r in relax})
    try:
        res = solve(v.model, _check_config(cfg))
    except SolverError:
        return None
    if res.status == Status.INFEASIBLE:
        return None
    s = res.solver
    jobs, reserved = read_plan(v, problem, res)
    partial = BatchResult(Status(res.status), problem, jobs, reserved)
    changes, detail = [], {}
    for r in relax:
        kind, _, name = r.partition(":")
        if kind == "deadline":
            j = next(k for k, job in enumerate(problem.jobs) if job.name == name)
            sj = jobs[j]
            end_h = sj.end_h if sj.end_h is not None else problem.jobs[j].spec.deadline_h or 0
            old = problem.jobs[j].spec.deadline_h or 0.0
            if end_h > old + EPS_H:
                changes.append(
                    f"move the deadline of {name!r} from day {hours_to_days(old):.2f} "
                    f"to day {hours_to_days(end_h):.2f} (+{end_h - old:.1f} h)"
                )
            detail[r] = {"job": name, "deadline_hour": old, "needed_hour": round(end_h, 2)}
        else:
            res_ = problem.resources[name]
            if name in v.capacity:
                new = int(s.value(v.capacity[name]))
            else:
                new = reserved.get(name, res_.capacity)
            over = _over_capacity(problem, jobs, name) if new > res_.capacity else []
            if new > res_.capacity:
                changes.append(
                    f"{_RAISE[res_.kind]} {res_.label} by {new - res_.capacity} {res_.unit}, from "
                    f"{res_.capacity} to {new} (for {_names(over)} at once)"
                )
            detail[r] = {"resource": name, "capacity": res_.capacity, "needed": new, "jobs": over}
    if not changes:
        changes.append("relax " + ", ".join(relax))
    return Fix(", ".join(relax), "; ".join(changes), round(partial.total_cost_usd, 2), detail)
