"""Candidate table: every (offering, instance count) with its fastest layout that fits memory.

For a fixed offering and instance count the cost is price × instances × hours (or a fixed
commitment), so among layouts only the fastest one can be optimal: that is the dominance rule
that keeps the table small. Checkpointing is tried from none to full and the first that fits
is kept (more recompute never speeds a step); every rejected hardware class keeps a reason.

The enumeration runs in named steps over a small context (`Enumeration`, solve/train/scan.py):
order the offerings (`_search_order`), reject the unusable ones (`_unusable`), scan each one's
instance counts (scan.scan_offering: `_fastest_at`, `_add_row`, and why a class gave no row).
The step model of each GPU type (optimizer/model/step_model.py) and the memory model of the
job (optimizer/model/memory.py) are built once and asked per layout.
"""

from __future__ import annotations

from collections.abc import Sequence

from optimizer.model.bands import Band
from optimizer.model.memory import memory_model_for
from optimizer.model.setup import PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import setup_stack
from optimizer.model.step_model import StepModel
from optimizer.pricing.offering import Offering, cost_usd
from optimizer.solve.train.candidate import Candidate, CandidateTable
from optimizer.solve.train.host_check import offering_rejection
from optimizer.solve.train.scan import (
    MAX_GPUS_DEFAULT,
    BestLayout,
    CostCeiling,
    Enumeration,
    EnumerationMemo,
    PerfKey,
    SearchRules,
    class_label,
    row_factor,
    scan_offering,
    time_lower_bound_h,
)
from optimizer.solve.train.search_space import (
    NO_HEADROOM,
    BatchRule,
    Headroom,
    instance_counts,
    layouts_for,
)

__all__ = [
    "Offering",
    "Candidate",
    "CandidateTable",
    "EnumerationMemo",
    "SearchRules",
    "CostCeiling",
    "Enumeration",
    "time_lower_bound_h",
    "cost_floor_usd",
    "BatchRule",
    "Headroom",
    "NO_HEADROOM",
    "instance_counts",
    "layouts_for",
    "enumerate_candidates",
    "MAX_GPUS_DEFAULT",
    "class_label",
    "prune_dominated",
]


def cost_floor_usd(
    step_model: StepModel,
    setup: TrainingSetup,
    tokens: float,
    off: Offering,
    instances: int,
    time_factor: float,
) -> float:
    """Dollars no count ≥ `instances` of `off` can undercut: its hours are at least the time
    lower bound (time_lower_bound_h at the step model's efficiency_ceiling, × `time_factor`, a
    band multiplier no row of `off` gets less than), which scales as 1 / count, so the running
    cost (rate × count × hours) is the same at every count, the capital charge (count ×
    max(fixed, hourly × hours)) and a reserved term grow with the count, and the data charge is
    at least its zero-hour transfer."""
    gpus = instances * off.gpus_per_instance
    eff = step_model.efficiency_ceiling  # tighter than the deadline prune's base efficiency
    hours = time_lower_bound_h(step_model, tokens, off.gpu, gpus, setup.precision, eff) * time_factor
    cost = cost_usd(off, instances, hours)
    return cost.running_usd + cost.capital_usd + off.data.usd(0.0)


def _floor_of(
    step_model: StepModel,
    setup: TrainingSetup,
    tokens: float,
    off: Offering,
    instances: int,
    confidence: float | None,
    band: Band,
) -> float | None:
    """cost_floor_usd of an offering, or None where no floor is claimed: a per-sample profile
    or a calibrated GPU type has a band of its own, which the GPU's band does not bound.
    `band`: the GPU's band (bands.band_for; Enumeration.gpu_band looks it up once).

    The multiplier is the one every row of the offering gets (scan.row_factor: its GPU's band
    at `confidence`, as scan._add_row reads it), not the smallest any reading of a row can get
    (scan.time_factor, at most the P50, which the deadline's prune needs): a ceiling's search
    compares rows at the job's confidence only (CostCeiling)."""
    if step_model.own_band or not off.gpu.supports(setup.precision):
        return None
    return cost_floor_usd(step_model, setup, tokens, off, instances, row_factor(band, confidence))


