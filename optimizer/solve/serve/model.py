"""CP-SAT model of the serving problem: variables, constraints, objective, solve; fleet capacity.

Data (IntProblem) → variables (instances n_o, load units x_ob) → constraints (every bucket's
load assigned; busy time within the replicas minus spares; instance limits; max_replicas) →
objective, minimised lexicographically:

1. USD per served hour in integer cents, then fewer GPUs (one weighted objective, as reported);
2. tie-break: Σ rank_o · n_o, rank = the option's place in the stated order of
   problem.option_ranks (most requests/s per instance, then offering key, tp, batch);
3. tie-break: Σ rank_o · x_ob (load goes to the lowest-ranked deployments first).

Stages 2 and 3 fix the earlier objectives at their solved values (solve/cpsat/lexicographic.py,
the planners' one tie-breaking style), so equal-cost optima found by different parallel
workers come out as the same answer. `max_load_scale` is a second model:
with the counts fixed, the largest uniform scale of the load the fleet carries.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ortools.sat.python import cp_model

from optimizer.errors import Status
from optimizer.solve.cpsat.lexicographic import solve_lexicographic
from optimizer.solve.cpsat.scale import ScaleError
from optimizer.solve.cpsat.solver import SolverConfig
from optimizer.solve.serve.problem import IntProblem, IntSolution, problem_cost_cents

__all__ = ["solve_problem", "max_load_scale", "PERMILLE"]

#: the capacity scale α is solved in steps of 1/PERMILLE
PERMILLE = 1000


@dataclass
class _Vars:
    """The variables of one serving model."""

    model: cp_model.CpModel
    ubs: list[int]
    n: list[Any]  # instances per option
    x: list[dict[int, Any]]  # load units per option and bucket it can serve
    used: dict[int, Any] = field(default_factory=dict)  # option deployed (only with spares)

    def all(self) -> list[Any]:
        return [*self.n, *(v for row in self.x for v in row.values()), *self.used.values()]


def _variables(problem: IntProblem) -> _Vars:
    m = cp_model.CpModel()
    ubs = [problem.upper_bound(i) for i in range(len(problem.options))]
    n = [m.new_int_var(0, ub, f"n{i}") for i, ub in enumerate(ubs)]
    x: list[dict[int, Any]] = []
    for i, o in enumerate(problem.options):
        pairs = zip(o.time_per_unit, problem.load_units, strict=True)
        x.append(
            {
                b: m.new_int_var(0, load, f"x{i}_{b}")
                for b, (t, load) in enumerate(pairs)
                if t is not None and load > 0 and ubs[i] > 0
            }
        )
    return _Vars(m, ubs, n, x)


def _add_capacity(v: _Vars, problem: IntProblem) -> None:
    """Σ_b t_ob·x_ob ≤ T·rpi_o·(n_o − k·used_o), n_o ≤ ub_o·used_o; n_o = 0 serving nothing.

    N+k counts instances (failure domains): a box that fails takes all its replicas, so each
    deployment keeps k spare instances, not k spare replicas."""
    k, T, m = problem.spare, problem.time_per_replica, v.model
    for i, o in enumerate(problem.options):
        row = v.x[i]
        if not row:
            m.add(v.n[i] == 0)
            continue
        busy = sum((o.time_per_unit[b] or 0) * var for b, var in row.items())
        if k:
            used = v.used[i] = m.new_bool_var(f"used{i}")
            m.add(v.n[i] <= v.ubs[i] * used)
            m.add(busy <= T * o.replicas_per_instance * (v.n[i] - k * used))
        else:
            m.add(busy <= T * o.replicas_per_instance * v.n[i])


def _add_load(v: _Vars, problem: IntProblem) -> None:
    """Σ_o x_ob = L_b for every bucket with load."""
    for b, load in enumerate(problem.load_units):
        if load > 0:
            v.model.add(sum(row[b] for row in v.x if b in row) == load)


def _add_instance_limits(v: _Vars, problem: IntProblem) -> None:
    """Σ n over the options of one offering ≤ its instance limit; Σ replicas ≤ max_replicas."""
    groups: dict[str, list[int]] = {}
    for i, o in enumerate(problem.options):
        if o.max_instances is not None:
            groups.setdefault(o.group, []).append(i)
    for members in groups.values():
        limit = min(problem.options[i].max_instances or 0 for i in members)
        v.model.add(sum(v.n[i] for i in members) <= limit)
    if problem.max_replicas is not None:
        v.model.add(
            sum(o.replicas_per_instance * v.n[i] for i, o in enumerate(problem.options))
            <= problem.max_replicas
        )


def _objectives(v: _Vars, problem: IntProblem) -> list[Any]:
    """[cost cents (weighted) + GPUs, Σ rank·n, Σ rank·x]; the tie-breaks only if ranks differ."""
    opts = problem.options
    weight = 1 + sum(ub * o.gpus_per_instance for ub, o in zip(v.ubs, opts, strict=True))
    primary = sum((o.cost_cents * weight + o.gpus_per_instance) * v.n[i] for i, o in enumerate(opts))
    if len({o.rank for o in opts}) <= 1:
        return [primary]
    by_count = sum(o.rank * v.n[i] for i, o in enumerate(opts))
    by_load = sum(o.rank * var for i, o in enumerate(opts) for var in v.x[i].values())
    return [primary, by_count, by_load]


def _greedy_hint(problem: IntProblem, ubs: Sequence[int]) -> list[int] | None:
    """The cheapest single option that serves every bucket alone (a feasible start), if any."""
    best: tuple[int, int, int] | None = None
    for i, o in enumerate(problem.options):
        pairs = zip(o.time_per_unit, problem.load_units, strict=True)
        if any(t is None for t, load in pairs if load):
            continue
        work = sum(u * (t or 0) for u, t in zip(problem.load_units, o.time_per_unit, strict=True))
        inst = (
            math.ceil(math.ceil(work / problem.time_per_replica) / o.replicas_per_instance) + problem.spare
        )  # spare instances (failure domains), not replicas
        if inst <= ubs[i] and (best is None or inst * o.cost_cents < best[0]):
            best = (inst * o.cost_cents, i, inst)
    if best is None:
        return None
    hint = [0] * len(problem.options)
    hint[best[1]] = best[2]
    return hint


#: the largest |coefficient| × bound sum of one linear expression (CP-SAT refuses a model whose
#: expressions may overflow a 64-bit integer; this keeps a margin of 2^7 below 2^63)
MAX_EXPRESSION = 2**56


def _check_scale(v: _Vars, problem: IntProblem) -> None:
    """ScaleError (exit 2) when the load is so large that the model's integers could overflow:
    the weighted cost objective and each option's busy-time constraint, bounded from above."""
    opts = problem.options
    weight = 1 + sum(ub * o.gpus_per_instance for ub, o in zip(v.ubs, opts, strict=True))
    objective = sum(
        (o.cost_cents * weight + o.gpus_per_instance) * ub for o, ub in zip(opts, v.ubs, strict=True)
    )
    busy = max(
        (
            sum((t or 0) * load for t, load in zip(o.time_per_unit, problem.load_units, strict=True))
            + problem.time_per_replica * o.replicas_per_instance * ub
            for o, ub in zip(opts, v.ubs, strict=True)
        ),
        default=0,
    )
    if max(objective, busy) > MAX_EXPRESSION:
        raise ScaleError(
            f"the serving load needs up to {max(v.ubs, default=0):,} instances of one option: beyond the "
            "solver's integer scale; allowed: a load a fleet of at most ~10^6 instances carries (fewer "
            "users or requests per second, or a longer think_time_s)"
        )


