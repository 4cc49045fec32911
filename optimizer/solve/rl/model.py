"""The RL planner's CP-SAT model: exactly one candidate (colocated, or a pair of pools), the
deadline and the budget as enforced limits with an assumption literal each, cost in cents.

Data → variables → constraints → objective → solve → solution, as the other planners; every
non-linear quantity (hours × price) is precomputed per candidate (candidates.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from optimizer.solve.cpsat.scale import budget_cents, deadline_seconds, to_cents, to_seconds
from optimizer.solve.cpsat.solver import SolverConfig, SolveResult, solve
from optimizer.solve.rl.candidates import RlCandidate

__all__ = ["IntCandidate", "IntProblem", "int_problem", "solve_problem", "Solution"]


@dataclass(frozen=True)
class IntCandidate:
    cost_cents: int
    seconds: int


@dataclass(frozen=True)
class IntProblem:
    """Integer data: candidates, and the limits (None: none)."""

    candidates: tuple[IntCandidate, ...]
    deadline_s: int | None
    budget_cents: int | None


@dataclass(frozen=True)
class Solution:
    """The chosen index (None: infeasible), the limits in the conflict, the solver's report."""

    index: int | None
    core: tuple[str, ...]
    result: SolveResult


def int_problem(
    cands: Sequence[RlCandidate], deadline_h: float | None, budget_usd: float | None
) -> IntProblem:
    """Candidates in cents (rounded up) and seconds (rounded up); limits rounded down."""
    return IntProblem(
        tuple(IntCandidate(to_cents(c.cost_usd), to_seconds(c.hours)) for c in cands),
        None if deadline_h is None else deadline_seconds(deadline_h),
        None if budget_usd is None else budget_cents(budget_usd),
    )


def solve_problem(problem: IntProblem, config: SolverConfig | None = None) -> Solution:
    """Cheapest candidate within the limits; on infeasibility the limits CP-SAT names."""
    model = cp_model.CpModel()
    # variables: one boolean per candidate
    x = [model.new_bool_var(f"x{i}") for i in range(len(problem.candidates))]
    model.add_exactly_one(x)
    # constraints: each limit holds when its assumption literal is true
    names: dict[int, str] = {}
    for name, limit, values in (
        ("deadline", problem.deadline_s, [c.seconds for c in problem.candidates]),
        ("budget", problem.budget_cents, [c.cost_cents for c in problem.candidates]),
    ):
        if limit is None:
            continue
        lit = model.new_bool_var(name)
        model.add(cp_model.LinearExpr.weighted_sum(x, values) <= limit).only_enforce_if(lit)
        model.add_assumption(lit)
        names[lit.index] = name
    # objective: cost in cents
    model.minimize(cp_model.LinearExpr.weighted_sum(x, [c.cost_cents for c in problem.candidates]))
    result = solve(model, config)
    if result.status == "infeasible":
        core = tuple(names[i] for i in result.solver.sufficient_assumptions_for_infeasibility() if i in names)
        return Solution(None, core, result)
    chosen = next(i for i, v in enumerate(x) if result.solver.boolean_value(v))
    return Solution(chosen, (), result)
