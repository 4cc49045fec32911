"""Single-job mixed clusters: pricing models on one instance type (held reservations topped up
with on-demand, optionally spot) and two GPU types in one data-parallel job on one fabric.

data (mix/data.py: type groups, sizes, step tables) → model and solve (mix/model.py, one CP-SAT
model per group or pair) → solution (MixPlan) → check (mix/check.py: check_mix, from scratch) →
explain (why a mix is not worth it: fabric, balance loss, no cheaper split).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from optimizer.inputs.gpus import resolve_gpu_id
from optimizer.model.cluster import StepTime
from optimizer.model.layout import stack_checkpointing
from optimizer.model.preemption import Preemption
from optimizer.model.setup import Layout
from optimizer.model.stacks import setup_stack
from optimizer.pricing.schema import OfferingRow
from optimizer.solve.cpsat.scale import to_cents
from optimizer.solve.cpsat.solver import SolverConfig
from optimizer.solve.train.candidate import Candidate
from optimizer.solve.train.host_check import host_rule_of, offering_rejection
from optimizer.solve.train.mix.data import (
    MIX_MAX_INSTANCES,
    MixShape,
    PriceRow,
    TypeGroup,
    fastest_at,
    held_offerings,
    hourly_usd,
    mix_band_factor,
    pareto_useful,
    type_groups,
)
from optimizer.solve.train.mix.hours import mix_hours
from optimizer.solve.train.mix.model import MixData, solve_mix
from optimizer.solve.train.mix.plans import MixPlan, MixRow, mix_cost_usd
from optimizer.solve.train.prepare import PreparedJob, headroom_of, prepare_from_offerings
from optimizer.solve.train.search_space import effective_zero_stages
from optimizer.solve.train.spot import checkpoint_bytes, run_hours
from optimizer.units import SECONDS_PER_HOUR

__all__ = ["MixRow", "MixPlan", "MixOutcome", "plan_mix", "mix_cost_usd"]


@dataclass
class MixOutcome:
    """The mix worth showing (strictly cheaper than the best single-type plan, or the only
    plan), the best mix found, the best single-type cost, and why no mix is shown."""

    plan: MixPlan | None = None
    best: MixPlan | None = None
    single_cost_usd: float | None = None
    reasons: list[str] = field(default_factory=list)
    unused_held: list[str] = field(default_factory=list)  # held reservations the job may not use
    solver: dict[str, Any] = field(default_factory=dict)
    considered: int = 0  # pricing groups and type pairs searched or ruled out by the bound

    @property
    def saving_usd(self) -> float | None:
        if self.plan is None or self.single_cost_usd is None:
            return None
        return self.single_cost_usd - self.plan.cost_usd


def plan_mix(
    prep: PreparedJob,
    single: Candidate | None,
    rows: Sequence[OfferingRow] | None = None,
    config: SolverConfig | None = None,
    max_instances_per_type: int = MIX_MAX_INSTANCES,
) -> MixOutcome:
    """The cheapest mixed cluster of the job, against the best single-type plan `single`."""
    job = prep.job
    out = MixOutcome(single_cost_usd=None if single is None else single.cost_usd)
    data_of = {(o.provider, o.instance, o.region): o.data for o in prep.offerings}
    gpu_types = job.constraints.gpu_types
    allowed = frozenset(resolve_gpu_id(g) for g in gpu_types) if gpu_types else None
    held = held_offerings(rows, job.constraints.reserved_held, data_of, allowed, out.unused_held)
    groups, left_out = type_groups(prep.offerings, held)
    found: list[MixPlan] = []
    walls: list[float] = []
    bound = _bounds(prep)
    limit = float("inf") if single is None else single.cost_usd
    skipped: list[str] = []
    # with no single-type plan there is nothing to undercut: every mix is searched
    prune = math.isfinite(limit)
    for (g,) in pareto_useful([(g,) for g in groups]):
        if len(g.rows) >= 2 or any(r.held for r in g.rows):
            if prune and bound(g) >= limit:
                skipped.append(g.label)
                continue
            plan = _pricing_mix(prep, g, config, walls)
            if plan is not None:
                found.append(plan)
    pairs, reasons = _pairs([g for g in groups if _multi_node_ok(prep, g)])
    out.reasons += reasons
    for a, b in pareto_useful(pairs):
        if prune and min(bound(a), bound(b)) >= limit:
            skipped.append(f"{a.label} + {b.label}")
            continue
        why: list[str] = []
        plan = _type_mix(prep, a, b, config, walls, max_instances_per_type, why)
        if plan is not None:
            found.append(plan)
        else:
            out.reasons.append(
                f"{a.label} + {b.label} on {a.fabric}: {why[0] if why else 'no mix meets the job'}"
            )
    out.solver = {"models": len(walls), "wall_s": round(sum(walls), 4), "skipped": len(skipped)}
    out.considered = len(walls) + len(skipped)
    out.reasons += _not_searched(left_out, skipped, limit)
    if not found:
        return out
    best = min(found, key=lambda p: (p.cost_usd, p.hours, p.gpus))
    out.best = best
    if single is None or to_cents(best.cost_usd) < to_cents(single.cost_usd):
        out.plan = best
    else:
        out.reasons.append(not_worth_it(best, single))
    return out


def _not_searched(left_out: Sequence[str], skipped: Sequence[str], limit_usd: float) -> list[str]:
    """What no mix was searched for: offerings that are not mixed, and mixes the bound ruled
    out against the plan's cost `limit_usd`."""
    reasons = []
    if left_out:
        reasons.append(
            f"{len(left_out)} offering(s) not mixed: a full reserved term is one plan's own "
            "commitment, a box charged capital per job is not priced by the hour "
            f"({'; '.join(left_out[:2])}{'; …' if len(left_out) > 2 else ''})"
        )
    if skipped:
        reasons.append(
            f"{len(skipped)} mix(es) cannot undercut the plan: at its cheapest row and its least "
            f"instance-hours, each type alone already costs at least the plan's "
            f"${limit_usd:,.2f} ({', '.join(skipped[:3])}{', …' if len(skipped) > 3 else ''})"
        )
    return reasons


