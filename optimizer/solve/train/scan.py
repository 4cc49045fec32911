"""The scan of one offering's instance counts (solve/train/enumerate.py): the context one
enumeration reads (`Enumeration`: job, rules, memory and step models, memo), the fastest layout
that fits at each count (`_fastest_at`; `_best_layout`: solve/train/fastest.py), the row it
gives (`_add_row`), when scaling out stops (`_stops_scaling`), and why a class gave no row (`_rejection`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from optimizer.model.bands import Band, band_for, step_band
from optimizer.model.hardware import GpuSpec
from optimizer.model.memory import MemoryBreakdown, MemoryModel
from optimizer.model.setup import CHECKPOINTING, Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import StackProfile
from optimizer.model.step_model import MicrobatchTimes, StepModel, step_model_for
from optimizer.model.step_time import StepTime
from optimizer.pricing.offering import Offering, cost_usd
from optimizer.pricing.terms import fits_term
from optimizer.solve.cpsat.scale import budget_cents, deadline_seconds, to_cents, to_seconds, within_scale
from optimizer.solve.train.candidate import Candidate, CandidateTable
from optimizer.solve.train.fastest import BestLayout
from optimizer.solve.train.fastest import best_layout as _best_layout
from optimizer.solve.train.fitting import FitList, LayoutRow, fitting_layouts
from optimizer.solve.train.host_check import NO_HOST_RULE, HostRule, check_host, host_need_gib, loader_words
from optimizer.solve.train.search_space import NO_HEADROOM, BatchRule, Headroom, instance_counts
from optimizer.solve.train.spot import run_hours
from optimizer.units import CENTS_PER_USD, HOURS_PER_DAY

__all__ = [
    "EnumerationMemo",
    "SearchRules",
    "Enumeration",
    "CostCeiling",
    "MAX_GPUS_DEFAULT",
    "BestLayout",
    "time_lower_bound_h",
    "time_factor",
    "row_factor",
    "scan_offering",
    "class_label",
]

MAX_GPUS_DEFAULT = 4096  # search cap on GPUs in one job unless the job sets max_gpus
#: a larger instance count must win ≥ 4% of its ideal speed-up (n_prev/n) to keep scaling up
#: (doubling the count: ≥ 2% faster); two such stalls in a row end the scan of a class
SATURATION_SHARE = 0.04
SCALING_CUTOFF = 2.0  # stop scaling out past 2× the least GPU-hours of a hardware class
#: (gpu, intra-node bandwidth, GPUs per instance, inter-node Gb/s, instances, host RAM GiB,
#: vCPUs): offerings of one key share the first one's fastest layout (the host figures are in
#: it since the RAM and data-loader checks read them)
PerfKey = tuple[str, float, int, float, int, float | None, float | None]


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
    microbatch: dict[tuple, dict[tuple, MicrobatchTimes]] = field(default_factory=dict)
    fits: dict[tuple, tuple[FitList, tuple[float, Layout] | None]] = field(default_factory=dict)
    #: (offering position, *perf key) -> (fastest layout or None, host-RAM needs seen)
    best: dict[tuple, tuple[BestLayout | None, tuple[float, ...]]] = field(default_factory=dict)
    #: perf key -> the same answer, shared with enumerations of this job over other offerings
    #: (PreparedJob.layout_memos): an offering with the same key (a spot or capacity-block row
    #: of an instance already scanned) gets the layout the key fixes, as within one enumeration
    best_by_key: dict[tuple, tuple[BestLayout | None, tuple[float, ...]]] = field(default_factory=dict)
    #: (GPUs, GPUs per node, ...) -> the layouts with their memory keys (fitting_layouts)
    rows: dict[tuple, list[LayoutRow]] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchRules:
    """The job's rules of one enumeration (enumerate_candidates).

    With `prune_hours` (the deadline), instance counts whose time lower bound (model FLOPs at
    base efficiency, no communication) exceeds it are skipped: they cannot meet the deadline.
    With `slack_stop` as well, a hardware class stops scaling out once a count finishes in a
    quarter of the deadline while already paying ≥ 10% more GPU-hours than its most efficient
    count (faster plans are then only needed for a Pareto front, which turns this off).
    `host` adds the host constraints (solve/train/host_check.py): offerings without room for
    the data are rejected, layouts must fit the host RAM, loader-bound candidates are slowed.
    With `confidence` q, every row's hours and cost are those at the q quantile of its step-time
    band (optimizer/model/bands.py): the deadline and the budget are met at that confidence.
    """

    batch: BatchRule
    steps_for_batch: Callable[[int], int]
    zero_stages: Sequence[int] = (0, 1, 2, 3)
    checkpointing: Sequence[str] = CHECKPOINTING
    min_instances: int = 1
    max_instances: int | None = None
    max_gpus: int | None = None
    prune_hours: float | None = None
    tokens_lower_bound: float = 0.0
    slack_stop: bool = False
    headroom: Headroom = NO_HEADROOM
    virtual_stages: int = 1
    allow_internet_multi_node: bool = False
    host: HostRule = NO_HOST_RULE
    confidence: float | None = None


@dataclass(frozen=True)
class Enumeration:
    """What every step of one enumeration reads: the job's model, setup and assumptions, its
    rules, its memory model, the step model of each GPU type (built on first use) and the memo."""

    model: ModelSpec
    setup: TrainingSetup
    a: PerfAssumptions
    rules: SearchRules
    memory: MemoryModel
    memo: EnumerationMemo
    stack: StackProfile
    step_models: dict[GpuSpec, StepModel] = field(default_factory=dict)
    bands: dict[GpuSpec, Band] = field(default_factory=dict)

    def step_model(self, gpu: GpuSpec) -> StepModel:
        """The step model of `gpu` (one per GPU type and enumeration)."""
        found = self.step_models.get(gpu)
        if found is None:
            found = self.step_models[gpu] = step_model_for(self.model, self.setup, gpu, self.a)
        return found

    def gpu_band(self, gpu: GpuSpec) -> Band:
        """The step-time band of `gpu` at the setup's precision (bands.band_for), one per GPU
        type and enumeration: every offering of the type reads the same."""
        found = self.bands.get(gpu)
        if found is None:
            found = self.bands[gpu] = band_for(gpu, self.setup.precision, self.setup.stack, self.a)
        return found


def time_lower_bound_h(
    step_model: StepModel,
    tokens: float,
    gpu: GpuSpec,
    gpus: int,
    precision: str,
    efficiency: float | None = None,
) -> float:
    """Hours no layout on `gpus` GPUs can beat: model FLOPs at base efficiency (or the upper
    bound `efficiency` of every layout's), no communication, × the centre every step time
    carries (its band's P50)."""
    peak = gpu.peak_tflops(precision) or 0.0
    eff = step_model.base_efficiency if efficiency is None else efficiency
    hours = step_model.model_flops_per_token * tokens / (gpus * peak * 1e12 * eff) / 3600.0
    return hours * step_model.centre


@dataclass
class CostCeiling:
    """Only the cheapest row that is late (past `deadline_h`; any row without one), within
    `budget_usd` and the solver's scale, if it costs less than `usd`, is asked for: offerings
    are searched cheapest floor first, and once such a row is found its cost is the new
    ceiling. With `meeting`, the cheapest row that meets the deadline and the budget is asked
    for instead (the solver picks it from the table afterwards): such a row, as the solver
    counts it (integer seconds and cents, solve/cpsat/scale.py), lowers the ceiling to its
    cost plus one cent, so every row the solver could rank with it stays in the table."""

    usd: float
    deadline_h: float | None = None
    budget_usd: float | None = None
    meeting: bool = False

    def lower(self, cost_usd: float, hours: float) -> None:
        if self.meeting:
            if _meets(cost_usd, hours, self.deadline_h, self.budget_usd):
                self.usd = min(self.usd, cost_usd + 1 / CENTS_PER_USD)
            return
        late = self.deadline_h is None or hours > self.deadline_h
        # a row past the solver's scale is never the cheaper plan (plan.cheaper_than)
        within = self.budget_usd is None or cost_usd <= self.budget_usd
        if late and within and within_scale(cost_usd, hours):
            self.usd = min(self.usd, cost_usd)


def _meets(cost_usd: float, hours: float, deadline_h: float | None, budget_usd: float | None) -> bool:
    """Whether the solver takes a row of this cost and duration under the deadline and budget
    (solve/train/model.py's integer test)."""
    return (
        within_scale(cost_usd, hours)
        and (deadline_h is None or to_seconds(hours) <= deadline_seconds(deadline_h))
        and (budget_usd is None or to_cents(cost_usd) <= budget_cents(budget_usd))
    )


def row_factor(band: Band, confidence: float | None) -> float:
    """The multiplier a row's step time gets from its band: its quantile at the job's
    confidence, 1 (the point prediction) without one (`_add_row`)."""
    return 1.0 if confidence is None else band.multiplier(confidence)


def time_factor(band: Band, confidence: float | None) -> float:
    """The smallest multiplier a row's hours get from its GPU's band: a count is pruned for the
    deadline only if even its median-or-faster time misses it (the P50 plan shown beside a
    confident one comes from the same table)."""
    return min(band.p50, band.multiplier(confidence or 0.5), 1.0)


@dataclass
class _Scan:
    """The scan of one offering's instance counts: its limits and what it has seen so far."""

    position: int
    off: Offering
    step_model: StepModel
    gpu_band: Band
    high: int
    usable_gib: float
    #: a count is pruned only if even its median-or-faster time misses the deadline (the P50
    #: plan shown beside a confident one comes from this table too)
    prune_at: float | None
    met_deadline: bool
    found: bool = False
    pruned: bool = False
    #: the smallest memory of any layout at the counts tried on THIS offering (a rejection
    #: reason must not depend on which offering of the catalog came first)
    smallest: tuple[float, Layout] | None = None
    least_ram: list[float] = field(default_factory=list)
    previous_time: float = float("inf")
    previous_n: int = 0
    stalls: int = 0
    least_gpu_hours: float = float("inf")


def _start_scan(ctx: Enumeration, position: int, off: Offering) -> _Scan:
    """The limits of `off`'s scan: its largest count, usable memory and deadline bound."""
    rules, gpu = ctx.rules, off.gpu
    gpu_band = ctx.gpu_band(gpu)
    factor = time_factor(gpu_band, rules.confidence)
    cap_gpus = rules.max_gpus or MAX_GPUS_DEFAULT  # the user's max_gpus may search further
    high = min(cap_gpus // off.gpus_per_instance, off.max_instances or 10**9, rules.max_instances or 10**9)
    if off.inter_node_kind == "internet" and not rules.allow_internet_multi_node:
        high = min(high, 1)  # hosts joined by the public internet: one host unless allowed
    return _Scan(
        position,
        off,
        ctx.step_model(gpu),
        gpu_band,
        high,
        rules.headroom.usable_gib(gpu.memory_gib),
        None if rules.prune_hours is None else rules.prune_hours / factor,
        met_deadline=rules.prune_hours is None,
    )


def scan_offering(
    ctx: Enumeration,
    position: int,
    off: Offering,
    table: CandidateTable,
    perf_cache: dict[PerfKey, BestLayout | None],
    ceiling: CostCeiling | None,
) -> None:
    """Add `off`'s rows to `table`, smallest count first, until scaling out stops paying; when
    it gives none, say why."""
    scan = _start_scan(ctx, position, off)
    rules = ctx.rules
    low = max(rules.min_instances, off.terms.min_nodes)  # a cluster's smallest size (clusters.csv)
    counts = instance_counts(low, scan.high, off.gpus_per_instance, rules.batch, ctx.model, ctx.stack)
    for n in counts:
        best = _fastest_at(ctx, scan, n, table, perf_cache)
        if best is not None and not _add_row(ctx, scan, n, best, table, ceiling):
            break
    if not scan.found and class_label(off) not in table.rejected:
        table.rejected[class_label(off)] = _rejection(ctx, scan)


def _fastest_at(
    ctx: Enumeration,
    scan: _Scan,
    n: int,
    table: CandidateTable,
    perf_cache: dict[PerfKey, BestLayout | None],
) -> BestLayout | None:
    """The fastest layout that fits on `n` instances of the scanned offering (None: none, or
    `n` cannot meet the deadline even at full speed)."""
    off, gpu, memo, rules = scan.off, scan.off.gpu, ctx.memo, ctx.rules
    gpn = off.gpus_per_instance
    if scan.prune_at is not None and (
        time_lower_bound_h(scan.step_model, rules.tokens_lower_bound, gpu, n * gpn, ctx.setup.precision)
        > scan.prune_at
    ):
        scan.pruned = table.pruned_by_deadline = True
        return None
    fits, smallest = _fits(ctx, n * gpn, gpn, scan.usable_gib)
    if smallest is not None and (scan.smallest is None or smallest[0] < scan.smallest[0]):
        scan.smallest = smallest
    # one instance never uses the inter-node network: share its result across NICs
    inter_gbps = off.inter_node_gbps if n > 1 else 0.0
    key: PerfKey = (gpu.gpu_id, gpu.intra_node_bw_gb_s, gpn, inter_gbps, n, off.ram_gib, off.vcpus)
    if key not in perf_cache:
        at = (scan.position, *key)
        if at not in memo.best:
            shared = memo.best_by_key.get(key)
            if shared is None:
                shared = memo.best_by_key[key] = _evaluate(ctx, scan, n, fits)
            memo.best[at] = shared
        perf_cache[key], needs_seen = memo.best[at]
        scan.least_ram.extend(needs_seen)
    return perf_cache[key]


def _evaluate(
    ctx: Enumeration, scan: _Scan, n: int, fits: FitList
) -> tuple[BestLayout | None, tuple[float, ...]]:
    """The fastest fitting layout on `n` instances of the scanned offering, with the host-RAM
    needs checked on the way."""
    off, rules, memo = scan.off, ctx.rules, ctx.memo

    def ram_need(layout: Layout, step: StepTime) -> float:
        return host_need_gib(ctx.model, ctx.setup, layout, off, step, rules.host, ctx.a)[0]

    needs: list[float] = []
    microbatch = memo.microbatch.setdefault(off.hardware_class, {})
    found = _best_layout(scan.step_model, off.cluster(n), fits, microbatch, ram_need, off.ram_gib, needs)
    return found, tuple(needs)


def _fits(
    ctx: Enumeration, gpus: int, gpus_per_node: int, usable_gib: float
) -> tuple[FitList, tuple[float, Layout] | None]:
    """The layouts of `gpus` GPUs that fit `usable_gib` (fitting_layouts), once per memo."""
    fkey = (gpus, gpus_per_node, usable_gib)
    memo, rules = ctx.memo, ctx.rules
    if fkey not in memo.fits:
        memo.fits[fkey] = fitting_layouts(
            ctx.model,
            ctx.setup,
            gpus,
            gpus_per_node,
            usable_gib,
            rules.batch,
            rules.zero_stages,
            rules.checkpointing,
            ctx.memory,
            memo.memory,
            rules.virtual_stages,
            memo.rows,
        )
    return memo.fits[fkey]


def _add_row(
    ctx: Enumeration,
    scan: _Scan,
    n: int,
    best: BestLayout,
    table: CandidateTable,
    ceiling: CostCeiling | None,
) -> bool:
    """Add the row of `n` instances with its fastest layout `best` to `table` (unless it runs
    past a reserved term); False when the scan of this class stops here."""
    off, rules, setup, a = scan.off, ctx.rules, ctx.setup, ctx.a
    layout, memory, gpu_step = best
    step, check = check_host(ctx.model, setup, layout, off, n, gpu_step, rules.host, a)
    if check.slowdown > 1.0 + 1e-9 and class_label(off) not in table.slowed:
        table.slowed[class_label(off)] = (
            f"slowed {check.slowdown:.2f}× to its loader rate: {loader_words(check, off, n, rules.host.kind)}"
        )
    if _stops_scaling(ctx, scan, n, step, layout):
        return False
    steps = rules.steps_for_batch(layout.global_batch)
    band = step_band(step, off.gpu, setup.precision, setup.stack, a, default=scan.gpu_band)
    factor = row_factor(band, rules.confidence)
    hours, spot, goodput = run_hours(off, n, steps * step.time_s * factor / 3600.0, ctx.model, setup, a)
    if (off.commitment_hours and hours > off.commitment_hours) or not fits_term(off.terms, hours):
        return True  # longer than the term (a reserved year, a capacity block) it is sold in
    cost = cost_usd(off, n, hours)
    scan.met_deadline = scan.met_deadline or (rules.prune_hours is not None and hours <= rules.prune_hours)
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
            rules.confidence,
            factor,
            goodput=goodput,
        )
    )
    scan.found = True
    if ceiling is not None:
        ceiling.lower(cost.total_usd, hours)
    return True


def _stops_scaling(ctx: Enumeration, scan: _Scan, n: int, step: StepTime, layout: Layout) -> bool:
    """The search limits (stated, and checked against brute force in tests): stop scaling a
    hardware class out when two larger counts in a row are < 2% faster, or when its GPU-hours
    exceed SCALING_CUTOFF × the least GPU-hours seen on that class (below 50% scaling
    efficiency a plan costs over twice the same hardware's cheapest); with `slack_stop`, once a
    count finishes in a quarter of the deadline at ≥ 10% more GPU-hours than the least."""
    rules = ctx.rules
    ideal = scan.previous_n / n if scan.previous_n else 0.0
    slower = step.time_s > scan.previous_time * (1 - SATURATION_SHARE * (1 - ideal))
    scan.stalls = scan.stalls + 1 if slower else 0
    scan.previous_time, scan.previous_n = min(scan.previous_time, step.time_s), n
    gpu_hours = n * scan.off.gpus_per_instance * step.time_s
    scan.least_gpu_hours = min(scan.least_gpu_hours, gpu_hours)
    # the cutoff only once a smaller count meets the deadline: until then a costlier,
    # faster count may be the only feasible one (brute-force tests found such a case)
    if scan.stalls >= 2 or (scan.met_deadline and gpu_hours > SCALING_CUTOFF * scan.least_gpu_hours):
        return True
    return (
        rules.slack_stop
        and rules.prune_hours is not None
        and gpu_hours > 1.1 * scan.least_gpu_hours
        and rules.steps_for_batch(layout.global_batch) * step.time_s / 3600 < rules.prune_hours / 4
    )


def _rejection(ctx: Enumeration, scan: _Scan) -> str:
    """Why the scanned offering gave no row: host RAM, the deadline, the batch, another limit
    than memory, or the memory it needs at best."""
    off, gpu, high, usable = scan.off, scan.off.gpu, scan.high, scan.usable_gib
    smallest, prune_hours, headroom = scan.smallest, ctx.rules.prune_hours, ctx.rules.headroom
    if scan.least_ram and off.ram_gib is not None and min(scan.least_ram) > off.ram_gib:
        return (
            f"host RAM: needs {min(scan.least_ram):,.1f} GiB per instance at best (offloaded "
            f"states + pinned buffers + loader workers); the instance has "
            f"{off.ram_gib:,.0f} GiB; fix: an instance with more RAM, or offload less"
        )
    if scan.pruned and prune_hours is not None and (smallest is None or smallest[0] <= usable):
        return (
            f"cannot meet the deadline ({prune_hours / 24:.1f} days) with up to {high} "
            f"instance(s) even at full speed"
        )
    if smallest is None:
        return (
            f"no layout realises global batch {ctx.rules.batch.sequences} on up to {high} "
            f"instance(s) of {off.gpus_per_instance} GPU(s)"
        )
    if smallest[0] <= usable:  # it fits: a limit other than memory ruled it out
        limit = (
            f"each runs past its {off.commitment_hours / HOURS_PER_DAY:,.0f}-day reserved term"
            if off.commitment_hours
            else "the host (RAM, vCPUs or local disk) or the search limits rule each out"
        )
        return (
            f"layouts fit the GPU memory ({smallest[0]:.1f} of {usable:.1f} GiB usable) "
            f"on up to {high} instance(s), but {limit}"
        )
    mem, lay = smallest
    kept = headroom.kept_gib(gpu.memory_gib)
    return (
        f"needs {mem:.1f} GiB per GPU at best (tp={lay.tp}, pp={lay.pp}, "
        f"zero_stage={lay.zero_stage}, activation_checkpointing={lay.checkpointing}, "
        f"micro-batch "
        f"{lay.micro_batch}, {lay.gpus} GPUs); {gpu.gpu_id} has {gpu.memory_gib:g}"
        + (
            f", {headroom.usable_gib(gpu.memory_gib):.1f} usable with the headroom "
            f"kept ({kept:.1f} GiB; constraints.min_memory_headroom_gib/_fraction"
            + (
                f", and the prediction ×{headroom.memory_factor:.2f} at constraints.memory_confidence)"
                if headroom.memory_factor > 1
                else ")"
            )
            if kept > 0
            else ""
        )
    )


def class_label(off: Offering) -> str:
    return f"{off.gpu_id} ×{off.gpus_per_instance} ({off.provider} {off.instance})"
