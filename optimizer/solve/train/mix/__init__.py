"""Mixed clusters of one job: pricing models on one instance type, two GPU types on one fabric.

Modules in data-flow order: data (type groups, pruned pricing rows, step tables) → model (one
CP-SAT model per group or pair) → search (plan_mix: groups, pairs, bounds) → plans (MixPlan, its
rows and cost) → check (the plan re-derived from scratch).
"""

from optimizer.solve.train.mix.check import check_mix, mix_outcome, mix_violations
from optimizer.solve.train.mix.search import MixOutcome, MixPlan, MixRow, mix_cost_usd, plan_mix

__all__ = [
    "MixOutcome",
    "MixPlan",
    "MixRow",
    "check_mix",
    "mix_cost_usd",
    "mix_outcome",
    "mix_violations",
    "plan_mix",
]
