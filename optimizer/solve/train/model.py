"""Single-job CP-SAT model: pick one candidate row, cheapest first, faster on ties.

Data (candidate rows with integer cents and seconds) → variables (one bool per row) →
constraints (exactly one; deadline and budget as unary implications) → objective
(lexicographic cost-then-time in one integer) → solve → the chosen row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ortools.sat.python import cp_model

from optimizer.solve.cpsat.scale import budget_cents, deadline_seconds, to_cents, to_seconds
from optimizer.solve.cpsat.solver import SolverConfig, SolveResult, solve
from optimizer.solve.train.enumerate import Candidate
from optimizer.units import SECONDS_PER_MINUTE

__all__ = ["candidate_key", "tie_key", "solve_table", "minimal_core"]


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

    The objective is lexicographic in one integer: cost_cents × (T + 1) + minutes, with T the
    largest duration in minutes, so no tie-break can outweigh one cent. Deadline and budget
    are hard constraints; only when the model is infeasible is it solved again with one
    assumption literal per requirement, to name the ones in conflict (CP-SAT
    sufficient_assumptions_for_infeasibility).

    Returns (result, chosen or None, names of the requirements in conflict when infeasible).
    """
    cost = [to_cents(c.cost_usd) for c in candidates]
    secs = [to_seconds(c.hours) for c in candidates]
    minutes = [-(-s // SECONDS_PER_MINUTE) for s in secs]  # rounded up
    weight = max(minutes, default=0) + 1
    # CP-SAT refuses an objective whose coefficients could sum past int64: bound the sum
    lexicographic = (sum(cost) + 1) * weight < 2**62

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
        obj = [c * weight + t for c, t in zip(cost, minutes, strict=True)] if lexicographic else cost
        m.minimize(cp_model.LinearExpr.weighted_sum(x, obj))
        return m, x, requirement

    model, x, _ = build(False)
    result = solve(model, config)
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
    chosen = next(i for i, xi in enumerate(x) if result.solver.boolean_value(xi))
    if not lexicographic:  # rare: enormous costs; fall back to a second phase on time
        model, x, _ = build(False)
        model.add(cp_model.LinearExpr.weighted_sum(x, cost) <= cost[chosen])
        model.minimize(cp_model.LinearExpr.weighted_sum(x, secs))
        second = solve(model, config)
        chosen = next(i for i, xi in enumerate(x) if second.solver.boolean_value(xi))
    deadline_s = None if deadline_h is None else deadline_seconds(deadline_h)
    budget_c = None if budget_usd is None else budget_cents(budget_usd)
    level = (cost[chosen], minutes[chosen] if lexicographic else secs[chosen])
    ties = [
        i
        for i, c in enumerate(candidates)
        if (cost[i], minutes[i] if lexicographic else secs[i]) == level
        and candidate_key(c) not in exclude
        and (deadline_s is None or secs[i] <= deadline_s)
        and (budget_c is None or cost[i] <= budget_c)
    ]
    return result, min((candidates[i] for i in ties), key=tie_key), []


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
    """The core shrunk by deletion: a requirement stays only if the others alone are feasible.

    CP-SAT's sufficient assumptions need not be minimal (with a budget nothing meets, it may
    name the deadline too); each requirement is dropped in turn and the rest re-solved.
    """
    return minimal_core(core, lambda kinds: solve(build(False, kinds)[0], config).status == "infeasible")


def minimal_core(core: Sequence[str], infeasible: Any) -> list[str]:
    """Deletion-based minimal subset of `core` for which `infeasible(subset)` still holds."""
    kept = list(core)
    for name in list(core):
        rest = [k for k in kept if k != name]
        if rest and infeasible(rest):
            kept = rest
    return kept
