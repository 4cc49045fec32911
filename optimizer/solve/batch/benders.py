"""Logic-based Benders decomposition of a batch (Hooker 2007, "Planning and scheduling by
logic-based Benders decomposition").

* **master** — a 0-1 MIP (HiGHS through OR-Tools' MathOpt, gap 0): each
  job's row (or its drop), the reserved counts R, cost in cents; time enters only through the
  energetic-reasoning cuts of model.add_energy_bounds (every resource, reservations against
  R), so it is a relaxation of the batch and its optimum a lower bound. On the saturated
  owned-box instances this knapsack-like master is where CP-SAT spends its time closing the
  bound; a MIP solver proves it in a fraction of a second.
* **subproblem** — CP-SAT (one worker, deterministic): the master's rows fixed, can every job
  start in its window with every cumulative respected? Yes: the master's plan is optimal.
  No: a minimal infeasible set of (job, row) is found (assumption core, then a deletion
  filter) and the no-good Σ x ≤ |set| − 1 is added, over each job's row and the rows that
  occupy a superset of it (same resources, ≥ demand, ≥ duration, so no easier to place).
  Up to MAX_CUTS_PER_ROUND disjoint sets are cut per round.

Every cut only removes row choices no schedule can realise, so the master bound stays valid
and the first master plan whose subproblem is feasible is optimal. Rounds are capped by
count (not time), so the answer is deterministic; if the cap or the time limit is hit, the
caller solves the full CP-SAT model with the cuts (`BendersOutcome.cuts`) and the bound.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from optimizer.solve.batch.disjunctive import WindowCut, covers_of, violated_windows
from optimizer.solve.batch.hints import GreedyPlan, repaired_plan
from optimizer.solve.batch.master import Cut, Master, Start
from optimizer.solve.batch.model import add_row_window, usable_rows
from optimizer.solve.batch.probe import reservation_limits
from optimizer.solve.batch.problem import BatchProblem, choice_cost_cents
from optimizer.solve.cpsat.core import shrink_core

__all__ = ["MAX_ROUNDS", "MAX_CUTS_PER_ROUND", "Cut", "BendersOutcome", "as_plan", "solve_benders"]

#: CHOICE: rounds of master + subproblem before handing over to the full CP-SAT model; a
#: count, not a time, keeps the answer deterministic. Measured on the 50-job saturated
#: benchmark (2 boxes, instance at c0e2843, load ~1-2): with no time limit the rounds prove
#: $4,945.52 in 23 rounds, 65-70 s (master 20 s; checks 49 s, 39 s of it in round 22, whose
#: choice puts 35 jobs on the boxes: its conflict holds 34 of them, each neighbour check a
#: CP-SAT infeasibility proof of ~50,000 conflicts, 0.3-2.6 s); the bound sits at $4,944.73
#: from round 6 to 21 (equal-cost choices, each cut by one no-good)
MAX_ROUNDS = 120
#: disjoint infeasible sets cut per round (fewer master solves)
MAX_CUTS_PER_ROUND = 6
#: disjunctive-window cuts (disjunctive.py) added per round, the most violated first
MAX_WINDOW_CUTS = 40
SUB_DETERMINISTIC_LIMIT = 20.0  # CP-SAT deterministic time per subproblem check
#: CHOICE: share of the Benders time kept to probe the reserved counts (probe.py) when the
#: rounds use it all; a probe is one master solve (0.5 s at 50 generated jobs, ~5 s at 200)
PROBE_SHARE = 0.2

#: a plan: (cost in cents, row per job or None, start per scheduled job, R per reservation)
Plan = tuple[int, list[int | None], list[int], dict[str, int]]


@dataclass
class BendersOutcome:
    """What the decomposition reached: a proven plan, or cuts and a bound for the full model."""

    proven: bool
    bound_cents: int | None = None  # master lower bound (valid whether or not proven)
    rows: list[int | None] = field(default_factory=list)  # chosen row per job (None: dropped)
    starts: list[int | None] = field(default_factory=list)
    reserved: dict[str, int] = field(default_factory=dict)
    objective_cents: int | None = None
    cuts: list[Cut] = field(default_factory=list)
    window_cuts: list[WindowCut] = field(default_factory=list)
    incumbent: Plan | None = None  # the cheapest schedulable plan the rounds found
    #: the largest R per reservation a plan cheaper than every plan known may take (probe.py)
    reserve_limits: dict[str, int] = field(default_factory=dict)
    rounds: int = 0
    #: no LP solution (bound_only): the least growth of every capacity that gives one
    capacity_factor: float | None = None
    stopped: str = ""  # why it handed over: rounds | time | master | subproblem | bound (bound_only)


def _check(
    problem: BatchProblem,
    items: Sequence[tuple[int, Sequence[int]]],
    reserved: dict[str, int],
    minimise: bool = False,
    deadline: float = math.inf,
) -> tuple[str, list[int], list[int], list[int]]:
    """Can the jobs all be scheduled, each on one of its rows? (status, core positions,
    starts, rows). `minimise`: the cheapest such schedule (status "optimal"). "unknown" when
    the wall-clock `deadline` (time.perf_counter) has passed or arrives first."""
    left_s = deadline - time.perf_counter()
    if left_s <= 0:
        return "unknown", [], [], []
    m = cp_model.CpModel()
    present, starts, picks, cost = [], [], [], []
    users: dict[str, list[tuple[cp_model.IntervalVar, int]]] = {}
    for pos, (j, group) in enumerate(items):
        job = problem.jobs[j]
        a = m.new_bool_var(f"a{pos}")
        shortest = min(job.rows[i].duration for i in group)
        s = m.new_int_var(job.release, max(job.release, job.due - shortest), f"s{pos}")
        present.append(a)
        starts.append(s)
        ys = [a] if len(group) == 1 else [m.new_bool_var(f"y{pos}_{i}") for i in group]
        if len(group) > 1:
            m.add(sum(ys) == 1).only_enforce_if(a)
        picks.append(ys)
        for y, i in zip(ys, group, strict=True):
            row = job.rows[i]
            cost.append(row.cost_cents * y)
            if len(group) > 1:
                m.add(s + row.duration <= job.due).only_enforce_if(y)
            add_row_window(m, s, job.release, job.due, row, y)
            itv = m.new_optional_fixed_size_interval_var(s, row.duration, y, f"i{pos}_{i}")
            for key, demand in row.usage:
                users.setdefault(key, []).append((itv, demand))
    for key, lst in users.items():
        res = problem.resources[key]
        cap = reserved.get(key, 0) if res.kind == "reservation" else res.capacity
        if sum(d for _, d in lst) > cap:
            m.add_cumulative([itv for itv, _ in lst], [d for _, d in lst], cap)
    if minimise:
        m.minimize(sum(cost))
        for lit in present:
            m.add(lit == 1)
    else:
        m.add_assumptions(present)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = SUB_DETERMINISTIC_LIMIT
    if math.isfinite(left_s):
        solver.parameters.max_time_in_seconds = left_s
    status = solver.solve(m)
    if status == cp_model.OPTIMAL or (status == cp_model.FEASIBLE and not minimise):
        chosen = [
            next(i for y, i in zip(ys, group, strict=True) if solver.boolean_value(y))
            for ys, (_, group) in zip(picks, items, strict=True)
        ]
        return "feasible", [], [int(solver.value(s)) for s in starts], chosen
    if status == cp_model.INFEASIBLE:
        if minimise:
            return "infeasible", list(range(len(items))), [], []
        index = {lit.index: pos for pos, lit in enumerate(present)}
        core = sorted(index[c] for c in solver.sufficient_assumptions_for_infeasibility())
        return "infeasible", core or list(range(len(items))), [], []
    return "unknown", [], [], []


class _Checker:
    """Schedule checks split by resource: rows on disjoint sets of resources never meet, so
    each connected set of resources is checked apart (a smaller CP-SAT model), and a set of
    (job, row) already answered is not solved again (the next master plan mostly repeats the
    last one's rows on all but one resource). Answers are kept for this decomposition only."""

    def __init__(self, problem: BatchProblem) -> None:
        self.problem = problem
        self.known: dict[tuple, tuple[str, list[int], list[int], list[int]]] = {}
        self.solved = 0

    def _parts(self, items: Sequence[tuple[int, Sequence[int]]]) -> list[list[int]]:
        """Positions of `items` per connected set of resources (free rows: none)."""
        owner: dict[str, int] = {}
        parts: list[list[int]] = []
        for pos, (j, group) in enumerate(items):
            keys = {k for i in group for k, _ in self.problem.jobs[j].rows[i].usage}
            hit = sorted({owner[k] for k in keys if k in owner})
            if not keys:
                continue
            if not hit:
                parts.append([])
                hit = [len(parts) - 1]
            first = hit[0]
            for other in hit[1:]:  # this row joins resources of several parts: merge them
                parts[first] += parts[other]
                parts[other] = []
                owner.update({k: first for k, v in owner.items() if v == other})
            parts[first].append(pos)
            owner.update({k: first for k in keys})
        return [sorted(p) for p in parts if p]

    def __call__(
        self, items: Sequence[tuple[int, Sequence[int]]], reserved: dict[str, int], deadline: float
    ) -> tuple[str, list[int], list[int], list[int]]:
        """As _check (status, core positions, starts, rows), part by part."""
        starts = [self.problem.jobs[j].release for j, _ in items]
        chosen = [group[0] for _, group in items]
        for part in self._parts(items):
            sub = [(items[p][0], tuple(items[p][1])) for p in part]
            key = (tuple(sub), tuple(sorted(reserved.items())))
            if key not in self.known:
                self.solved += 1
                answer = _check(self.problem, sub, reserved, deadline=deadline)
                if answer[0] == "unknown":
                    return answer
                self.known[key] = answer
            status, core, part_starts, part_rows = self.known[key]
            if status != "feasible":
                return status, [part[c] for c in core], [], []
            for p, t, i in zip(part, part_starts, part_rows, strict=True):
                starts[p], chosen[p] = t, i
        return "feasible", [], starts, chosen


def _minimal(
    check: _Checker,
    items: Sequence[tuple[int, tuple[int, ...]]],
    core: list[int],
    reserved: dict[str, int],
    deadline: float = math.inf,
) -> list[tuple[int, tuple[int, ...]]] | None:
    """A minimal infeasible subset of items[core] (deletion filter, solve/cpsat/core.py); None
    if a check fails (unknown in time)."""

    def conflicts(trial: list[tuple[int, tuple[int, ...]]]) -> bool | None:
        status = check(trial, reserved, deadline)[0]
        return None if status == "unknown" else status == "infeasible"

    return shrink_core([items[c] for c in core], conflicts, unknown="fail")


def _lift(
    problem: BatchProblem, rows: Sequence[Sequence[int]], items: list[tuple[int, tuple[int, ...]]]
) -> Cut:
    """Each (job, row) with the job's rows that occupy at least as much: no easier to place."""
    out = []
    for j, (i,) in items:
        job, base = problem.jobs[j], problem.jobs[j].rows[i]
        need = dict(base.usage)
        group = tuple(
            k
            for k in rows[j]
            if job.rows[k].duration >= base.duration
            and all(dict(job.rows[k].usage).get(key, 0) >= d for key, d in need.items())
        )
        out.append((j, group))
    return tuple(sorted(out))


def _neighbours(
    check: _Checker,
    rows: Sequence[Sequence[int]],
    found: list[tuple[int, tuple[int, ...]]],
    reserved: dict[str, int],
    deadline: float = math.inf,
) -> list[Cut]:
    """Cuts the next rounds would need: the conflict with one job moved to another row on the
    same resources (e.g. 2 boxes for a shorter time) that still cannot be scheduled."""
    problem, cuts = check.problem, []
    for k, (j, (i,)) in enumerate(found):
        keys = {key for key, _ in problem.jobs[j].rows[i].usage}
        for alt in rows[j]:
            if alt == i or {key for key, _ in problem.jobs[j].rows[alt].usage} != keys:
                continue
            trial = found[:k] + [(j, (alt,))] + found[k + 1 :]
            status, core, _, _ = check(trial, reserved, deadline)
            if status != "infeasible":
                continue
            smaller = _minimal(check, trial, core, reserved, deadline)
            if smaller and (j, (alt,)) in smaller:
                cuts.append(_lift(problem, rows, smaller))
    return cuts


def _repair(
    problem: BatchProblem, rows: Sequence[Sequence[int]], chosen: list[int | None], reserved: dict[str, int]
) -> Plan | None:
    """A schedule near the master's choice (hints.repaired_plan), as a Plan; None if none."""
    g = repaired_plan(problem, rows, chosen, reserved)
    return None if g is None else as_plan(g)


def as_plan(g: GreedyPlan) -> Plan:
    """A greedy or repaired plan as a Plan (its cost, row per job, the scheduled jobs' starts, R)."""
    starts = [t for i, t in g.plan if i is not None and t is not None]
    return g.cost_cents, [i for i, _ in g.plan], starts, dict(g.reserved)


def _keep(out: BendersOutcome, plan: Plan | None) -> None:
    """Keep `plan` as the incumbent if it is cheaper."""
    if plan is not None and (out.incumbent is None or plan[0] < out.incumbent[0]):
        out.incumbent = plan


def _finish(out: BendersOutcome, plan: Plan) -> BendersOutcome:
    out.objective_cents, out.rows, starts, out.reserved = plan
    it = iter(starts)
    out.starts = [next(it) if i is not None else None for i in out.rows]
    out.proven = True
    return out


def _cut_conflicts(
    check: _Checker,
    rows: Sequence[Sequence[int]],
    items: list[tuple[int, tuple[int, ...]]],
    core: list[int],
    most: dict[str, int],
    master: Master,
    out: BendersOutcome,
    deadline: float,
) -> bool:
    """Cut up to MAX_CUTS_PER_ROUND disjoint conflicts of `items` (found at the largest R,
    so they hold whatever R), with their neighbours; False when a check ran out of time."""
    for _cut in range(MAX_CUTS_PER_ROUND):
        found = _minimal(check, items, core, most, deadline)
        if not found:
            return False
        new = [_lift(check.problem, rows, found), *_neighbours(check, rows, found, most, deadline)]
        for cut in new:
            out.cuts.append(cut)
            master.add_cut(cut)
        taken = set(found)
        items = [it for it in items if it not in taken]
        status, core, _, _ = check(items, most, deadline)
        if status != "infeasible":
            break
    return True


def solve_benders(
    problem: BatchProblem,
    time_limit_s: float,
    max_rounds: int = MAX_ROUNDS,
    bound_only: bool = False,
    lp_only: bool = False,
    start: Plan | None = None,
) -> BendersOutcome:
    """Master MIP + CP-SAT subproblems until the bound meets a schedulable plan (module doc).
    Each round whose choice cannot be scheduled is also repaired into a plan (the incumbent
    the full CP-SAT model starts from if the bound is not met). Unproven, the last
    PROBE_SHARE of the time (or what the rounds left) probes the reserved counts against the
    cheapest plan known, `start` or the rounds' incumbent (probe.py: `reserve_limits`).
    `bound_only`: the master's LP relaxation only (its bound and its largest rows repaired into
    the incumbent: _first_bound), no schedule checks and no
    probe: what a large batch's window search uses (solve.py); then, unless `lp_only`, one
    MIP solve for a higher bound and a better choice (_first_bound). `start`: the caller's
    schedulable plan, the master's MIP start until the rounds find a cheaper one (_mip_start)."""
    started = time.perf_counter()
    rows = [usable_rows(job, problem, {}) for job in problem.jobs]
    out = BendersOutcome(proven=False)
    master_mip = Master(problem, rows)
    if bound_only:
        _first_bound(problem, rows, master_mip, out, started + time_limit_s, lp_only, start)
        return out
    # leave time to probe the reserved counts
    share = (1 - PROBE_SHARE) if master_mip.reserve else 1.0
    _rounds(problem, rows, master_mip, out, started + share * time_limit_s, max_rounds, start)
    if not out.proven and master_mip.reserve:
        _probe(problem, master_mip, out, start, started + time_limit_s)
    return out


def _first_bound(
    problem: BatchProblem,
    rows: Sequence[Sequence[int]],
    master_mip: Master,
    out: BendersOutcome,
    deadline: float,
    lp_only: bool = False,
    start: Plan | None = None,
) -> None:
    """The master's LP relaxation solved once (Master.relaxed): its optimum as the lower
    bound, its largest rows repaired into the incumbent (hints.repaired_plan); then, unless
    `lp_only`, one MIP solve in the time left: its bound if higher, its choice repaired.
    At 500 generated jobs (2 boxes) the MIP's first solve took 7.8 s of the 30 s limit for
    a bound 0.03% above the LP's (1.2 s) and found no choice; at 200 its choice, repaired,
    is the window search's start ($39,443.91 against the greedy $40,580.40 and $59,801.55
    from the LP's rows), so the caller passes lp_only when the greedy plans leave jobs out."""
    left = deadline - time.perf_counter()
    relaxed = master_mip.relaxed(left) if left > 0 else None
    out.rounds = 1 if left > 0 else 0
    out.stopped = "bound"
    if relaxed is None or math.isinf(relaxed[0]):
        out.stopped = "time" if relaxed is None else "infeasible"
        if relaxed is not None and deadline > time.perf_counter():
            out.capacity_factor = master_mip.capacity_factor(deadline - time.perf_counter())
        return
    bound, chosen, reserved = relaxed
    out.bound_cents = math.ceil(bound - 1e-6)
    _keep(out, _repair(problem, rows, chosen, reserved))
    left = deadline - time.perf_counter()
    if lp_only or left <= 0:
        return
    master = master_mip.solve(left, _mip_start(out, start))
    if math.isfinite(master_mip.last_bound):
        out.bound_cents = max(out.bound_cents, math.ceil(master_mip.last_bound - 1e-6))
    if master is not None and not math.isinf(master[2]):
        _keep(out, _repair(problem, rows, master[0], master[1]))


def _mip_start(out: BendersOutcome, start: Plan | None) -> Start | None:
    """The cheapest schedulable plan known as a MIP start (its rows and R): the rounds'
    incumbent or the caller's `start` (the incumbent on a tie). A schedulable plan meets every
    cut (no-goods remove only row sets no schedule realises; energy and window rows hold for
    every schedule)."""
    known = [plan for plan in (out.incumbent, start) if plan is not None]
    if not known:
        return None
    _, rows, _, reserved = min(known, key=lambda plan: plan[0])
    return rows, reserved


def _probe(
    problem: BatchProblem,
    master: Master,
    out: BendersOutcome,
    start: Plan | None,
    deadline: float,
) -> None:
    """out.reserve_limits against the cheapest plan known (the caller's or the incumbent);
    R is never cut below the R of either plan (both stay solutions)."""
    plans = [(p[0], p[3]) for p in (start, out.incumbent) if p is not None]
    if not plans:
        return
    cost = min(c for c, _ in plans)
    floor = {k: max(r.get(k, 0) for _, r in plans) for k in master.reserve}
    caps = {k: problem.resources[k].capacity for k in master.reserve}
    out.reserve_limits = reservation_limits(master, caps, cost, floor, deadline)


def _rounds(
    problem: BatchProblem,
    rows: Sequence[Sequence[int]],
    master_mip: Master,
    out: BendersOutcome,
    deadline: float,
    max_rounds: int,
    start: Plan | None = None,
) -> None:
    """The rounds (module doc) until proven, a cap, or `deadline` (every check stops there);
    each master solve starts from the cheapest schedulable plan known (_mip_start)."""
    covers = covers_of(problem, rows)
    check = _Checker(problem)
    most = {k: r.capacity for k, r in problem.resources.items() if r.kind == "reservation"}
    for _ in range(max_rounds):
        left = deadline - time.perf_counter()
        master = master_mip.solve(left, _mip_start(out, start)) if left > 0 else None
        out.rounds += 1 if left > 0 else 0
        if master is None:  # no choice in time; the MIP's dual bound still holds
            if math.isfinite(master_mip.last_bound):
                out.bound_cents = max(out.bound_cents or 0, math.ceil(master_mip.last_bound - 1e-6))
            out.stopped = "time" if left <= 0 else "master"
            return
        chosen, reserved, bound, optimal = master
        if math.isinf(bound):  # no choice of rows passes the cuts: the batch is infeasible
            out.stopped = "infeasible"
            return
        if math.isfinite(bound):  # the MIP's dual bound holds even when stopped early
            out.bound_cents = max(out.bound_cents or 0, math.ceil(bound - 1e-6))
        if out.incumbent is not None and out.bound_cents is not None and out.incumbent[0] <= out.bound_cents:
            _finish(out, out.incumbent)
            return
        window_cuts = violated_windows(problem, covers, chosen, MAX_WINDOW_CUTS)
        out.window_cuts.extend(window_cuts)
        for wc in window_cuts:  # the choice breaks a clique bound: no schedule check needed
            master_mip.add_window_cut(wc)
        items: list[tuple[int, tuple[int, ...]]] = [(j, (i,)) for j, i in enumerate(chosen) if i is not None]
        status, core, starts, _ = ("cut", [], [], []) if window_cuts else check(items, reserved, deadline)
        if status == "feasible":
            _keep(out, (choice_cost_cents(problem, chosen, reserved), chosen, starts, reserved))
            inc = out.incumbent
            if optimal and inc is not None and out.bound_cents is not None and inc[0] <= out.bound_cents:
                _finish(out, inc)
                return
            out.stopped = "master"  # master not proven optimal (its time ran out)
            return
        _keep(out, _repair(problem, rows, chosen, reserved))
        if status == "cut":
            continue
        if status != "infeasible":
            out.stopped = "subproblem"
            return
        if reserved != most:  # cuts must hold whatever R: find them at the largest R
            status, core, _, _ = check(items, most, deadline)
            if status != "infeasible":  # the conflict involves R; CP-SAT takes it from here
                out.stopped = "subproblem" if status == "unknown" else "reservation"
                return
        if not _cut_conflicts(check, rows, items, core, most, master_mip, out, deadline):
            out.stopped = "subproblem"
            return
    out.stopped = "rounds"
