"""Plain-Python checks of the RL planner: the brute-force optimum and the chosen plan's limits."""

from __future__ import annotations

from optimizer.errors import OptimizerError
from optimizer.solve.rl.model import IntProblem

__all__ = ["feasible", "brute_force", "check_choice"]


def feasible(problem: IntProblem, i: int) -> bool:
    """Candidate i meets the deadline and the budget (in the solver's integers)."""
    c = problem.candidates[i]
    return (problem.deadline_s is None or c.seconds <= problem.deadline_s) and (
        problem.budget_cents is None or c.cost_cents <= problem.budget_cents
    )


def brute_force(problem: IntProblem) -> int | None:
    """The cheapest feasible candidate's cost in cents, by enumeration (None: none)."""
    costs = [c.cost_cents for i, c in enumerate(problem.candidates) if feasible(problem, i)]
    return min(costs) if costs else None


def check_choice(problem: IntProblem, chosen: int | None) -> None:
    """Raise OptimizerError unless `chosen` is feasible and as cheap as brute force finds."""
    best = brute_force(problem)
    if chosen is None:
        if best is not None:
            raise OptimizerError(f"RL planner: no plan chosen, but one costs {best} cents")
        return
    if not feasible(problem, chosen):
        raise OptimizerError(f"RL planner: the chosen plan {chosen} breaks a limit")
    if problem.candidates[chosen].cost_cents != best:
        raise OptimizerError(
            f"RL planner: chosen plan costs {problem.candidates[chosen].cost_cents} cents, brute force {best}"
        )