def not_worth_it(mix: MixPlan, single: Candidate) -> str:
    """Why the best mix is not shown: its cost against the plan's, and its balance loss."""
    what = " + ".join(f"{r.count}× {r.offering.instance} {r.offering.pricing}" for r in mix.rows)
    idle = max(mix.idle_share.values(), default=0.0)
    loss = f"; its faster GPUs wait {idle:.0%} of each step for the slower ones" if idle > 0.005 else ""
    return (
        f"best mix ({what}) costs ${mix.cost_usd:,.2f}, not less than the plan's "
        f"${single.cost_usd:,.2f}{loss}"
    )


def _pairs(groups: Sequence[TypeGroup]) -> tuple[list[tuple[TypeGroup, TypeGroup]], list[str]]:
    """Pairs of types a GPU-type mix is planned for: two GPU types on one fabric, at least one
    capped (availability, held count or owned boxes: where a cap binds a mix can pay). Capped
    types with a partner only elsewhere are named: no data-parallel job spans two fabrics.
    Groups are met per fabric, so the work grows with the pairs found, not with all pairs."""
    base = [g for g in groups if _plain_cap(g) != -1]
    by_fabric: dict[str, list[TypeGroup]] = {}
    for g in base:
        by_fabric.setdefault(g.fabric, []).append(g)
    pairs: list[tuple[TypeGroup, TypeGroup]] = []
    for members in by_fabric.values():
        capped = [n for n, g in enumerate(members) if _plain_cap(g) is not None]
        if not capped:
            continue
        for n, a in enumerate(members[: capped[-1] + 1]):
            for b in members[n + 1 :] if _plain_cap(a) is not None else [members[k] for k in capped if k > n]:
                if a.first.gpu_id != b.first.gpu_id:
                    pairs.append((a, b))
    order = {id(g): n for n, g in enumerate(base)}
    pairs.sort(key=lambda p: (order[id(p[0])], order[id(p[1])]))
    gpus = {g.first.gpu_id for g in base}
    fabric_gpus: dict[str, set[str]] = {}
    for g in base:
        fabric_gpus.setdefault(g.fabric, set()).add(g.first.gpu_id)
    reasons = [
        f"{g.label} is capped at {_plain_cap(g)} instance(s) but no other GPU type shares its fabric "
        f"({g.fabric}): a data-parallel job across providers or regions would all-reduce "
        "over the internet, so no GPU-type mix is planned"
        for g in base
        if _plain_cap(g) is not None
        and gpus - {g.first.gpu_id}
        and not fabric_gpus[g.fabric] - {g.first.gpu_id}
    ]
    return pairs, reasons


