"""Single-job CP-SAT model: pick one candidate row, cheapest first, faster on ties.

Data (candidate rows with integer cents and seconds) → variables (one bool per row) →
constraints (exactly one; deadline and budget as unary implications) → objective
(lexicographic cost, time, tie rank in one integer) → solve → the chosen row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from ortools.sat.python import cp_model

from optimizer.pricing.offering import cost_usd
from optimizer.solve.cpsat.core import shrink_core
from optimizer.solve.cpsat.lexicographic import one_hot_key, solve_lexicographic, tie_ranks
from optimizer.solve.cpsat.scale import budget_cents, deadline_seconds, to_cents, to_seconds, within_scale
from optimizer.solve.cpsat.solver import SolverConfig, SolveResult, solve
from optimizer.solve.train.confidence import hours_at
from optimizer.solve.train.enumerate import Candidate
from optimizer.units import SECONDS_PER_MINUTE

__all__ = ["candidate_key", "tie_key", "solve_table", "fewer_gpus_within"]


def candidate_key(c: Candidate) -> tuple[str, str, str]:
    """What makes two plans 'distinct' for alternatives: GPU type, provider, pricing model."""
    return (c.offering.gpu_id, c.offering.provider, c.offering.pricing)


def solve_table(
    candidates: Sequence[Candidate],
    deadline_h: float | None,
    budget_usd: float | None,
    *,
    exclude: Sequence[tuple[str, str, str]] = (),
    config: SolverConfig | None = None,
) -> tuple[SolveResult, Candidate | None, list[str]]:
    """Pick one candidate: min cost (cents), ties broken by min time, then by `tie_key` (fewer
    GPUs, then provider, instance, region, pricing, layout: the same input gives the same plan
    whatever the catalog's row order).

    The objective is lexicographic (solve/cpsat/lexicographic.py, the planners' one tie-break
    style): (cents, minutes, rank by tie_key) folded into one integer per row, so no tie-break
    can outweigh one cent; when that integer could overflow, (cents, seconds, rank) are solved
    in stages. Deadline and budget are hard constraints; only when the model is infeasible is
    it solved again with one assumption literal per requirement, to name the ones in conflict
    (CP-SAT sufficient_assumptions_for_infeasibility), shrunk by deletion.

    Rows whose cost or duration is beyond the solver's integer scale (cpsat/scale.py: over
    $1.1e10 or 2^40 s) are left out: any row within it is cheaper, and such a row is past every
    budget and deadline a job file takes; only when every row is beyond it is the cheapest one's
    ScaleError raised (exit 2).

    Returns (result, chosen or None, names of the requirements in conflict when infeasible).
    """
    # one row out of a table: CP-SAT's presolve settles it, and a second worker only costs its
    # thread's start (~0.4 ms of each of a plan's ~5 solves); the optimum is the same, unique
    # through the folded tie rank
    config = replace(config or SolverConfig(), workers=1)
    data = _table_data(candidates, deadline_h, budget_usd, exclude)
    built = _build(data, False)
    if data.folded is not None:
        built.model.minimize(cp_model.LinearExpr.weighted_sum(built.x, data.folded))
        result = last = solve(built.model, config)
    else:  # rare: enormous costs; the same order in stages
        levels = [cp_model.LinearExpr.weighted_sum(built.x, v) for v in (data.cost, data.secs, data.ranks)]
        result, last = solve_lexicographic(built.model, levels, built.x, config)
    if result.status == "infeasible":
        return result, None, _conflicting(data, config)
    chosen = next(i for i, xi in enumerate(built.x) if last.solver.boolean_value(xi))
    return result, data.candidates[chosen], []


def fewer_gpus_within(
    cands: Sequence[Candidate],
    cheapest: Candidate,
    share: float,
    deadline_h: float | None,
    budget_usd: float | None,
) -> Candidate:
    """The size a team would choose: among the rows that meet the deadline and the budget and
    cost at most (1 + `share`) × the cheapest plan's cost — at the plan's confidence and at P90
    of their bands, so a smaller plan with less evidence behind it is not taken — the one with
    the fewest GPUs (ties: the cheapest, then the solver's order); `share` 0 keeps the cheapest
    plan (a stated preference, PerfAssumptions.fewer_gpus_within_share, not a measured fact)."""
    if share <= 0:
        return cheapest
    limit_usd = cheapest.cost_usd * (1.0 + share)
    limit_p90_usd = _p90_usd(cheapest) * (1.0 + share)
    near = [
        c
        for c in cands
        if within_scale(c.cost_usd, c.hours)
        and c.cost_usd <= limit_usd
        and c.gpus < cheapest.gpus
        and _p90_usd(c) <= limit_p90_usd
        and (deadline_h is None or to_seconds(c.hours) <= deadline_seconds(deadline_h))
        and (budget_usd is None or c.cost_usd <= budget_usd)
    ]
    return min(near, key=lambda c: (c.gpus, c.cost_usd, c.hours, candidate_key(c)), default=cheapest)


def _p90_usd(c: Candidate) -> float:
    """The row's cost at the P90 of its step-time band (solve/train/confidence.py)."""
    return cost_usd(c.offering, c.instances, hours_at(c, 0.9)).total_usd


@dataclass(frozen=True)
class _TableData:
    """The rows of one single-job model in the solver's integer units, with the limits."""

    candidates: list[Candidate]
    cost: list[int]  # cents
    secs: list[int]
    ranks: list[int]
    folded: list[int] | None  # (cents, minutes, rank) folded into one key; None: too large
    deadline_s: int | None
    budget_cents: int | None
    exclude: Sequence[tuple[str, str, str]]


class _Built(NamedTuple):
    """One built CP-SAT model: its row variables and, with assumptions, the requirement of
    each assumption literal's index."""

    model: cp_model.CpModel
    x: list[cp_model.IntVar]
    requirement: dict[int, str]


def _table_data(
    candidates: Sequence[Candidate],
    deadline_h: float | None,
    budget_usd: float | None,
    exclude: Sequence[tuple[str, str, str]],
) -> _TableData:
    """The rows within the solver's scale (solve_table) in cents, seconds, minutes and tie rank."""
    in_scale = [c for c in candidates if within_scale(c.cost_usd, c.hours)]
    if candidates and not in_scale:
        cheapest = min(candidates, key=lambda c: (c.cost_usd, c.hours))
        to_cents(cheapest.cost_usd)  # raises the ScaleError naming the value and the limit
        to_seconds(cheapest.hours)
    cost = [to_cents(c.cost_usd) for c in in_scale]
    secs = [to_seconds(c.hours) for c in in_scale]
    minutes = [-(-s // SECONDS_PER_MINUTE) for s in secs]  # rounded up
    ranks = tie_ranks(in_scale, tie_key)
    return _TableData(
        in_scale,
        cost,
        secs,
        ranks,
        one_hot_key([cost, minutes, ranks]),
        None if deadline_h is None else deadline_seconds(deadline_h),
        None if budget_usd is None else budget_cents(budget_usd),
        exclude,
    )


def _build(data: _TableData, with_assumptions: bool, kinds: Sequence[str] = ("deadline", "budget")) -> _Built:
    """Variables (one bool per row), exactly one chosen, the excluded kinds banned, and the
    requirements of `kinds` as unary implications (as assumptions `with_assumptions`)."""
    m = cp_model.CpModel()
    x = [m.new_bool_var(f"x{i}") for i in range(len(data.candidates))]
    m.add_exactly_one(x)
    for key in data.exclude:
        banned = [xi for xi, c in zip(x, data.candidates, strict=True) if candidate_key(c) == key]
        if banned:
            m.add(cp_model.LinearExpr.sum(banned) == 0)
    requirement: dict[int, str] = {}
    # With exactly one row chosen, "time ≤ deadline" is the same as forbidding every row
    # over it: unary implications propagate at once, whereas the equivalent weighted-sum
    # constraint with 1e5-1e10 coefficients slows CP-SAT ~20× (measured: 55 vs 3 ms).
    for name, values, limit in (
        ("deadline", data.secs, data.deadline_s),
        ("budget", data.cost, data.budget_cents),
    ):
        if limit is None or name not in kinds:
            continue
        lit = m.new_bool_var(name)
        for xi, value in zip(x, values, strict=True):
            if value > limit:
                m.add_implication(lit, ~xi)
        if with_assumptions:
            m.add_assumption(lit)
            requirement[lit.index] = name
        else:
            m.add(lit == 1)
    return _Built(m, x, requirement)


def _conflicting(data: _TableData, config: SolverConfig) -> list[str]:
    """The requirements in conflict of an infeasible table: solved again with one assumption
    literal per requirement (CP-SAT sufficient_assumptions_for_infeasibility), then shrunk by
    deletion (solve/cpsat/core.py): a requirement stays only if the others alone are feasible
    (with a budget nothing meets, CP-SAT may name the deadline too)."""
    built = _build(data, True)
    again = solve(built.model, config)
    core = (
        [
            built.requirement[i]
            for i in again.solver.sufficient_assumptions_for_infeasibility()
            if i in built.requirement
        ]
        if again.status == "infeasible"
        else []
    )
    core = core or sorted(built.requirement.values())
    shrunk = shrink_core(
        core, lambda kinds: solve(_build(data, False, kinds).model, config).status == "infeasible"
    )
    return shrunk if shrunk is not None else core


def tie_key(c: Candidate) -> tuple[Any, ...]:
    """The stated order among plans of equal cost (cents) and time (minutes)."""
    o, lay = c.offering, c.layout
    return (
        c.gpus,
        o.provider,
        o.instance,
        o.region,
        o.pricing,
        lay.tp,
        lay.pp,
        lay.dp,
        lay.zero_stage,
        lay.checkpointing,
        lay.micro_batch,
        c.hours,
    )
