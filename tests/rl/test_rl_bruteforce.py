"""The RL planner's CP-SAT model against brute force on small random instances."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.solve.rl.model import IntCandidate, IntProblem, solve_problem
from optimizer.solve.rl.validate import brute_force, feasible

_cand = st.builds(IntCandidate, st.integers(1, 10_000), st.integers(1, 10_000))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(_cand, min_size=1, max_size=8),
    st.one_of(st.none(), st.integers(1, 10_000)),
    st.one_of(st.none(), st.integers(1, 10_000)),
)
def test_cpsat_matches_brute_force(
    cands: list[IntCandidate], deadline: int | None, budget: int | None
) -> None:
    problem = IntProblem(tuple(cands), deadline, budget)
    sol = solve_problem(problem)
    best = brute_force(problem)
    if best is None:
        assert sol.index is None
        assert set(sol.core) <= {"deadline", "budget"} and sol.core
    else:
        assert sol.index is not None and feasible(problem, sol.index)
        assert problem.candidates[sol.index].cost_cents == best


def test_core_names_the_binding_limit() -> None:
    # fast-and-dear or slow-and-cheap: a 50 s deadline alone is met, with a 100-cent budget not
    problem = IntProblem((IntCandidate(500, 40), IntCandidate(90, 400)), 50, 100)
    sol = solve_problem(problem)
    assert sol.index is None and set(sol.core) == {"deadline", "budget"}
    assert solve_problem(IntProblem(problem.candidates, 50, None)).index == 0
    assert solve_problem(IntProblem(problem.candidates, None, 100)).index == 1
