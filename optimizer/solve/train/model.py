"""Single-job CP-SAT model: pick one candidate row, cheapest first, faster on ties.

Data (candidate rows with integer cents and seconds) → variables (one bool per row) →
constraints (exactly one; deadline and budget as unary implications) → objective
(lexicographic cost, time, tie rank in one integer) → solve → the chosen row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ortools.sat.python import cp_model

from optimizer.solve.cpsat.core import shrink_core
from optimizer.solve.cpsat.lexicographic import one_hot_key, solve_lexicographic, tie_ranks
from optimizer.solve.cpsat.scale import budget_cents, deadline_seconds, to_cents, to_seconds, within_scale
from optimizer.solve.cpsat.solver import SolverConfig, SolveResult, solve
from optimizer.solve.train.enumerate import Candidate
from optimizer.units import SECONDS_PER_MINUTE

__all__ = ["candidate_key", "tie_key", "solve_table"]


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
    in_scale = [c for c in candidates if within_scale(c.cost_usd, c.hours)]
    if candidates and not in_scale:
        cheapest = min(candidates, key=lambda c: (c.cost_usd, c.hours))
        to_cents(cheapest.cost_usd)  # raises the ScaleError naming the value and the limit
        to_seconds(cheapest.hours)
    candidates = in_scale
    cost = [to_cents(c.cost_usd) for c in candidates]
    secs = [to_seconds(c.hours) for c in candidates]
    minutes = [-(-s // SECONDS_PER_MINUTE) for s in secs]  # rounded up
    ranks = tie_ranks(candidates, tie_key)
    folded = one_hot_key([cost, minutes, ranks])

    def build(
        with_assumptions: bool, kinds: Sequence[str] = ("deadline", "budget")
    ) -> tuple[Any, list[Any], dict[int, str]]:
        m = cp_model.CpModel()
        x = [m.new_bool_var(f"x{i}") for i in range(len(candidates))]
        m.add_exactly_one(x)
        for key in exclude:
            banned = [xi for xi, c in zip(x, candidates, strict=True) if candidate_key(c) == key]
            if banned:
                m.add(cp_model.LinearExpr.sum(banned) == 0)
        requirement: dict[int, str] = {}
        # With exactly one row chosen, "time ≤ deadline" is the same as forbidding every row
        # over it: unary implications propagate at once, whereas the equivalent weighted-sum
        # constraint with 1e5-1e10 coefficients slows CP-SAT ~20× (measured: 55 vs 3 ms).
        for name, values, limit in (
            ("deadline", secs, None if deadline_h is None else deadline_seconds(deadline_h)),
            ("budget", cost, None if budget_usd is None else budget_cents(budget_usd)),
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
        return m, x, requirement

    model, x, _ = build(False)
    if folded is not None:
        model.minimize(cp_model.LinearExpr.weighted_sum(x, folded))
        result = last = solve(model, config)
    else:  # rare: enormous costs; the same order in stages
        levels = [cp_model.LinearExpr.weighted_sum(x, v) for v in (cost, secs, ranks)]
        result, last = solve_lexicographic(model, levels, x, config)
    if result.status == "infeasible":
        model, x, requirement = build(True)
        again = solve(model, config)
        core = (
            [
                requirement[i]
                for i in again.solver.sufficient_assumptions_for_infeasibility()
                if i in requirement
            ]
            if again.status == "infeasible"
            else []
        )
        return result, None, _minimal(core or sorted(requirement.values()), build, config)
    chosen = next(i for i, xi in enumerate(x) if last.solver.boolean_value(xi))
    return result, candidates[chosen], []


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


def _minimal(core: list[str], build: Any, config: SolverConfig | None) -> list[str]:
    """The core shrunk by deletion (solve/cpsat/core.py): a requirement stays only if the others
    alone are feasible (with a budget nothing meets, CP-SAT may name the deadline too)."""
    shrunk = shrink_core(core, lambda kinds: solve(build(False, kinds)[0], config).status == "infeasible")
    return shrunk if shrunk is not None else core