def _bounds(prep: PreparedJob) -> Callable[[TypeGroup], float]:
    """A search rule (stated, and checked against brute force in tests): the least a group's
    work can cost — its least instance-hours (computing + start-up; failures only add) in the
    deadline-free candidate table (any count,
    any row of its hardware class) at its cheapest row's rate. A mix whose types all cost at
    least the plan this way is not searched (mixing adds balance loss and a slower link; it
    does not make a type's work cheaper). A group the table has no row of: never searched when
    no row of it is capped below the group's total (nothing fits or runs it at any count the
    table tried), else always (0: more instances together than one row may give)."""
    least: dict[tuple[str, float, int, float], float] = {}
    built: list[bool] = []

    # every run starts up once (model/goodput.py): a mix's hours are at least work + start-up
    startup_h = (prep.assumptions.provisioning_s + prep.assumptions.startup_s) / SECONDS_PER_HOUR

    def build() -> None:  # on first use: most jobs have nothing to mix and never build it
        for c in prep.deadline_free().candidates:
            k = c.offering.hardware_class
            work_h = c.steps * c.step.time_s * c.band_factor / SECONDS_PER_HOUR
            inst_h = (work_h + startup_h) * c.instances
            least[k] = min(least.get(k, inst_h), inst_h)
        built.append(True)

    def bound(g: TypeGroup) -> float:
        if not built:
            build()
        inst_h = least.get(g.first.hardware_class)
        if inst_h is None:
            capped = g.cap is not None and g.cap > max(r.cap for r in g.rows)
            return 0.0 if capped else float("inf")
        return inst_h * min(hourly_usd(r.offering) for r in g.rows)

    return bound


def _multi_node_ok(prep: PreparedJob, g: TypeGroup) -> bool:
    """A GPU-type mix is multi-node: its types must run the job's precision, pass the host
    checks, and have a cluster network the job trusts (as enumerate.py rules for one type)."""
    c, off = prep.job.constraints, g.first
    if not off.gpu.supports(prep.job.workload.precision):
        return False
    if offering_rejection(off, host_rule_of(prep.job.data, prep.assumptions), prep.assumptions) is not None:
        return False
    if off.inter_node_kind == "internet" and not c.allow_internet_multi_node:
        return False
    return c.trust_guessed_network or not off.inter_node_is_default


def _plain_cap(g: TypeGroup) -> int | None:
    """Instances of `g` a GPU-type mix may take (non-spot rows; None: no cap; -1: no row)."""
    caps = [r.cap for r in g.rows if r.offering.pricing != "spot"]
    if not caps:
        return -1
    return None if any(k <= 0 for k in caps) else sum(caps)


def _sizes(prep: PreparedJob, g: TypeGroup) -> list[Candidate]:
    """The group's instance counts up to all its rows together can give (none: the search
    limit), each with its fastest layout: the type enumerated as the planner enumerates any
    offering (enumerate.py, no deadline pruning), its cap lifted from one row's to the group's."""
    base = next(r.offering for r in g.rows if r.offering.pricing != "spot")
    whole = replace(base, max_instances=g.cap, key=f"mix:{base.key}")
    table = prepare_from_offerings(prep.job, prep.model, [whole], prep.assumptions, prune=False).table
    return sorted(table.candidates, key=lambda c: c.instances)


def _pricing_mix(
    prep: PreparedJob, g: TypeGroup, config: SolverConfig | None, walls: list[float]
) -> MixPlan | None:
    """The cheapest split of one instance type over its pricing rows (spot: its count sets the
    interruption overhead of the whole job, solve/train/spot.py)."""
    plain = [r for r in g.rows if r.offering.pricing != "spot"]
    spots = [r for r in g.rows if r.offering.pricing == "spot"]
    sizes = _sizes(prep, g) if plain else []
    if not sizes:
        return None
    spot = spots[0] if spots else None
    setup = prep.job.workload.setup()
    configs: list[tuple[Candidate, int, float, Preemption | None]] = []
    ckpt = {id(c): checkpoint_bytes(prep.model, c.setup or setup, prep.assumptions) for c in sizes}
    for c in sizes:
        work_h = c.steps * c.step.time_s * c.band_factor / SECONDS_PER_HOUR
        top = 0 if spot is None else min(c.instances, spot.cap or c.instances)
        for s in range(top + 1):
            hours, p, _ = run_hours(
                c.offering,
                c.instances,
                work_h,
                prep.model,
                c.setup or setup,
                prep.assumptions,
                None if spot is None or s == 0 else (spot.offering, s),
                ckpt[id(c)],
            )
            configs.append((c, s, hours, p))
    d = MixData(
        [(c.instances,) for c, *_ in configs],
        [s for _, s, _, _ in configs],
        [h for _, _, h, _ in configs],
        [g.first.data.usd(h) for _, _, h, _ in configs],
        [[hourly_usd(r.offering) for r in plain]],
        [[r.cap for r in plain]],
        0.0 if spot is None else hourly_usd(spot.offering),
        [[r.held for r in plain]],
    )
    choice = solve_mix(d, prep.deadline_h, prep.budget_usd, config)
    walls.append(0.0 if choice is None else choice.result.wall_s)
    if choice is None:
        return None
    c, s, hours, est = configs[choice.config]
    rows = [
        MixRow(r.offering, n, c.layout, c.step, r.held)
        for r, n in zip(plain, choice.counts[0], strict=True)
        if n > 0
    ]
    if s and spot is not None:
        rows.append(MixRow(spot.offering, s, c.layout, c.step))
    return MixPlan(
        "pricing",
        tuple(rows),
        c.step.time_s,
        c.steps,
        hours,
        mix_cost_usd(rows, hours),
        c.layout.global_batch,
        g.fabric,
        c.confidence,
        c.band_factor,
        est,
    )