def enumerate_candidates(
    model: ModelSpec,
    setup: TrainingSetup,
    rules: SearchRules,
    offerings: Sequence[Offering],
    assumptions: PerfAssumptions | None = None,
    memo: EnumerationMemo | None = None,
    ceiling: CostCeiling | None = None,
) -> CandidateTable:
    """Build the candidate table for one job over `offerings` under `rules` (SearchRules).

    `memo` (EnumerationMemo) carries the deadline-free evaluations from an earlier call with the
    same arguments except `prune_hours` and `slack_stop`; the table is the same without it.
    With `ceiling` (CostCeiling), offerings are searched in the order of their cost floor
    (cost_floor_usd) and skipped once the floor is above the ceiling: the table then holds the
    cheapest qualifying row (the deadline-binding check asks only for it), not every row.
    """
    a = assumptions or PerfAssumptions()
    ctx = Enumeration(
        model,
        setup,
        a,
        rules,
        memory_model_for(model, setup, a),
        EnumerationMemo() if memo is None else memo,
        setup_stack(setup),
    )
    table = CandidateTable([])
    perf_cache: dict[PerfKey, BestLayout | None] = {}  # per call (module constant PerfKey)
    order, floors = _search_order(ctx, offerings, ceiling)
    for position, off in order:
        if ceiling is not None and floors.get(position, 0.0) > ceiling.usd:
            continue
        if not _unusable(ctx, off, table):
            scan_offering(ctx, position, off, table, perf_cache, ceiling)
    table.candidates = prune_dominated(table.candidates)
    return table


def _search_order(
    ctx: Enumeration, offerings: Sequence[Offering], ceiling: CostCeiling | None
) -> tuple[list[tuple[int, Offering]], dict[int, float]]:
    """The offerings with their positions, cheapest cost floor first under a ceiling (else in
    their order), and the floors."""
    order = list(enumerate(offerings))
    if ceiling is None:
        return order, {}
    rules = ctx.rules
    floors = {
        position: floor
        for position, off in order
        if (
            floor := _floor_of(
                ctx.step_model(off.gpu),
                ctx.setup,
                rules.tokens_lower_bound,
                off,
                rules.min_instances,
                rules.confidence,
                ctx.gpu_band(off.gpu),
            )
        )
        is not None
    }
    order.sort(key=lambda item: floors.get(item[0], 0.0))
    return order, floors


def _unusable(ctx: Enumeration, off: Offering, table: CandidateTable) -> bool:
    """Whether `off` cannot run the job at all (no tensor cores of its precision, or no room on
    the host for the data); the reason goes to `table.rejected`."""
    if not off.gpu.supports(ctx.setup.precision):
        table.rejected[class_label(off)] = f"{off.gpu.gpu_id} has no {ctx.setup.precision} tensor cores"
        return True
    host_why = offering_rejection(off, ctx.rules.host, ctx.a)
    if host_why is not None:
        table.rejected.setdefault(class_label(off), host_why)
        return True
    return False


def prune_dominated(candidates: Sequence[Candidate]) -> list[Candidate]:
    """Drop rows another row of the same (GPU, provider, pricing) beats on both cost and time
    (ties broken by fewer GPUs). Deadline and budget are upper bounds, so a dominated row is
    never the optimum, never the best alternative of its kind, nor on the Pareto front."""
    groups: dict[tuple[str, str, str], list[Candidate]] = {}
    for c in candidates:
        groups.setdefault((c.offering.gpu_id, c.offering.provider, c.offering.pricing), []).append(c)
    kept: list[Candidate] = []
    for rows in groups.values():
        rows.sort(key=lambda c: (c.cost_usd, c.hours, c.gpus))
        best_hours = float("inf")
        for c in rows:
            if c.hours < best_hours:
                kept.append(c)
                best_hours = c.hours
    return kept
