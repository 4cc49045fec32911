"""The CP-SAT model of a mixed cluster: instance counts per (instance type, pricing model).

Data: configurations c (one instance count per type with the layout and step that count runs
at, and for one instance type the spot instances s_c whose interruptions set the wall hours)
→ variables (one bool per configuration, one integer count per (type, non-spot pricing row))
→ constraints (exactly one configuration; each type's counts add up to its instances in the
chosen configuration (less its spot ones); each row within its cap — held reservations,
availability, owned boxes; cost in cents as a linear expression enforced by the
configuration's literal; deadline by dropping configurations over it; budget) → objective
(cents, then minutes) → solve → the chosen configuration and counts.

Everything non-linear is computed in Python (STYLE.md "CP-SAT"): the wall hours of each
configuration, and for a GPU-type mix the per-type micro-batch × accumulation split that
balances the step (solve/train/mix/search.py). For fixed instance counts the cost is the hourly rate
× hours, so the fastest split is always the cheapest one: a dominance rule, as the candidate
table keeps only the fastest layout per count. (Carrying the split into CP-SAT as element
constraints with cost = rate × step as a product was tried first: on 16 H100 + 32 A100 it found
no solution within 10 s, where this model answers in milliseconds.)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ortools.sat.python import cp_model

from optimizer.solve.cpsat.scale import budget_cents, deadline_seconds, to_cents, to_seconds
from optimizer.solve.cpsat.solver import SolverConfig, SolveResult, solve
from optimizer.units import SECONDS_PER_MINUTE

__all__ = ["MixData", "MixChoice", "solve_mix", "row_cents"]


@dataclass(frozen=True)
class MixData:
    """Per configuration c: instances per type, spot instances (of type 0's spot row), wall
    hours and the data charge (USD); per type its non-spot rows' USD per instance-hour and caps
    (0: none); the spot row's rate."""

    instances: Sequence[tuple[int, ...]]
    spot: Sequence[int]
    hours: Sequence[float]
    data_usd: Sequence[float]
    rates: Sequence[Sequence[float]]
    caps: Sequence[Sequence[int]]
    spot_rate: float = 0.0
    #: per type, per row: a reservation already held. Given, a one-type solution must be a mix:
    #: held instances, or two pricing models together (one rented row alone is a single-type
    #: plan, which the candidate table already has)
    held: Sequence[Sequence[bool]] = ()


@dataclass(frozen=True)
class MixChoice:
    result: SolveResult
    config: int
    counts: tuple[tuple[int, ...], ...]  # per type, per non-spot row
    cents: int


def row_cents(usd_per_hour: float, hours: float) -> int:
    """Whole cents one instance of a row costs over `hours` (scale.to_cents: rounded up)."""
    return to_cents(usd_per_hour * hours)


def solve_mix(
    d: MixData, deadline_h: float | None, budget_usd: float | None, config: SolverConfig | None = None
) -> MixChoice | None:
    """The cheapest configuration and counts per pricing row, ties to the faster; None when no
    configuration meets the deadline, the caps and the budget."""
    configs = [
        c
        for c in range(len(d.hours))
        if deadline_h is None or to_seconds(d.hours[c]) <= deadline_seconds(deadline_h)
    ]
    types = range(len(d.rates))
    if not configs:
        return None
    plain = {c: tuple(d.instances[c][t] - (d.spot[c] if t == 0 else 0) for t in types) for c in configs}
    m = cp_model.CpModel()
    y = {c: m.new_bool_var(f"config{c}") for c in configs}
    m.add_exactly_one(y.values())
    # counts per (configuration, type, row): zero unless the configuration is chosen, so the
    # cost is one linear expression (a transportation-like LP, tight; the same counts as one
    # variable per row with the cost enforced per configuration took CP-SAT > 10 s to prove)
    rows = [(t, r, cap) for t in types for r, cap in enumerate(d.caps[t])]
    n: dict[tuple[int, int, int], cp_model.IntVar] = {}
    terms = []
    for c in configs:
        for t, r, cap in rows:
            u = min(cap, plain[c][t]) if cap > 0 else plain[c][t]
            x = n[c, t, r] = m.new_int_var(0, u, f"n{c}_{t}_{r}")
            m.add(x <= u * y[c])
            terms.append(row_cents(d.rates[t][r], d.hours[c]) * x)
        for t in types:
            m.add(sum(n[c, t, r] for tt, r, _ in rows if tt == t) == plain[c][t] * y[c])
        fixed = d.spot[c] * row_cents(d.spot_rate, d.hours[c]) + to_cents(d.data_usd[c])
        terms.append(fixed * y[c])
    cost = sum(terms)
    if d.held and len(d.rates) == 1:
        used = []
        for t, r, _ in rows:
            on = m.new_bool_var(f"used{t}_{r}")
            m.add(sum(n[c, t, r] for c in configs) >= 1).only_enforce_if(on)
            used.append((2 if d.held[t][r] else 1) * on)
        spot_used = sum(y[c] for c in configs if d.spot[c] > 0)
        m.add(sum(used) + spot_used >= 2)
    if budget_usd is not None:
        m.add(cost <= budget_cents(budget_usd))
    minutes = {c: -(-to_seconds(d.hours[c]) // SECONDS_PER_MINUTE) for c in configs}
    weight = max(minutes.values()) + 1
    m.minimize(cost * weight + sum(minutes[c] * y[c] for c in configs))
    result = solve(m, config)
    if result.status == "infeasible":
        return None
    v = result.solver
    chosen = next(c for c in configs if v.boolean_value(y[c]))
    counts = tuple(tuple(int(v.value(n[chosen, t, r])) for tt, r, _ in rows if tt == t) for t in types)
    return MixChoice(result, chosen, counts, int(v.value(cost)))