Split = tuple[float, tuple[tuple[Layout, StepTime], tuple[Layout, StepTime]]]


def balanced_split(
    prep: PreparedJob, types: tuple[TypeGroup, TypeGroup], counts: tuple[int, int], memo: dict[tuple, Any]
) -> Split | None:
    """The fastest split of the global batch over two types' GPUs (Σ_t GPUs_t × micro_t ×
    accum_t = global batch) at `counts` instances, over the ZeRO stages the stack runs: (step
    = max over types of its step time, ((layout, step) per type)), or None when none fits."""
    w, c = prep.job.workload, prep.job.constraints
    setup, batch = w.setup(), w.batch_sequences
    gpn = [t.first.gpus_per_instance for t in types]
    g0, g1 = counts[0] * gpn[0], counts[1] * gpn[1]
    slowest = min(t.first.inter_node_gbps for t in types)
    best: Split | None = None
    stack = setup_stack(setup)
    # the ZeRO stages and checkpointing levels the stack runs, as the single-type search keeps to
    checkpointing = stack_checkpointing(stack, c.activation_checkpointing)
    for z in effective_zero_stages(c.zero_stages, stack):
        shape = MixShape(z, g0 + g1, sum(counts), slowest, checkpointing, headroom_of(c, prep.assumptions))
        for s0 in range(1, (batch - g1) // g0 + 1):
            rest = batch - g0 * s0
            if rest <= 0 or rest % g1:
                continue
            e0 = fastest_at(prep.model, setup, types[0].first, shape, s0, prep.assumptions, memo)
            e1 = (
                None
                if e0 is None
                else fastest_at(prep.model, setup, types[1].first, shape, rest // g1, prep.assumptions, memo)
            )
            if e0 is None or e1 is None:
                continue
            step = max(e0[1].time_s, e1[1].time_s)
            if best is None or step < best[0]:
                best = (step, (e0, e1))
    return best


#: instance counts of the two types with the balanced split at them
TypeConfig = tuple[tuple[int, int], Split]


def _type_mix(
    prep: PreparedJob,
    a: TypeGroup,
    b: TypeGroup,
    config: SolverConfig | None,
    walls: list[float],
    limit: int,
    why: list[str] | None = None,
) -> MixPlan | None:
    """The cheapest data-parallel mix of types a and b: per instance-count pair the balanced
    split (pure data parallelism, per-type micro-batch × accumulation, one ZeRO stage for all
    ranks), then CP-SAT picks the pair and the pricing rows. When there is none, `why` gets
    the reason (nothing fits with pure data parallelism; the fastest mix's hours; the budget)."""
    why = [] if why is None else why
    w, c = prep.job.workload, prep.job.constraints
    setup, batch = w.setup(), w.batch_sequences
    types = (a, b)
    plain = [[r for r in t.rows if r.offering.pricing != "spot"] for t in types]
    caps = [_plain_cap(t) for t in types]
    configs = _type_configs(prep, types, _count_tops(prep, types, caps, limit))
    if not configs:
        why.append(
            f"no split of the global batch {batch} fits both types' memory with pure data "
            "parallelism (tensor and pipeline parallelism are not mixed)"
        )
        return None
    factors = [
        mix_band_factor(
            [(t.first.gpu, e[1]) for t, e in zip(types, sp[1], strict=True)],
            setup,
            prep.assumptions,
            c.confidence,
        )
        for _, sp in configs
    ]
    hours = mix_hours(prep, types, [n for n, _ in configs], factors, [sp[0] for _, sp in configs])
    d = MixData(
        [n for n, _ in configs],
        [0] * len(configs),
        hours,
        [a.first.data.usd(h) for h in hours],
        [[hourly_usd(r.offering) for r in rows] for rows in plain],
        [[r.cap for r in rows] for rows in plain],
    )
    choice = solve_mix(d, prep.deadline_h, prep.budget_usd, config)
    walls.append(0.0 if choice is None else choice.result.wall_s)
    if choice is None:
        why.append(_no_type_mix(prep, types, caps, limit, configs, hours))
        return None
    at = choice.config
    steps = w.steps_for_batch(batch)
    return _type_mix_plan(prep, types, plain, configs[at][1], choice.counts, steps, hours[at], factors[at])


def _type_mix_plan(
    prep: PreparedJob,
    types: tuple[TypeGroup, TypeGroup],
    plain: Sequence[Sequence[PriceRow]],
    split: Split,
    counts: Sequence[Sequence[int]],
    steps: int,
    hours: float,
    band_factor: float,
) -> MixPlan:
    """The chosen mix: instances per pricing row of each type (`counts`, CP-SAT's) at the
    split's layouts, and the share of each step each type's GPUs wait for the slowest."""
    step_s, per_type = split
    mix_rows = [
        MixRow(r.offering, n, per_type[i][0], per_type[i][1], r.held)
        for i in (0, 1)
        for r, n in zip(plain[i], counts[i], strict=True)
        if n > 0
    ]
    idle = {t.first.gpu_id: 1.0 - per_type[i][1].time_s / step_s for i, t in enumerate(types)}
    return MixPlan(
        "gpu_types",
        tuple(mix_rows),
        step_s,
        steps,
        hours,
        mix_cost_usd(mix_rows, hours),
        prep.job.workload.batch_sequences,
        types[0].fabric,
        prep.job.constraints.confidence,
        band_factor,
        None,
        idle,
    )


def _count_tops(
    prep: PreparedJob, types: tuple[TypeGroup, TypeGroup], caps: Sequence[int | None], limit: int
) -> list[int]:
    """The most instances of each type a mix may take: a capped type up to its cap, an
    uncapped one up to the search limit; neither past the job's max_instances nor past one GPU
    per sequence of the global batch."""
    c, batch = prep.job.constraints, prep.job.workload.batch_sequences
    return [
        min(
            limit if cap is None else cap, c.max_instances or cap or limit, batch // t.first.gpus_per_instance
        )
        for t, cap in zip(types, caps, strict=True)
    ]


def _type_configs(
    prep: PreparedJob, types: tuple[TypeGroup, TypeGroup], top: Sequence[int]
) -> list[TypeConfig]:
    """Every instance-count pair within `top` the job's limits allow, with its balanced split
    (pairs no split fits are left out)."""
    c, batch = prep.job.constraints, prep.job.workload.batch_sequences
    a, b = types
    memo: dict[tuple, Any] = {}
    configs: list[TypeConfig] = []
    for na in range(1, top[0] + 1):
        for nb in range(1, top[1] + 1):
            gpus = na * a.first.gpus_per_instance + nb * b.first.gpus_per_instance
            if (
                gpus > batch
                or na + nb < c.min_instances
                or (c.max_gpus and gpus > c.max_gpus)
                or (c.max_instances and na + nb > c.max_instances)
            ):
                continue
            split = balanced_split(prep, types, (na, nb), memo)
            if split is not None:
                configs.append(((na, nb), split))
    return configs


def _no_type_mix(
    prep: PreparedJob,
    types: tuple[TypeGroup, TypeGroup],
    caps: Sequence[int | None],
    limit: int,
    configs: Sequence[TypeConfig],
    hours: Sequence[float],
) -> str:
    """Why CP-SAT found no mix of the two types: the fastest one misses the deadline (and how
    far the uncapped types were searched), else the budget."""
    fastest = min(range(len(hours)), key=hours.__getitem__)
    (na, nb), _ = configs[fastest]
    if prep.deadline_h is None or hours[fastest] <= prep.deadline_h:
        return "no mix within the caps meets the budget"
    uncapped = [t.label for t, cap in zip(types, caps, strict=True) if cap is None]
    searched = f" (searched up to {limit} instances of {', '.join(uncapped)}, uncapped)" if uncapped else ""
    return (
        f"the fastest mix ({na} + {nb} instances, pure data parallelism) needs "
        f"{hours[fastest]:,.1f} h, past the {prep.deadline_h:,.1f} h deadline{searched}"
    )
