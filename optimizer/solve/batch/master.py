"""The Benders master (benders.py): a 0-1 MIP over each job's row and the reserved counts.

HiGHS through OR-Tools' MathOpt, gap 0, built once; cuts are added between solves. Time
enters only through the energetic-reasoning windows of model.energy_windows (every resource,
reservations against R), so its optimum is a lower bound on the batch's.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta

from ortools.math_opt.python import mathopt

from optimizer.solve.batch.bulk import LinearRow, with_rows
from optimizer.solve.batch.disjunctive import WindowCut
from optimizer.solve.batch.model import energy_windows
from optimizer.solve.batch.problem import BatchProblem

__all__ = ["Cut", "Master", "Start"]

#: relative slack on every capacity row of the LP relaxation (Master.relaxed), ten times
#: HiGHS's default primal feasibility tolerance (1e-7)
LP_SLACK = 1e-6
#: a cut: (job index, rows of that job) pairs, not all of which can be chosen together
Cut = tuple[tuple[int, tuple[int, ...]], ...]
#: a plan as a MIP start: each job's row (None: dropped) and R per reservation
Start = tuple[Sequence[int | None], Mapping[str, int]]


def _capacity_rows(model: mathopt.Model) -> list[mathopt.LinearConstraint]:
    """The master's capacity rows (Σ e·x ≤ capacity, finite and positive): what the LP relaxation
    loosens (Master.relaxed) and the capacity factor scales (Master.capacity_factor)."""
    rows = model.linear_constraints()
    return [c for c in rows if math.isinf(c.lower_bound) and 0 < c.upper_bound < math.inf]


@contextmanager
def _quiet_stdout() -> Iterator[None]:
    """Silence file descriptor 1: HiGHS 1.12 prints debug lines there whatever its options
    (e.g. 'HighsMipSolverData::transformNewIntegerFeasibleSolution'), which would corrupt
    `ccopt batch --json`."""
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(null)
        os.close(saved)


class Master:
    """The MIP master (mathopt + HiGHS), built once; cuts are added between solves."""

    def __init__(self, problem: BatchProblem, rows: Sequence[Sequence[int]]) -> None:
        m = self.model = mathopt.Model(name="batch-master")
        self.problem, self.rows = problem, rows
        self.x = [[m.add_binary_variable(name=f"x{j}_{i}") for i in idx] for j, idx in enumerate(rows)]
        self.reserve = {
            k: m.add_integer_variable(lb=0, ub=r.capacity, name=f"R_{k}")
            for k, r in problem.resources.items()
            if r.kind == "reservation"
        }
        self.lit = {(j, i): xi for j in range(len(rows)) for xi, i in zip(self.x[j], rows[j], strict=True)}
        self.last_bound = -math.inf  # the dual bound of the last solve, with or without a choice
        obj = []
        self.drop: dict[int, mathopt.Variable] = {}  # job index: its drop variable (droppable jobs)
        for j, job in enumerate(problem.jobs):
            choice = list(self.x[j])
            if job.penalty_cents is not None:
                drop = self.drop[j] = m.add_binary_variable(name=f"d{j}")
                choice.append(drop)
                obj.append((job.penalty_cents or 0) * drop)
            m.add_linear_constraint(mathopt.fast_sum(choice) == 1)
            for xi, i in zip(self.x[j], rows[j], strict=True):
                obj.append(job.rows[i].cost_cents * xi)
                for key, demand in job.rows[i].usage:
                    if key in self.reserve:
                        m.add_linear_constraint(demand * xi <= self.reserve[key])
        obj += [problem.resources[k].commitment_cents * r for k, r in self.reserve.items()]
        m.minimize(mathopt.fast_sum(obj))
        # the energy windows in bulk (bulk.py: one call per coefficient took 7.6 s at 200 jobs)
        energy: list[LinearRow] = []
        ids = {ji: xi.id for ji, xi in self.lit.items()}
        for key, (a, b), terms in energy_windows(problem, rows, {}, reservations=True):
            row = [(ids[j, i], e) for j, i, e in terms]
            if key in self.reserve:  # Σ e x ≤ (b − a) R
                energy.append(([*row, (self.reserve[key].id, -(b - a))], 0))
            else:
                energy.append((row, (b - a) * problem.resources[key].capacity))
        m = self.model = with_rows(m, energy)
        self.x = [[m.get_variable(xi.id) for xi in xs] for xs in self.x]
        self.reserve = {k: m.get_variable(r.id) for k, r in self.reserve.items()}
        self.drop = {j: m.get_variable(d.id) for j, d in self.drop.items()}
        self.lit = {(j, i): xi for j in range(len(rows)) for xi, i in zip(self.x[j], rows[j], strict=True)}

    def relaxed(self, time_limit_s: float) -> tuple[float, list[int | None], dict[str, int]] | None:
        """The master's LP relaxation (every 0-1 and integer variable made continuous, solved
        once, then made integer again): (its optimum, a lower bound on the MIP's and so on
        the batch's; each job's row of largest LP value, None where its drop is; each R
        rounded up); None when no optimum in time; bound inf: infeasible. Measured on 500
        generated jobs on 2 boxes: 1.2 s for $161,535.44, where the MIP's first solve reached
        $161,576.66 in 7.8 s and no choice; 200 jobs 0.3 s, $37,500.47 against $37,532.83)."""
        integer = [v for v in self.model.variables() if v.integer]
        for v in integer:
            v.integer = False
        # capacity rows loosened by LP_SLACK: "infeasible" then holds beyond HiGHS's tolerances
        # (a relaxation of the relaxation: its optimum is still a lower bound)
        loose = [(c, c.upper_bound) for c in _capacity_rows(self.model)]
        for c, ub in loose:
            c.upper_bound = ub * (1 + LP_SLACK)
        params = mathopt.SolveParameters(
            enable_output=False,
            time_limit=timedelta(seconds=max(0.01, time_limit_s)),
            lp_algorithm=mathopt.LPAlgorithm.DUAL_SIMPLEX,
        )
        try:
            with _quiet_stdout():
                res = mathopt.solve(self.model, mathopt.SolverType.HIGHS, params=params)
        finally:
            for v in integer:
                v.integer = True
            for c, ub in loose:
                c.upper_bound = ub
        reason = res.termination.reason
        if reason in (
            mathopt.TerminationReason.INFEASIBLE,
            mathopt.TerminationReason.INFEASIBLE_OR_UNBOUNDED,
        ):
            return math.inf, [], {}
        if reason != mathopt.TerminationReason.OPTIMAL:
            return None
        values = res.variable_values()
        chosen: list[int | None] = []
        for xs, rows in zip(self.x, self.rows, strict=True):
            best = max(((values[xi], i) for xi, i in zip(xs, rows, strict=True)), default=(0.0, None))
            chosen.append(best[1] if best[0] > 1 - sum(values[xi] for xi in xs) else None)
        held = {k: min(int(r.upper_bound), math.ceil(values[r] - 1e-6)) for k, r in self.reserve.items()}
        # the simplex optimum holds to its tolerances: a relative 1e-6 below it stays a bound
        return res.objective_value() - 1e-6 * abs(res.objective_value()), chosen, held

    def capacity_factor(self, time_limit_s: float) -> float | None:
        """The least factor by which every quota and owned resource must grow for the LP
        relaxation to have a solution (reservations at their most): how far over capacity an
        infeasible batch is (minimise f with each capacity row Σ e x ≤ f × capacity × (b − a),
        on a copy of the model); None when not solved in time or no factor helps."""
        model = mathopt.Model.from_model_proto(self.model.export_model())
        for v in model.variables():
            v.integer = False
        factor = model.add_variable(lb=0.0, name="capacity_factor")
        for c in _capacity_rows(model):
            c.set_coefficient(factor, -c.upper_bound)
            c.upper_bound = 0.0
        model.minimize(factor)
        params = mathopt.SolveParameters(
            enable_output=False, time_limit=timedelta(seconds=max(0.01, time_limit_s))
        )
        with _quiet_stdout():
            res = mathopt.solve(model, mathopt.SolverType.HIGHS, params=params)
        if res.termination.reason != mathopt.TerminationReason.OPTIMAL:
            return None
        return float(res.objective_value())

    def bound_with(self, key: str, at_least: int, time_limit_s: float) -> float:
        """The master's lower bound with R_key ≥ at_least (probe.BoundOracle; inf: none)."""
        var = self.reserve[key]
        low = var.lower_bound
        var.lower_bound = at_least
        try:
            answer = self.solve(time_limit_s)
        finally:
            var.lower_bound = low
        return math.inf if answer is not None and math.isinf(answer[2]) else self.last_bound

    def add_window_cut(self, cut: WindowCut) -> None:
        self.model.add_linear_constraint(
            mathopt.fast_sum(coef * self.lit[j, i] for j, i, coef in cut.terms) <= cut.rhs
        )

    def add_cut(self, cut: Cut) -> None:
        self.model.add_linear_constraint(
            mathopt.fast_sum(self.lit[j, i] for j, group in cut for i in group) <= len(cut) - 1
        )

    def _hint(self, start: Start | None) -> mathopt.ModelSolveParameters | None:
        """A MIP start: every 0-1 and R variable of the plan `start` (its row per job, None
        where dropped, and R per reservation)."""
        if start is None:
            return None
        chosen, reserved = start
        values: dict[mathopt.Variable, float] = {}
        for j, (xs, idx) in enumerate(zip(self.x, self.rows, strict=True)):
            values.update({xi: float(i == chosen[j]) for xi, i in zip(xs, idx, strict=True)})
            if j in self.drop:
                values[self.drop[j]] = float(chosen[j] is None)
        values.update({r: float(reserved.get(k, 0)) for k, r in self.reserve.items()})
        return mathopt.ModelSolveParameters(solution_hints=[mathopt.SolutionHint(variable_values=values)])

    def solve(
        self, time_limit_s: float, start: Start | None = None
    ) -> tuple[list[int | None], dict[str, int], float, bool] | None:
        """(row per job, R per reservation, lower bound, optimal); bound inf: infeasible.
        `start`: a plan every cut admits (a schedulable one), handed to HiGHS as its first
        incumbent: on the 50-job generated batch the first solve took 0.61 s instead of 0.78."""
        params = mathopt.SolveParameters(
            enable_output=False,
            relative_gap_tolerance=0.0,
            absolute_gap_tolerance=0.0,
            time_limit=timedelta(seconds=max(0.01, time_limit_s)),
        )
        with _quiet_stdout():
            res = mathopt.solve(
                self.model, mathopt.SolverType.HIGHS, params=params, model_params=self._hint(start)
            )
        reason = res.termination.reason
        if reason in (
            mathopt.TerminationReason.INFEASIBLE,
            mathopt.TerminationReason.INFEASIBLE_OR_UNBOUNDED,
        ):
            return [], {}, math.inf, True
        self.last_bound = res.best_objective_bound()
        if not res.has_primal_feasible_solution():
            return None
        values = res.variable_values()
        chosen: list[int | None] = []
        for j in range(len(self.rows)):
            picked = [i for xi, i in zip(self.x[j], self.rows[j], strict=True) if values[xi] > 0.5]
            chosen.append(picked[0] if picked else None)
        held = {k: int(round(values[r])) for k, r in self.reserve.items()}
        return chosen, held, res.best_objective_bound(), reason == mathopt.TerminationReason.OPTIMAL
