"""The one tie-breaking style of the planners: a stated tie key, turned into ranks, as the last
level of a lexicographic CP-SAT objective.

A planner states the order it prefers among equally good plans as a key (`tie_ranks`); the
solver minimises (objective, ..., Σ rank) lexicographically, either folded into one integer
when the model picks exactly one row (`one_hot_key`) or in stages, each with the earlier levels
fixed at their solved values (`solve_lexicographic`). Equal-cost optima found by different
parallel workers then come out as the same answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from ortools.sat.python import cp_model

from optimizer.errors import Status
from optimizer.solve.cpsat.solver import SolverConfig, SolveResult, solve

__all__ = ["INT_LIMIT", "tie_ranks", "one_hot_key", "solve_lexicographic"]

T = TypeVar("T")
#: CP-SAT refuses an objective whose coefficients could sum past int64: keep sums below 2^62
INT_LIMIT = 2**62


def tie_ranks(items: Sequence[T], key: Callable[[T], Any]) -> list[int]:
    """Rank of each item (1 = preferred) in the order of `key`; equal keys keep input order."""
    ranks = [0] * len(items)
    for rank, i in enumerate(sorted(range(len(items)), key=lambda i: key(items[i])), start=1):
        ranks[i] = rank
    return ranks


def one_hot_key(levels: Sequence[Sequence[int]]) -> list[int] | None:
    """Per-row coefficients that order rows lexicographically by `levels` (each a list of
    non-negative integers, one per row; first level first), folded into one integer per row:
    ((l0 × (max l1 + 1) + l1) × (max l2 + 1) + l2) ... Exact for a model that picks exactly
    one row. None when the coefficients could sum past INT_LIMIT (solve in stages instead)."""
    key = list(levels[0])
    for level in levels[1:]:
        weight = max(level, default=0) + 1
        if (sum(key) + 1) * weight >= INT_LIMIT:
            return None
        key = [k * weight + v for k, v in zip(key, level, strict=True)]
    return key


def solve_lexicographic(
    m: cp_model.CpModel,
    objectives: Sequence[Any],
    variables: Sequence[Any],
    config: SolverConfig | None,
) -> tuple[SolveResult, SolveResult]:
    """Minimise each objective in turn with the earlier ones fixed at their solved values.

    Returns the first stage's result (its objective and bound are the reported ones; wall_s
    covers every stage) and the last stage's result (to read the values from).
    """
    m.minimize(objectives[0])
    first = last = solve(m, config)
    wall = first.wall_s
    for prev, expr in zip(objectives, objectives[1:], strict=False):
        if last.status == Status.INFEASIBLE:
            break
        values = [last.solver.value(var) for var in variables]
        m.add(prev == last.solver.value(prev))
        m.clear_hints()
        for var, value in zip(variables, values, strict=True):
            m.add_hint(var, value)
        m.minimize(expr)
        last = solve(m, config)
        wall += last.wall_s
    return replace(first, wall_s=wall), last
