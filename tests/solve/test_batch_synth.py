"""Synthetic batches (hand-made Offerings and Candidates) and a brute-force batch solver.

Imported by the other test_batch_* modules; its own tests check the helpers, the time grid,
row pruning and that validate_batch catches broken plans.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from optimizer.errors import Status
from optimizer.inputs.gpus import load_gpus
from optimizer.model.memory import MemoryBreakdown
from optimizer.model.setup import Layout
from optimizer.model.step_time import StepTime
from optimizer.pricing.offering import Offering, cost_usd
from optimizer.solve.batch.grid import TimeGrid, choose_time_grid
from optimizer.solve.batch.problem import BatchProblem, BatchResult, JobSpec, Resource, ScheduledJob
from optimizer.solve.batch.validate import validate_batch
from optimizer.solve.cpsat.scale import to_cents
from optimizer.solve.train.enumerate import Candidate

H100 = load_gpus()["H100-80GB"]
RTX4090 = load_gpus()["RTX4090"]


def offering(
    key: str,
    kind: str = "cloud",
    provider: str = "p",
    gpus: int = 8,
    gpu=H100,
    usd_per_hour: float = 1.0,
    max_instances: int | None = None,
) -> Offering:
    """An offering with only the fields the batch planner reads."""
    return Offering(
        key=key,
        kind=kind,
        provider=provider,
        instance=f"{key}-inst",
        region="r",
        pricing={"cloud": "on_demand", "owned": "owned", "reserved": "reserved_1y"}[kind],
        gpu=gpu,
        gpus_per_instance=gpus,
        inter_node_gbps=100.0,
        usd_per_hour=usd_per_hour,
        max_instances=max_instances,
    )


def candidate(off: Offering, instances: int, hours: float, usd: float) -> Candidate:
    """A candidate row costing `usd` for `hours`, with a placeholder layout, memory and step.

    The offering is repriced (same key) so that `cost_usd(offering, instances, hours)` is `usd`:
    the batch planner prices every row with the one cost function and validate_batch checks it.
    """
    step = StepTime(
        time_s=1.0,
        compute_s=1.0,
        communication_s=0.0,
        bubble_s=0.0,
        tokens_per_s=1.0,
        tokens_per_s_per_gpu=1.0,
        mfu=0.5,
        hfu=0.5,
        efficiency=0.5,
        calibrated=False,
    )
    priced = replace(off, usd_per_hour=usd / (instances * hours))
    return Candidate(
        priced,
        instances,
        Layout(dp=instances * off.gpus_per_instance),
        MemoryBreakdown(1, 1, 1, 1, 0, 1),
        step,
        steps=1,
        hours=hours,
        cost_usd=cost_usd(priced, instances, hours).total_usd,
    )


def owned_resource(off: Offering, boxes: int, key: str = "owned#0") -> Resource:
    return Resource(key, "owned", f"owned {off.key}", boxes, "boxes", offering_key=off.key)


def quota_resource(provider: str, max_gpus: int, gpu_id: str = "H100-80GB", key: str = "quota#0") -> Resource:
    return Resource(
        key, "quota", f"quota {provider} {gpu_id}", max_gpus, "GPUs", provider=provider, gpu_id=gpu_id
    )


def reservation_resource(
    off: Offering, max_instances: int, commitment_usd: float, key: str = "reservation#0"
) -> Resource:
    """A reservation whose commitment is `commitment_usd` per reserved instance (priced by
    cost_usd of a one-hour term at that rate)."""
    term = replace(off, usd_per_hour=commitment_usd, commitment_hours=1.0)
    return Resource(
        key,
        "reservation",
        f"reserved {off.key}",
        max_instances,
        "instances",
        offering_key=off.key,
        commitment=term,
        commitment_h=1.0,
    )


def block_resource(
    off: Offering, instances: int, commitment_usd: float, window_h: tuple[float, float], key: str = "block#0"
) -> Resource:
    """A capacity block: a reservation (`commitment_usd` per instance bought) that jobs may
    use only inside `window_h`."""
    return replace(
        reservation_resource(off, instances, commitment_usd, key), label=f"block {off.key}", window_h=window_h
    )


def brute_force(
    specs: Sequence[JobSpec],
    resources: Sequence[Resource],
    horizon_h: float,
    grid: TimeGrid,
    min_reserved: Mapping[str, int] | None = None,
) -> int | None:
    """Optimal objective in cents over every assignment and grid start (None: infeasible).

    Independent of the CP-SAT model and of its row pruning: every candidate of every job, or
    dropping a droppable job; a row on the grid occupies [s, s + ceil(hours / unit)) and must
    lie within [ceil(release), floor(min(deadline, horizon))]; at every step the demands on
    each resource stay within capacity; a row on a capacity block lies inside the block's
    hours; a reservation or block costs (its peak use) × commitment,
    which must not exceed its maximum (R = peak is the cheapest R that fits). `min_reserved`:
    only plans reserving at least that many of a reservation (R = max(peak, that)).
    """
    horizon = grid.down(horizon_h)
    res = list(resources)
    choices = []
    for s in specs:
        opts: list[tuple[int, Candidate | None]] = [
            (to_cents(c.cost_usd), c)
            for c in s.candidates
            if s.budget_usd is None or c.cost_usd <= s.budget_usd
        ]
        if s.penalty_usd is not None:
            opts.append((to_cents(s.penalty_usd), None))
        choices.append(opts)
    best: int | None = None
    for combo in sorted(itertools.product(*choices), key=lambda cb: sum(c for c, _ in cb)):
        base = sum(c for c, _ in combo)
        if best is not None and base >= best:
            break  # sorted by base cost; reservations only add
        windows = []
        for s, (_, c) in zip(specs, combo, strict=True):
            if c is None:
                windows.append(None)
                continue
            d = max(1, math.ceil(round(c.hours / grid.unit_h, 6)))
            lo = math.ceil(round(s.release_h / grid.unit_h, 6))
            limit = (
                horizon
                if s.deadline_h is None
                else min(horizon, math.floor(round(s.deadline_h / grid.unit_h, 6)))
            )
            for r in res:  # a capacity block: the row runs inside the block's hours
                if r.window_h is not None and r.demand(c.offering, c.instances):
                    lo = max(lo, math.ceil(round(r.window_h[0] / grid.unit_h, 6)))
                    limit = min(limit, math.floor(round(r.window_h[1] / grid.unit_h, 6)))
            windows.append((c, d, range(lo, limit - d + 1)))
        ranges = [w[2] if w else [None] for w in windows]
        for starts in itertools.product(*ranges):
            use = {r.key: [0] * max(horizon, 1) for r in res}
            ok = True
            for w, t in zip(windows, starts, strict=True):
                if w is None:
                    continue
                c, d, _ = w
                for r in res:
                    demand = r.demand(c.offering, c.instances)
                    if not demand:
                        continue
                    for k in range(t, t + d):
                        use[r.key][k] += demand
                        if r.kind != "reservation" and use[r.key][k] > r.capacity:
                            ok = False
            if not ok:
                continue
            extra = 0
            for r in res:
                if r.kind == "reservation":
                    peak = max(max(use[r.key]), (min_reserved or {}).get(r.key, 0))
                    if peak > r.capacity:
                        ok = False
                    extra += peak * r.commitment_cents
            if ok and (best is None or base + extra < best):
                best = base + extra
    return best


# ---- tests of the helpers and the small pieces -------------------------------------------


def test_time_grid_choice_and_rounding() -> None:
    assert choose_time_grid(14 * 24).unit_h == 0.25  # 1344 steps of 15 min
    assert choose_time_grid(30 * 24).unit_h == 0.5  # 1440 steps of 30 min
    assert choose_time_grid(10).unit_h == 1 / 60
    g = TimeGrid(0.5)
    assert (g.up(1.01), g.up(1.0), g.down(1.49), g.down(1.5)) == (3, 2, 2, 3)


def test_dominated_rows_are_pruned_per_resource() -> None:
    box = offering("box", "owned", "owned", gpu=RTX4090, usd_per_hour=0.6)
    cloud = offering("c", provider="free")
    specs = [
        JobSpec(
            "a",
            [
                candidate(box, 1, 4, 2.4),
                candidate(box, 1, 5, 3.0),  # dominated
                candidate(box, 2, 2, 2.4),  # faster, same cost, more boxes: kept
                candidate(cloud, 1, 1, 9),
                candidate(cloud, 1, 2, 10),
            ],
        )
    ]  # dominated
    p = BatchProblem.build(specs, [owned_resource(box, 2)], 10, TimeGrid(1.0))
    kept = sorted((r.candidate.offering.key, r.candidate.instances, r.duration) for r in p.jobs[0].rows)
    assert kept == [("box", 1, 4), ("box", 2, 2), ("c", 1, 1)]


def test_validate_batch_catches_overlap_deadline_and_cost() -> None:
    box = offering("box", "owned", "owned", gpu=RTX4090)
    specs = [JobSpec("a", [candidate(box, 1, 3, 3)], deadline_h=4), JobSpec("b", [candidate(box, 1, 3, 3)])]
    p = BatchProblem.build(specs, [owned_resource(box, 1)], 8, TimeGrid(1.0))
    ja, jb = p.jobs
    good = BatchResult(
        Status.OPTIMAL, p, [ScheduledJob(ja, ja.rows[0], 0, 1.0), ScheduledJob(jb, jb.rows[0], 3, 1.0)]
    )
    assert validate_batch(good) == []
    overlap = BatchResult(
        Status.OPTIMAL, p, [ScheduledJob(ja, ja.rows[0], 0, 1.0), ScheduledJob(jb, jb.rows[0], 2, 1.0)]
    )
    assert any("in use" in e for e in validate_batch(overlap))
    late = BatchResult(
        Status.OPTIMAL, p, [ScheduledJob(ja, ja.rows[0], 3, 1.0), ScheduledJob(jb, jb.rows[0], 0, 1.0)]
    )
    assert any("after its limit" in e for e in validate_batch(late))
    missing = BatchResult(
        Status.OPTIMAL, p, [ScheduledJob(ja, ja.rows[0], 0, 1.0), ScheduledJob(jb, None, None, 1.0)]
    )
    assert any("required job left out" in e for e in validate_batch(missing))


def test_brute_force_helper_on_a_hand_case() -> None:
    # one box; a (3 h, $3) and b (3 h, $3) fit one after the other in 6 h: $6.
    box = offering("box", "owned", "owned", gpu=RTX4090)
    specs = [JobSpec("a", [candidate(box, 1, 3, 3)]), JobSpec("b", [candidate(box, 1, 3, 3)])]
    assert brute_force(specs, [owned_resource(box, 1)], 6, TimeGrid(1.0)) == 600
    assert brute_force(specs, [owned_resource(box, 1)], 5, TimeGrid(1.0)) is None
