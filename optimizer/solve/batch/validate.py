"""Plain-Python check of a batch plan against every constraint (run after every solve)."""

from __future__ import annotations

import math

from optimizer.pricing.offering import cost_usd
from optimizer.solve.batch.problem import EPS_H, BatchResult
from optimizer.solve.cpsat.scale import to_cents
from optimizer.solve.train.enumerate import Candidate

__all__ = ["validate_batch"]


def _job_cost_usd(c: Candidate) -> float:
    """The candidate priced again by the one cost function (as the single-job planner does)."""
    return cost_usd(c.offering, c.instances, c.hours).total_usd


def _outside_blocks(name: str, start: float, end: float, c: Candidate, result: BatchResult) -> list[str]:
    """A job on a capacity block runs inside the block's [from, to] hours."""
    out = []
    for res in result.problem.resources.values():
        if res.window_h is not None and res.demand(c.offering, c.instances):
            low, high = res.window_h
            if start < low - EPS_H or end > high + EPS_H:
                out.append(f"{name}: runs {start:g}-{end:.3f} h outside {res.label} ({low:g}-{high:g} h)")
    return out


def validate_batch(result: BatchResult) -> list[str]:
    """Check a plan against every constraint in plain Python, in hours (not on the grid).

    Checks: every required job runs, dropped jobs are droppable; the candidate is one of the
    job's; its cost recomputed with `optimizer.pricing.offering.cost_usd` equals the
    candidate's and the row's cents; start ≥ release; the actual end (start + candidate hours)
    ≤ min(deadline, horizon); a job on a capacity block inside the block's hours;
    the budget; per resource, the sum of demands of jobs running at
    every start time ≤ its capacity (a reservation: ≤ the R reserved, and R ≤ its maximum);
    the reported total cost equals the recomputed job costs plus commitments (to the cent per
    term).

    Returns:
        A list of violations (empty: the plan is valid).
    """
    problem = result.problem
    out: list[str] = []
    active: list[tuple[float, float, Candidate]] = []
    expect = 0.0
    for sj in result.jobs:
        spec = sj.job.spec
        if sj.row is None:
            if spec.penalty_usd is None:
                out.append(f"{sj.name}: required job left out")
            continue
        c = sj.row.candidate
        if not any(c is k for k in spec.candidates):
            out.append(f"{sj.name}: plan is not one of the job's candidates")
        cost = _job_cost_usd(c)
        expect += cost
        if not math.isclose(cost, c.cost_usd, rel_tol=1e-9, abs_tol=1e-6) or sj.row.cost_cents != to_cents(
            cost
        ):
            out.append(
                f"{sj.name}: costs {c.cost_usd} ({sj.row.cost_cents} cents in the model) "
                f"!= {cost} recomputed by cost_usd"
            )
        start, end = sj.start_h or 0.0, sj.end_h or 0.0
        if start < spec.release_h - EPS_H:
            out.append(f"{sj.name}: starts at {start:g} h before its release {spec.release_h:g} h")
        limit = min(problem.horizon_h, spec.deadline_h if spec.deadline_h is not None else math.inf)
        if end > limit + EPS_H:
            out.append(f"{sj.name}: ends at {end:.3f} h after its limit {limit:.3f} h")
        if spec.budget_usd is not None and c.cost_usd > spec.budget_usd + 0.005:
            out.append(f"{sj.name}: costs {c.cost_usd:.2f} over its budget")
        active.append((start, sj.slot_end_h or end, c))
        out += _outside_blocks(sj.name, start, end, c, result)
    for key, res in problem.resources.items():
        cap = res.capacity
        if res.kind == "reservation":
            got = result.reserved.get(key, 0)
            if got > cap:
                out.append(f"{key}: reserved {got} > max {cap}")
            cap = got
            expect += res.commitment_usd_for(got)
        events = sorted({s for s, _, _ in active})
        for t in events:
            used = sum(res.demand(c.offering, c.instances) for s, e, c in active if s <= t < e)
            if used > cap:
                out.append(f"{res.label}: {used} {res.unit} in use at hour {t:g} > {cap}")
                break
    if abs(expect - result.total_cost_usd) > 0.01 * (len(result.jobs) + 1):
        out.append(f"total cost {result.total_cost_usd:.2f} != sum of parts {expect:.2f}")
    return out
