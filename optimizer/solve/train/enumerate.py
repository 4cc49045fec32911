"""Candidate table: every (offering, instance count) with its fastest layout that fits memory.

For a fixed offering and instance count the cost is price × instances × hours (or a fixed
commitment), so among layouts only the fastest one can be optimal: that is the dominance rule
that keeps the table small. Checkpointing is tried from none to full and the first that fits
is kept (more recompute never speeds a step); every rejected hardware class keeps a reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from optimizer.model.bands import Band, band_for, step_band
from optimizer.model.flops import model_flops_per_token
from optimizer.model.hardware import GpuSpec
from optimizer.model.memory import MemoryBreakdown
from optimizer.model.profile import is_profile
from optimizer.model.setup import CHECKPOINTING, Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import get_stack
from optimizer.model.step_time import (
    Cluster,
    StepTime,
    compute_efficiency,
    microbatch_times_s,
    training_step_time,
)
from optimizer.pricing.offering import Offering, cost_usd
from optimizer.pricing.terms import fits_term
from optimizer.solve.train.candidate import Candidate, CandidateTable
from optimizer.solve.train.fitting import FitList, LayoutRow, fitting_layouts
from optimizer.solve.train.host_check import (
    NO_HOST_RULE,
    HostRule,
    check_host,
    host_need_gib,
    loader_words,
    offering_rejection,
)
from optimizer.solve.train.search_space import (
    NO_HEADROOM,
    BatchRule,
    Headroom,
    instance_counts,
    layouts_for,
)
from optimizer.solve.train.spot import spot_hours
from optimizer.units import HOURS_PER_DAY

__all__ = [
    "Offering",
    "Candidate",
    "CandidateTable",
    "EnumerationMemo",
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

MAX_GPUS_DEFAULT = 4096  # search cap on GPUs in one job unless the job sets max_gpus
#: a larger instance count must win ≥ 4% of its ideal speed-up (n_prev/n) to keep scaling up
#: (doubling the count: ≥ 2% faster); two such stalls in a row end the scan of a class
SATURATION_SHARE = 0.04
BestLayout = tuple[Layout, MemoryBreakdown, StepTime]
SCALING_CUTOFF = 2.0  # stop scaling out past 2× the least GPU-hours of a hardware class


@dataclass
class EnumerationMemo:
    """What enumerating one search variant over one list of offerings computed that does not
    depend on the deadline: the memory of each layout, the fitting layouts per GPU count, the
    micro-batch times per hardware class, and the fastest layout of each (offering position,
    instance count) with the host-RAM needs it checked. A second enumeration of the same job,
    variant and offerings (the deadline-free table, solve/train/prepare.py) passes the same memo
    and evaluates only the counts the first one skipped; its scan (pruning, stops, rejection
    reasons) runs unchanged, so its table equals one enumerated from scratch."""

    memory: dict[tuple, tuple[float, MemoryBreakdown, Layout]] = field(default_factory=dict)
    microbatch: dict[tuple, dict[tuple, tuple[float, float, float, float]]] = field(default_factory=dict)
    fits: dict[tuple, tuple[FitList, tuple[float, Layout] | None]] = field(default_factory=dict)
    #: (offering position, *perf key) -> (fastest layout or None, host-RAM needs seen)
    best: dict[tuple, tuple[BestLayout | None, tuple[float, ...]]] = field(default_factory=dict)
    #: (GPUs, GPUs per node, ...) -> the layouts with their memory keys (fitting_layouts)
    rows: dict[tuple, list[LayoutRow]] = field(default_factory=dict)


def _best_layout(
    model: ModelSpec,
    setup: TrainingSetup,
    cluster: Cluster,
    fits: FitList,
    assumptions: PerfAssumptions,
    microbatch_cache: dict[tuple, tuple[float, float, float, float]],
    host_ram: Callable[[Layout, StepTime], float] | None = None,
    ram_gib: float | None = None,
    least_ram: list[float] | None = None,
) -> tuple[Layout, MemoryBreakdown, StepTime] | None:
    """Fastest of the fitting layouts on `cluster` (whose host RAM need, if `ram_gib` is
    known, fits the instance's RAM; the least need seen goes to `least_ram`).

    A layout whose (micro-batches + bubble) × micro-batch time — a lower bound of its step, the
    bubble being (pp − 1) / vp micro-batches (interleaved 1F1B, as in training_step_time) — is
    no better than the best step so far is skipped without the full step-time model.
    """
    best: tuple[Layout, MemoryBreakdown, StepTime] | None = None
    spans = cluster.gpus_per_node
    for layout, memory in fits:
        tp, pp, ga, vp = layout.tp, layout.pp, layout.grad_accum, layout.vp
        # micro-batch times do not depend on the instance count (unless the pipeline starts
        # to span nodes), so they are cached per hardware class
        mkey = (tp, pp, layout.micro_batch, layout.checkpointing, tp * pp > spans)
        micro = microbatch_cache.get(mkey)
        if micro is None:
            micro = microbatch_cache[mkey] = microbatch_times_s(model, setup, layout, cluster, assumptions)
        if best is not None and (ga + (pp - 1) / vp) * (micro[0] + micro[1] + micro[2]) >= best[2].time_s:
            continue
        step = training_step_time(model, setup, layout, cluster, assumptions, micro)
        if best is None or step.time_s < best[2].time_s:
            if host_ram is not None and ram_gib is not None:
                need = host_ram(layout, step)
                if least_ram is not None:
                    least_ram.append(need)
                if need > ram_gib:
                    continue
            best = (layout, memory, step)
    return best


def time_lower_bound_h(
    model: ModelSpec,
    setup: TrainingSetup,
    tokens: float,
    gpu: GpuSpec,
    gpus: int,
    assumptions: PerfAssumptions,
) -> float:
    """Hours no layout on `gpus` GPUs can beat: model FLOPs at base efficiency, no communication."""
    peak = gpu.peak_tflops(setup.precision) or 0.0
    eff = compute_efficiency(gpu, setup.precision, assumptions, stack=setup.stack)[0]
    return model_flops_per_token(model, setup) * tokens / (gpus * peak * 1e12 * eff) / 3600.0


def too_slow_for_deadline(
    model: ModelSpec,
    setup: TrainingSetup,
    tokens: float,
    gpu: GpuSpec,
    gpus: int,
    assumptions: PerfAssumptions,
    deadline_h: float | None,
) -> bool:
    """The deadline pruning rule: `gpus` GPUs cannot meet `deadline_h` even at full speed."""
    return (
        deadline_h is not None
        and time_lower_bound_h(model, setup, tokens, gpu, gpus, assumptions) > deadline_h
    )


@dataclass
class CostCeiling:
    """Only the cheapest row that is late (past `deadline_h`; any row without one) and within
    `budget_usd`, if it costs less than `usd`, is asked for: offerings are searched cheapest
    floor first, and once such a row is found its cost is the new ceiling."""

    usd: float
    deadline_h: float | None = None
    budget_usd: float | None = None

    def lower(self, cost_usd: float, hours: float) -> None:
        late = self.deadline_h is None or hours > self.deadline_h
        if late and (self.budget_usd is None or cost_usd <= self.budget_usd):
            self.usd = min(self.usd, cost_usd)


def cost_floor_usd(
    model: ModelSpec,
    setup: TrainingSetup,
    tokens: float,
    off: Offering,
    instances: int,
    assumptions: PerfAssumptions,
    time_factor: float,
) -> float:
    """Dollars no count ≥ `instances` of `off` can undercut: its hours are at least the time
    lower bound (time_lower_bound_h × `time_factor`, the smallest band multiplier a row can
    get), which scales as 1 / count, so the running cost (rate × count × hours) is the same at
    every count, the capital charge (count × max(fixed, hourly × hours)) and a reserved term
    grow with the count, and the data charge is at least its zero-hour transfer."""
    gpus = instances * off.gpus_per_instance
    hours = time_lower_bound_h(model, setup, tokens, off.gpu, gpus, assumptions) * time_factor
    cost = cost_usd(off, instances, hours)
    return cost.running_usd + cost.capital_usd + off.data.usd(0.0)


def _time_factor(band: Band, confidence: float | None) -> float:
    """The smallest multiplier a row's hours get from its GPU's band: a count is pruned for the
    deadline only if even its median-or-faster time misses it (the P50 plan shown beside a
    confident one comes from the same table)."""
    return min(band.p50, band.multiplier(confidence or 0.5), 1.0)


def _floor_of(
    model: ModelSpec,
    setup: TrainingSetup,
    tokens: float,
    off: Offering,
    instances: int,
    a: PerfAssumptions,
    confidence: float | None,
) -> float | None:
    """cost_floor_usd of an offering, or None where no floor is claimed: a per-sample profile
    or a calibrated GPU type has a band of its own, which the GPU's band does not bound."""
    if is_profile(model) or compute_efficiency(off.gpu, setup.precision, a, setup.stack)[1]:
        return None
    if not off.gpu.supports(setup.precision):
        return None
    band = band_for(off.gpu, setup.precision, setup.stack, a)
    return cost_floor_usd(model, setup, tokens, off, instances, a, _time_factor(band, confidence))


def enumerate_candidates(
    model: ModelSpec,
    setup: TrainingSetup,
    batch: BatchRule,
    steps_for_batch: Callable[[int], int],
    offerings: Sequence[Offering],
    *,
    zero_stages: Sequence[int] = (0, 1, 2, 3),
    checkpointing: Sequence[str] = CHECKPOINTING,
    min_instances: int = 1,
    max_instances: int | None = None,
    max_gpus: int | None = None,
    assumptions: PerfAssumptions | None = None,
    prune_hours: float | None = None,
    tokens_lower_bound: float = 0.0,
    slack_stop: bool = False,
    headroom: Headroom = NO_HEADROOM,
    virtual_stages: int = 1,
    allow_internet_multi_node: bool = False,
    host: HostRule = NO_HOST_RULE,
    memo: EnumerationMemo | None = None,
    confidence: float | None = None,
    ceiling: CostCeiling | None = None,
) -> CandidateTable:
    """Build the candidate table for one job over `offerings`.

    With `prune_hours` (the deadline), instance counts whose time lower bound (model FLOPs at
    base efficiency, no communication) exceeds it are skipped: they cannot meet the deadline.
    With `slack_stop` as well, a hardware class stops scaling out once a count finishes in a
    quarter of the deadline while already paying ≥ 10% more GPU-hours than its most efficient
    count (faster plans are then only needed for a Pareto front, which turns this off).
    `host` adds the host constraints (solve/train/host_check.py): offerings without room for
    the data are rejected, layouts must fit the host RAM, loader-bound candidates are slowed.
    `memo` (EnumerationMemo) carries the deadline-free evaluations from an earlier call with the
    same arguments except `prune_hours` and `slack_stop`; the table is the same without it.
    With `confidence` q, every row's hours and cost are those at the q quantile of its step-time
    band (optimizer/model/bands.py): the deadline and the budget are met at that confidence.
    With `ceiling` (CostCeiling), offerings are searched in the order of their cost floor
    (cost_floor_usd) and skipped once the floor is above the ceiling: the table then holds the
    cheapest qualifying row (the deadline-binding check asks only for it), not every row.
    """
    a = assumptions or PerfAssumptions()
    memo = EnumerationMemo() if memo is None else memo
    memory_cache, microbatch_caches, fit_cache = memo.memory, memo.microbatch, memo.fits
    table = CandidateTable([])
    # per call: offerings of one perf key share the first one's result (and its RAM needs); the
    # key is (gpu, intra-node bandwidth, GPUs per instance, inter-node Gb/s, instances, host RAM
    # GiB, vCPUs): the host figures are in it since the RAM and data-loader checks read them
    perf_cache: dict[tuple[str, float, int, float, int, float | None, float | None], BestLayout | None] = {}
    order = list(enumerate(offerings))
    floors: dict[int, float] = {}
    if ceiling is not None:
        floors = {
            position: floor
            for position, off in order
            if (floor := _floor_of(model, setup, tokens_lower_bound, off, min_instances, a, confidence))
            is not None
        }
        order.sort(key=lambda item: floors.get(item[0], 0.0))
    for position, off in order:
        if ceiling is not None and floors.get(position, 0.0) > ceiling.usd:
            continue
        gpu = off.gpu
        if not gpu.supports(setup.precision):
            table.rejected[class_label(off)] = f"{gpu.gpu_id} has no {setup.precision} tensor cores"
            continue
        host_why = offering_rejection(off, host, a)
        if host_why is not None:
            table.rejected.setdefault(class_label(off), host_why)
            continue
        least_ram: list[float] = []

        def ram_need(layout: Layout, step: StepTime, off: Offering = off) -> float:
            return host_need_gib(model, setup, layout, off, step, host, a)[0]

        gpu_band = band_for(gpu, setup.precision, setup.stack, a)
        time_factor = _time_factor(gpu_band, confidence)
        gpn = off.gpus_per_instance
        cap_gpus = max_gpus or MAX_GPUS_DEFAULT  # the user's max_gpus may search further
        high = min(cap_gpus // gpn, off.max_instances or 10**9, max_instances or 10**9)
        if off.inter_node_kind == "internet" and not allow_internet_multi_node:
            high = min(high, 1)  # hosts joined by the public internet: one host unless allowed
        found = pruned = False
        # the smallest memory of any layout at the counts tried on THIS offering (a rejection
        # reason must not depend on which offering of the catalog came first)
        smallest_here: tuple[float, Layout] | None = None
        usable = headroom.usable_gib(gpu.memory_gib)
        previous_time, stalls, least_gpu_hours = float("inf"), 0, float("inf")
        previous_n = 0
        met_deadline = prune_hours is None
        # a count is pruned only if even its median-or-faster time misses the deadline (the
        # P50 plan shown beside a confident one comes from this table too)
        prune_at = None if prune_hours is None else prune_hours / time_factor
        low = max(min_instances, off.terms.min_nodes)  # a cluster's smallest size (clusters.csv)
        for n in instance_counts(low, high, gpn, batch, model, get_stack(setup.stack)):
            # one instance never uses the inter-node network: share its result across NICs
            key = (
                gpu.gpu_id,
                gpu.intra_node_bw_gb_s,
                gpn,
                off.inter_node_gbps if n > 1 else 0.0,
                n,
                off.ram_gib,
                off.vcpus,
            )
            if too_slow_for_deadline(model, setup, tokens_lower_bound, gpu, n * gpn, a, prune_at):
                pruned = table.pruned_by_deadline = True
                continue
            fkey = (n * gpn, gpn, usable)
            if fkey not in fit_cache:
                fit_cache[fkey] = fitting_layouts(
                    model,
                    setup,
                    n * gpn,
                    gpn,
                    usable,
                    batch,
                    zero_stages,
                    checkpointing,
                    a,
                    memory_cache,
                    virtual_stages,
                    memo.rows,
                )
            fits, smallest = fit_cache[fkey]
            if smallest is not None and (smallest_here is None or smallest[0] < smallest_here[0]):
                smallest_here = smallest
            if key not in perf_cache:
                if (position, *key) not in memo.best:
                    needs: list[float] = []
                    found_best = _best_layout(
                        model,
                        setup,
                        off.cluster(n),
                        fits,
                        a,
                        microbatch_caches.setdefault(off.hardware_class, {}),
                        ram_need,
                        off.ram_gib,
                        needs,
                    )
                    memo.best[(position, *key)] = (found_best, tuple(needs))
                perf_cache[key], needs_seen = memo.best[(position, *key)]
                least_ram.extend(needs_seen)
            best = perf_cache[key]
            if best is None:
                continue
            layout, memory, gpu_step = best
            step, check = check_host(model, setup, layout, off, n, gpu_step, host, a)
            if check.slowdown > 1.0 + 1e-9 and class_label(off) not in table.slowed:
                table.slowed[class_label(off)] = (
                    f"slowed {check.slowdown:.2f}× to its loader rate: "
                    f"{loader_words(check, off, n, host.kind)}"
                )
            # search limits (stated, and checked against brute force in tests): stop scaling a
            # hardware class out when two larger counts in a row are < 2% faster, or when its
            # GPU-hours exceed SCALING_CUTOFF × the least GPU-hours seen on that class (below
            # 50% scaling efficiency a plan costs over twice the same hardware's cheapest)
            ideal = previous_n / n if previous_n else 0.0
            stalls = stalls + 1 if step.time_s > previous_time * (1 - SATURATION_SHARE * (1 - ideal)) else 0
            previous_time, previous_n = min(previous_time, step.time_s), n
            gpu_hours = n * gpn * step.time_s
            least_gpu_hours = min(least_gpu_hours, gpu_hours)
            # the cutoff only once a smaller count meets the deadline: until then a costlier,
            # faster count may be the only feasible one (brute-force tests found such a case)
            if stalls >= 2 or (met_deadline and gpu_hours > SCALING_CUTOFF * least_gpu_hours):
                break
            if (
                slack_stop
                and prune_hours is not None
                and gpu_hours > 1.1 * least_gpu_hours
                and steps_for_batch(layout.global_batch) * step.time_s / 3600 < prune_hours / 4
            ):
                break
            steps = steps_for_batch(layout.global_batch)
            band = step_band(step, gpu, setup.precision, setup.stack, a, default=gpu_band)
            factor = 1.0 if confidence is None else band.multiplier(confidence)
            hours, spot = spot_hours(off, n, steps * step.time_s * factor / 3600.0, model, setup, a)
            if (off.commitment_hours and hours > off.commitment_hours) or not fits_term(off.terms, hours):
                continue  # longer than the term (a reserved year, a capacity block) it is sold in
            cost = cost_usd(off, n, hours)
            met_deadline = met_deadline or hours <= prune_hours  # type: ignore[operator]
            table.candidates.append(
                Candidate(
                    off,
                    n,
                    layout,
                    memory,
                    step,
                    steps,
                    hours,
                    cost.total_usd,
                    cost.capital_usd,
                    setup,
                    check,
                    spot,
                    band,
                    confidence,
                    factor,
                )
            )
            found = True
            if ceiling is not None:
                ceiling.lower(cost.total_usd, hours)
        if not found and class_label(off) not in table.rejected:
            smallest = smallest_here
            if least_ram and off.ram_gib is not None and min(least_ram) > off.ram_gib:
                table.rejected[class_label(off)] = (
                    f"host RAM: needs {min(least_ram):,.1f} GiB per instance at best (offloaded "
                    f"states + pinned buffers + loader workers); the instance has "
                    f"{off.ram_gib:,.0f} GiB; fix: an instance with more RAM, or offload less"
                )
            elif pruned and prune_hours is not None and (smallest is None or smallest[0] <= usable):
                table.rejected[class_label(off)] = (
                    f"cannot meet the deadline ({prune_hours / 24:.1f} days) with up to {high} "
                    f"instance(s) even at full speed"
                )
            elif smallest is None:
                table.rejected[class_label(off)] = (
                    f"no layout realises global batch {batch.sequences} on up to {high} "
                    f"instance(s) of {gpn} GPU(s)"
                )
            elif smallest[0] <= usable:  # it fits: a limit other than memory ruled it out
                limit = (
                    f"each runs past its {off.commitment_hours / HOURS_PER_DAY:,.0f}-day reserved term"
                    if off.commitment_hours
                    else "the host (RAM, vCPUs or local disk) or the search limits rule each out"
                )
                table.rejected[class_label(off)] = (
                    f"layouts fit the GPU memory ({smallest[0]:.1f} of {usable:.1f} GiB usable) "
                    f"on up to {high} instance(s), but {limit}"
                )
            else:
                mem, lay = smallest
                table.rejected[class_label(off)] = (
                    f"needs {mem:.1f} GiB per GPU at best (tp={lay.tp}, pp={lay.pp}, "
                    f"zero_stage={lay.zero_stage}, activation_checkpointing={lay.checkpointing}, "
                    f"micro-batch "
                    f"{lay.micro_batch}, {lay.gpus} GPUs); {gpu.gpu_id} has {gpu.memory_gib:g}"
                    + (
                        f", {headroom.usable_gib(gpu.memory_gib):.1f} usable with the headroom "
                        f"kept ({headroom.kept_gib(gpu.memory_gib):.1f} GiB; "
                        f"constraints.min_memory_headroom_gib/_fraction)"
                        if headroom.kept_gib(gpu.memory_gib) > 0
                        else ""
                    )
                )
    table.candidates = prune_dominated(table.candidates)
    return table


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


def class_label(off: Offering) -> str:
    return f"{off.gpu_id} ×{off.gpus_per_instance} ({off.provider} {off.instance})"