def solve_problem(problem: IntProblem, config: SolverConfig | None = None) -> IntSolution:
    """CP-SAT: the cheapest instance counts (cents, then GPUs, then the rank tie-breaks) with
    every bucket's load assigned (see the module docstring for the model).

    Raises:
        ScaleError: the load is beyond the solver's integer scale (_check_scale)."""
    v = _variables(problem)
    _check_scale(v, problem)
    _add_capacity(v, problem)
    _add_load(v, problem)
    _add_instance_limits(v, problem)
    hint = _greedy_hint(problem, v.ubs)
    if hint is not None:
        for i, value in enumerate(hint):
            v.model.add_hint(v.n[i], value)
    first, last = solve_lexicographic(v.model, _objectives(v, problem), v.all(), config)
    if first.status == Status.INFEASIBLE:
        return IntSolution(Status.INFEASIBLE, (), (), None, first)
    s = last.solver
    counts = tuple(int(s.value(var)) for var in v.n)
    assign = tuple(
        tuple(int(s.value(row[b])) if b in row else 0 for b in range(len(problem.load_units))) for row in v.x
    )
    return IntSolution(Status(first.status), counts, assign, problem_cost_cents(problem, counts), first)


def max_load_scale(
    problem: IntProblem,
    counts: Sequence[int],
    config: SolverConfig | None = None,
    cap_permille: int = 100_000,
) -> tuple[float, tuple[tuple[int, ...], ...]]:
    """Largest α (in steps of 0.001) such that α × the load fits the fleet with every replica up.

    Ties in the split at α go to the lowest-ranked options first. Returns α and the load units
    per option and bucket at α.
    """
    m = cp_model.CpModel()
    alpha = m.new_int_var(0, cap_permille, "alpha")
    rows: list[dict[int, Any]] = []
    for i, o in enumerate(problem.options):
        row = {}
        if counts[i]:
            for b, (t, load) in enumerate(zip(o.time_per_unit, problem.load_units, strict=True)):
                if t is not None and load:
                    row[b] = m.new_int_var(0, load * cap_permille // PERMILLE, f"x{i}_{b}")
            if row:
                m.add(
                    sum((o.time_per_unit[b] or 0) * var for b, var in row.items())
                    <= problem.time_per_replica * o.replicas_per_instance * counts[i]
                )
        rows.append(row)
    for b, load in enumerate(problem.load_units):
        if load:
            m.add(PERMILLE * sum(r[b] for r in rows if b in r) >= load * alpha)
    objectives = [-alpha]
    if len({o.rank for o in problem.options}) > 1:
        objectives.append(
            sum(o.rank * var for o, r in zip(problem.options, rows, strict=True) for var in r.values())
        )
    variables = [alpha, *(var for r in rows for var in r.values())]
    first, last = solve_lexicographic(m, objectives, variables, config)
    if first.status == Status.INFEASIBLE:
        return 0.0, ()
    s = last.solver
    units = tuple(
        tuple(int(s.value(r[b])) if b in r else 0 for b in range(len(problem.load_units))) for r in rows
    )
    return s.value(alpha) / PERMILLE, units
