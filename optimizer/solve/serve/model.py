"""Serving planner: the cheapest mix of inference replicas carrying a load within latency targets.

1. Enumerate, per offering, the tensor-parallel degrees that fit in one instance and the largest
   batch (concurrent sequences) that fits memory (optimizer.model.memory.serving_memory), then a
   batch ladder 1, 2, 4, ..., max; at each batch the serving model (optimizer.model.serving)
   gives requests/s, TTFT and TPOT of one replica for every request bucket. A *replica option*
   is (offering, tp, batch) with its per-bucket capacity, only where the targets hold.
2. CP-SAT picks integer instance counts per option (mixes allowed) and assigns each bucket's
   load (in integer units) to options, by time sharing: a replica serving bucket b at rate r_b
   spends 1/r_b replica-seconds per request, and its busy time is at most one second per
   second. Objective: USD per served hour in integer cents, ties broken on fewer GPUs.
3. A second CP-SAT solve with the counts fixed finds the largest uniform scale of the load the
   fleet carries (the capacity and headroom reported).

Simplifications, stated: TTFT is one prefill plus one decode step (no queueing delay); the
arrival rate of N users with think time Z is N/Z (an upper bound); N+k redundancy keeps k spare
replicas per deployment (each deployment survives k failures on its own, exact for one GPU
type, conservative for mixes); replicas of one option fill their instances (replicas =
instances × GPUs per instance / tp).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from optimizer.errors import InfeasibleError
from optimizer.model.hardware import GpuSpec
from optimizer.model.memory import GIB, serving_memory, serving_weight_bytes
from optimizer.model.serving import serving_perf
from optimizer.model.setup import PerfAssumptions, ServeSetup
from optimizer.model.spec import ModelSpec
from optimizer.inputs.jobs.serve import Bucket, ServeConstraints, ServeJob, ServeWorkload
from optimizer.pricing.offering import Offering
from optimizer.solve.cpsat.scale import to_cents
from optimizer.solve.cpsat.solver import SolverConfig, SolveResult, solve

__all__ = [
    "BucketPerf", "ReplicaOption", "Deployment", "ServeResult", "IntOption", "IntProblem",
    "IntSolution", "TP_DEGREES", "LOAD_UNITS", "TIME_UNITS", "serve_offerings", "tp_degrees",
    "batch_ladder", "max_batch_that_fits", "replica_options", "build_problem", "solve_problem",
    "max_load_scale", "plan_serving", "serve_json", "compare_serving", "run_serve",
    "run_serve_compare", "problem_cost_cents",
]

TP_DEGREES = (1, 2, 4, 8)
#: each bucket's load (after headroom) is cut into this many integer units: 0.1% resolution
LOAD_UNITS = 1000
#: one replica-second per second in integer units; per-unit times are rounded up (conservative)
TIME_UNITS = 10**6
_DAYS_PER_MONTH = 730 / 24  # HOURS_PER_MONTH (optimizer.pricing.owned) / 24


# ---- replica options -------------------------------------------------------------------------

@dataclass(frozen=True)
class BucketPerf:
    """One replica configuration serving one request bucket (all of its requests)."""

    requests_per_s: float
    ttft_s: float
    tpot_s: float
    e2e_s: float  # ttft + tpot × (output − 1)
    memory_gib: float  # per GPU


@dataclass(frozen=True)
class ReplicaOption:
    """(offering, tp, batch): a replica type the solver may deploy, with its cost and capacity.

    `perf[b]` is None where the replica cannot serve bucket b (memory or latency).
    """

    offering: Offering
    tp: int
    batch: int
    perf: tuple[BucketPerf | None, ...]
    running_usd_per_hour: float  # per instance-hour in use (cloud price, power)
    fixed_usd_per_hour: float  # per instance, every hour of the day (reservation, capital)
    hours_per_day: float = 24.0

    @property
    def replicas_per_instance(self) -> int:
        return self.offering.gpus_per_instance // self.tp

    @property
    def usd_per_instance_hour(self) -> float:
        """USD per instance per *served* hour: running + fixed × 24 / hours_per_day."""
        return self.running_usd_per_hour + self.fixed_usd_per_hour * 24.0 / self.hours_per_day

    @property
    def rates(self) -> tuple[float, ...]:
        """Requests/s of one replica per bucket (0 where it cannot serve)."""
        return tuple(p.requests_per_s if p else 0.0 for p in self.perf)

    @property
    def label(self) -> str:
        return f"{self.tp}× {self.offering.gpu_id} TP{self.tp}"

    @property
    def key(self) -> str:
        return f"{self.offering.key}/tp{self.tp}/b{self.batch}"


def serve_offerings(frame: Any, constraints: ServeConstraints, owned: Sequence[Any] = (),
                    buy: Sequence[Any] = ()) -> list[tuple[Offering, float, float]]:
    """Offerings allowed by the filters, each with (running, fixed) USD per instance-hour.

    Cloud rows keep the intra-node link of the catalog row (it replaces the GPU default).
    Reserved rows bill every hour of the term (fixed); on-demand and spot bill hours used.
    Owned boxes cost power while serving (+ amortised capital if charge_capital); boxes to buy
    cost power + capital amortised straight-line over amortisation_months (whatever their
    accounting field says: an hourly objective needs an hourly capital charge).

    Raises:
        ConfigError: an unknown GPU, provider, region or pricing model in the filters.
    """
    from optimizer.inputs.gpus import load_gpus, resolve_gpu_id
    from optimizer.pricing.catalog import filter_offerings
    from optimizer.pricing.owned import (
        HOURS_PER_MONTH,
        box_price_usd,
        hardware_from_overrides,
        power_usd_per_hour,
    )

    gpus = load_gpus()
    out: list[tuple[Offering, float, float]] = []
    if frame is not None and constraints.cloud:
        rows = filter_offerings(frame, gpus=constraints.gpus, providers=constraints.providers,
                                regions=constraints.regions, pricing=list(constraints.pricing))
        for row in rows.itertuples(index=False):
            gpu = replace(gpus[row.gpu_id], intra_node_bw_gb_s=float(row.intra_node_bw_gb_s),
                          intra_node_link=str(row.intra_node_link))
            limit = None if row.max_instances != row.max_instances else int(row.max_instances)
            off = Offering(
                key=f"{row.provider}/{row.instance_type}/{row.region}/{row.pricing_model}",
                kind="cloud", provider=row.provider, instance=row.instance_type, region=row.region,
                pricing=row.pricing_model, gpu=gpu, gpus_per_instance=int(row.gpus_per_instance),
                inter_node_gbps=float(row.inter_node_gbps), usd_per_hour=float(row.usd_per_hour),
                max_instances=limit, commitment_hours=float(row.commitment_hours))
            committed = float(row.commitment_hours) > 0
            price = float(row.usd_per_hour)
            out.append((off, 0.0 if committed else price, price if committed else 0.0))
    allowed = {resolve_gpu_id(g, "constraints.gpus") for g in constraints.gpus} \
        if constraints.gpus else None
    for kind, entries in (("owned", owned), ("buy", buy)):
        for i, entry in enumerate(entries):
            gpu = gpus[resolve_gpu_id(entry.gpu, f"hardware.{kind}.gpu")]
            if allowed is not None and gpu.gpu_id not in allowed:
                continue
            spec = hardware_from_overrides(entry.gpu, **dict(entry.model_extra or {}))
            if kind == "owned":
                boxes = entry.boxes or spec.max_boxes or 1
            else:
                boxes = entry.max_count // spec.gpus_per_box if entry.max_count \
                    else (spec.max_boxes or 1)
            if boxes < 1:
                continue
            net = box_price_usd(spec) * (1 - spec.resale_fraction)
            capital_h = net / (spec.amortisation_months * HOURS_PER_MONTH)
            power_h = power_usd_per_hour(spec, 1, 1.0)
            off = Offering(
                key=f"{kind}/{gpu.gpu_id}x{spec.gpus_per_box}#{i}", kind=kind, provider=kind,
                instance=f"{spec.gpus_per_box}x {gpu.gpu_id} box", region="local", pricing=kind,
                gpu=gpu, gpus_per_instance=spec.gpus_per_box, inter_node_gbps=entry.inter_node_gbps,
                usd_per_hour=power_h, max_instances=boxes, box_net_price_usd=net,
                capital_usd_per_instance_hour=capital_h)
            fixed = capital_h if (kind == "buy" or entry.charge_capital) else 0.0
            out.append((off, power_h, fixed))
    return out


def tp_degrees(model: ModelSpec, gpus_per_instance: int,
               allowed: Iterable[int] | None = None) -> list[int]:
    """TP degrees within one instance: tp divides the GPUs per instance, the heads and KV heads.

    (Megatron TP splits attention by heads, Shoeybi et al. 2019 §3; TP stays inside a node.)
    """
    pool = tuple(allowed) if allowed is not None else TP_DEGREES
    return [t for t in pool if gpus_per_instance % t == 0 and model.heads % t == 0
            and model.n_kv_heads % t == 0]


def batch_ladder(max_batch: int) -> list[int]:
    """1, 2, 4, ... below `max_batch`, then `max_batch` itself."""
    ladder, b = [], 1
    while b < max_batch:
        ladder.append(b)
        b *= 2
    return ladder + [max_batch] if max_batch >= 1 else []


def _setup(weight_precision: str, kv_precision: str, batch: int, bucket: Bucket) -> ServeSetup:
    return ServeSetup(weight_precision=weight_precision, kv_precision=kv_precision, batch=batch,
                      context=bucket.context)


def max_batch_that_fits(model: ModelSpec, weight_precision: str, kv_precision: str,
                        gpu: GpuSpec, tp: int, bucket: Bucket, cap: int,
                        assumptions: PerfAssumptions | None = None) -> int:
    """Largest batch ≤ cap whose serving memory fits the GPU (0 if not even batch 1).

    The KV cache is sized for prompt + output tokens per sequence (every sequence at its last
    token: conservative; staggered sequences average prompt + output/2). Memory grows with the
    batch, so a binary search finds the limit.
    """
    def fits(b: int) -> bool:
        mem = serving_memory(model, _setup(weight_precision, kv_precision, b, bucket), tp,
                             assumptions)
        return mem.total <= gpu.memory_gib

    if not fits(1):
        return 0
    lo, hi = 1, cap
    if fits(hi):
        return hi
    while hi - lo > 1:  # invariant: fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def _violations(p: BucketPerf, c: ServeConstraints) -> list[str]:
    out = []
    if c.ttft_s is not None and p.ttft_s > c.ttft_s:
        out.append(f"TTFT {p.ttft_s:.3g} s > {c.ttft_s:g} s")
    if c.tpot_ms is not None and p.tpot_s * 1e3 > c.tpot_ms:
        out.append(f"TPOT {p.tpot_s * 1e3:.3g} ms > {c.tpot_ms:g} ms")
    if c.e2e_p50_s is not None and p.e2e_s > c.e2e_p50_s:
        out.append(f"end-to-end {p.e2e_s:.3g} s > {c.e2e_p50_s:g} s")
    return out


@dataclass
class _Best:
    """Fastest latency seen per bucket over every configuration that fits (for explanations)."""

    ttft: dict[int, tuple[float, str]] = field(default_factory=dict)
    tpot: dict[int, tuple[float, str]] = field(default_factory=dict)
    e2e: dict[int, tuple[float, str]] = field(default_factory=dict)
    min_memory: tuple[float, str, float] | None = None  # (need GiB, label, GPU GiB)

    def see(self, store: dict[int, tuple[float, str]], b: int, value: float, label: str) -> None:
        if b not in store or value < store[b][0]:
            store[b] = (value, label)


def _bucket_perf(model: ModelSpec, w: ServeWorkload, gpu: GpuSpec, tp: int, batch: int,
                 bucket: Bucket, a: PerfAssumptions) -> BucketPerf:
    setup = _setup(w.weight_precision, w.kv_precision, batch, bucket)
    perf = serving_perf(model, setup, gpu, tp, bucket.prompt_tokens, bucket.output_tokens, a)
    mem = serving_memory(model, setup, tp, a)
    return BucketPerf(requests_per_s=perf.requests_per_s, ttft_s=perf.ttft_s, tpot_s=perf.tpot_s,
                      e2e_s=perf.ttft_s + perf.tpot_s * max(bucket.output_tokens - 1, 0),
                      memory_gib=mem.total)


def _pareto_batches(rows: list[tuple[int, tuple[BucketPerf | None, ...]]]
                    ) -> list[tuple[int, tuple[BucketPerf | None, ...]]]:
    """Drop batches whose per-bucket rates are all ≤ another batch's (same price, less capacity)."""
    def rates(p: tuple[BucketPerf | None, ...]) -> tuple[float, ...]:
        return tuple(x.requests_per_s if x else 0.0 for x in p)

    keep = []
    for i, (b, p) in enumerate(rows):
        r = rates(p)
        if not any(r):
            continue
        dominated = any(
            all(x >= y for x, y in zip(rates(q), r, strict=True)) and (rates(q) != r or j < i)
            for j, (_, q) in enumerate(rows) if j != i)
        if not dominated:
            keep.append((b, p))
    return keep


def replica_options(model: ModelSpec, workload: ServeWorkload, constraints: ServeConstraints,
                    offerings: Sequence[tuple[Offering, float, float]],
                    assumptions: PerfAssumptions | None = None
                    ) -> tuple[list[ReplicaOption], list[str], _Best]:
    """Every non-dominated (offering, tp, batch) replica option, the rejections, best latencies.

    Offerings with the same GPU (and link) and GPUs per instance perform alike: for each such
    class only the cheaper offerings up to the first one without an instance limit are kept
    (a dearer offering of the same class can never be in an optimal plan).
    """
    a = assumptions or PerfAssumptions()
    buckets = workload.request_buckets()
    classes: dict[tuple[GpuSpec, int], list[tuple[Offering, float, float]]] = {}
    for item in offerings:
        classes.setdefault((item[0].gpu, item[0].gpus_per_instance), []).append(item)
    best = _Best()
    rejected: list[str] = []
    options: list[ReplicaOption] = []
    cap = constraints.max_batch
    for (gpu, per_instance), items in classes.items():
        tps = tp_degrees(model, per_instance, constraints.tp)
        if not tps:
            rejected.append(f"{per_instance}× {gpu.gpu_id}: no TP degree divides both the "
                            f"{per_instance} GPUs and the {model.heads} heads / "
                            f"{model.n_kv_heads} KV heads")
            continue
        templates: list[tuple[int, int, tuple[BucketPerf | None, ...]]] = []
        for tp in tps:
            label = f"{tp}× {gpu.gpu_id} TP{tp}"
            limits = [max_batch_that_fits(model, workload.weight_precision, workload.kv_precision,
                                          gpu, tp, bk, cap, a) for bk in buckets]
            if not any(limits):
                need = serving_memory(model, _setup(workload.weight_precision,
                                                    workload.kv_precision, 1, buckets[0]), tp, a)
                if best.min_memory is None or \
                        need.total / gpu.memory_gib < best.min_memory[0] / best.min_memory[2]:
                    best.min_memory = (need.total, label, gpu.memory_gib)
                rejected.append(f"{label}: needs {need.total:.1f} GiB per GPU at batch 1 "
                                f"(weights {need.weights:.1f}), GPU has {gpu.memory_gib:g}")
                continue
            rows: list[tuple[int, tuple[BucketPerf | None, ...]]] = []
            why: set[str] = set()
            for batch in batch_ladder(max(limits)):
                perfs: list[BucketPerf | None] = []
                for i, bk in enumerate(buckets):
                    if batch > limits[i]:
                        perfs.append(None)
                        continue
                    p = _bucket_perf(model, workload, gpu, tp, batch, bk, a)
                    if batch == 1:
                        best.see(best.ttft, i, p.ttft_s, label)
                        best.see(best.tpot, i, p.tpot_s, label)
                        best.see(best.e2e, i, p.e2e_s, label)
                    bad = _violations(p, constraints)
                    why.update(bad)
                    perfs.append(None if bad else p)
                rows.append((batch, tuple(perfs)))
            kept = _pareto_batches(rows)
            if not kept:
                rejected.append(f"{label}: misses the latency targets at every batch "
                                f"({'; '.join(sorted(why)) or 'no batch fits'})")
            templates.extend((tp, b, p) for b, p in kept)
        if not templates:
            continue
        items = sorted(items, key=lambda it: (it[1] + it[2] * 24 / workload.hours_per_day,
                                              it[0].key))
        for off, running, fixed in items:
            for tp, batch, perf in templates:
                options.append(ReplicaOption(off, tp, batch, perf, running, fixed,
                                             workload.hours_per_day))
            if off.max_instances is None:
                break
    return options, rejected, best


# ---- the integer problem -----------------------------------------------------------------------

@dataclass(frozen=True)
class IntOption:
    """A replica option in integers: cost per instance, per-bucket replica-time per load unit."""

    cost_cents: int  # per instance and served hour
    replicas_per_instance: int
    time_per_unit: tuple[int | None, ...]  # None: cannot serve that bucket
    gpus_per_instance: int = 1
    group: str = ""  # options of one offering share its instance limit
    max_instances: int | None = None


@dataclass(frozen=True)
class IntProblem:
    """Integer data of the CP-SAT model (the brute-force tests build these directly)."""

    options: tuple[IntOption, ...]
    load_units: tuple[int, ...]  # per bucket
    time_per_replica: int = TIME_UNITS
    spare: int = 0  # spare replicas per deployment used
    max_replicas: int | None = None

    def upper_bound(self, i: int) -> int:
        """Instances of option i beyond which it could carry every bucket it can serve alone."""
        o = self.options[i]
        pairs = zip(self.load_units, o.time_per_unit, strict=True)
        work = sum(u * t for u, t in pairs if t is not None and u)
        if work == 0:
            return 0
        replicas = math.ceil(work / self.time_per_replica) + self.spare
        ub = math.ceil(replicas / o.replicas_per_instance)
        if o.max_instances is not None:
            ub = min(ub, o.max_instances)
        if self.max_replicas is not None:
            ub = min(ub, self.max_replicas // o.replicas_per_instance)
        return max(ub, 0)


@dataclass(frozen=True)
class IntSolution:
    status: str  # optimal | feasible | infeasible
    counts: tuple[int, ...]
    assignment: tuple[tuple[int, ...], ...]  # [option][bucket] load units
    cost_cents: int | None
    result: SolveResult | None


def problem_cost_cents(problem: IntProblem, counts: Sequence[int]) -> int:
    """Plain-Python objective of a count vector (for validation and brute force)."""
    return sum(o.cost_cents * n for o, n in zip(problem.options, counts, strict=True))


def build_problem(options: Sequence[ReplicaOption], load_rps: Sequence[float],
                  constraints: ServeConstraints) -> tuple[IntProblem, tuple[float, ...]]:
    """Integer problem of the options for per-bucket loads (req/s, before headroom).

    Returns the problem and the request rate of one load unit per bucket (req/s).
    """
    factor = 1.0 + constraints.headroom
    unit_rps = tuple(load * factor / LOAD_UNITS for load in load_rps)
    int_options = []
    for opt in options:
        times: list[int | None] = []
        for rate, unit in zip(opt.rates, unit_rps, strict=True):
            times.append(math.ceil(TIME_UNITS * unit / rate) if rate > 0 and unit > 0 else None)
        off = opt.offering
        int_options.append(IntOption(
            cost_cents=to_cents(opt.usd_per_instance_hour),
            replicas_per_instance=opt.replicas_per_instance, time_per_unit=tuple(times),
            gpus_per_instance=off.gpus_per_instance, group=off.key,
            max_instances=off.max_instances))
    loads = tuple(LOAD_UNITS if u > 0 else 0 for u in unit_rps)
    return IntProblem(tuple(int_options), loads, TIME_UNITS, constraints.spare_replicas,
                      constraints.max_replicas), unit_rps


def solve_problem(problem: IntProblem, config: SolverConfig | None = None) -> IntSolution:
    """CP-SAT: minimise cost in cents (tie-break: fewer GPUs) with every bucket's load assigned.

    Variables: instances n_o ∈ [0, ub_o]; load units x_ob ∈ [0, L_b] where o serves b.
    Constraints: Σ_o x_ob = L_b; Σ_b t_ob·x_ob ≤ T·(rpi_o·n_o − k·used_o); n_o ≤ ub_o·used_o;
    Σ n over an offering ≤ its instance limit; Σ rpi_o·n_o ≤ max_replicas.
    """
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    k, T = problem.spare, problem.time_per_replica
    ubs = [problem.upper_bound(i) for i in range(len(problem.options))]
    n = [m.new_int_var(0, ub, f"n{i}") for i, ub in enumerate(ubs)]
    x: list[dict[int, Any]] = []
    for i, o in enumerate(problem.options):
        row = {}
        for b, (t, load) in enumerate(zip(o.time_per_unit, problem.load_units, strict=True)):
            if t is not None and load > 0 and ubs[i] > 0:
                row[b] = m.new_int_var(0, load, f"x{i}_{b}")
        x.append(row)
        if not row:
            m.add(n[i] == 0)
            continue
        busy = sum((o.time_per_unit[b] or 0) * v for b, v in row.items())
        if k:
            used = m.new_bool_var(f"used{i}")
            m.add(n[i] <= ubs[i] * used)
            m.add(busy <= T * (o.replicas_per_instance * n[i] - k * used))
        else:
            m.add(busy <= T * o.replicas_per_instance * n[i])
    for b, load in enumerate(problem.load_units):
        if load > 0:
            m.add(sum(row[b] for row in x if b in row) == load)
    groups: dict[str, list[int]] = {}
    for i, o in enumerate(problem.options):
        if o.max_instances is not None:
            groups.setdefault(o.group, []).append(i)
    for members in groups.values():
        limit = min(problem.options[i].max_instances or 0 for i in members)
        m.add(sum(n[i] for i in members) <= limit)
    if problem.max_replicas is not None:
        m.add(sum(o.replicas_per_instance * n[i] for i, o in enumerate(problem.options))
              <= problem.max_replicas)
    weight = 1 + sum(ub * o.gpus_per_instance for ub, o in zip(ubs, problem.options, strict=True))
    m.minimize(sum((o.cost_cents * weight + o.gpus_per_instance) * n[i]
                   for i, o in enumerate(problem.options)))
    hint = _greedy_hint(problem, ubs)
    if hint is not None:
        for i, v in enumerate(hint):
            m.add_hint(n[i], v)
    res = solve(m, config)
    if res.status == "infeasible":
        return IntSolution("infeasible", (), (), None, res)
    s = res.solver
    counts = tuple(int(s.value(v)) for v in n)
    assign = tuple(tuple(int(s.value(row[b])) if b in row else 0
                         for b in range(len(problem.load_units))) for row in x)
    return IntSolution(res.status, counts, assign, problem_cost_cents(problem, counts), res)


def _greedy_hint(problem: IntProblem, ubs: Sequence[int]) -> list[int] | None:
    """The cheapest single option that serves every bucket alone (a feasible start), if any."""
    best: tuple[int, int, int] | None = None
    for i, o in enumerate(problem.options):
        pairs = zip(o.time_per_unit, problem.load_units, strict=True)
        if any(t is None for t, load in pairs if load):
            continue
        work = sum(u * (t or 0) for u, t in zip(problem.load_units, o.time_per_unit, strict=True))
        inst = math.ceil((math.ceil(work / problem.time_per_replica) + problem.spare)
                         / o.replicas_per_instance)
        if inst <= ubs[i] and (best is None or inst * o.cost_cents < best[0]):
            best = (inst * o.cost_cents, i, inst)
    if best is None:
        return None
    hint = [0] * len(problem.options)
    hint[best[1]] = best[2]
    return hint


def max_load_scale(problem: IntProblem, counts: Sequence[int],
                   config: SolverConfig | None = None, cap_permille: int = 100_000) -> tuple[
                       float, tuple[tuple[int, ...], ...]]:
    """Largest α (in steps of 0.001) such that α × the load fits the fleet with every replica up.

    Returns α and the load units per option and bucket at α.
    """
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    alpha = m.new_int_var(0, cap_permille, "alpha")
    rows: list[dict[int, Any]] = []
    for i, o in enumerate(problem.options):
        row = {}
        if counts[i]:
            for b, (t, load) in enumerate(zip(o.time_per_unit, problem.load_units, strict=True)):
                if t is not None and load:
                    row[b] = m.new_int_var(0, load * cap_permille // 1000, f"x{i}_{b}")
            if row:
                m.add(sum((o.time_per_unit[b] or 0) * v for b, v in row.items())
                      <= problem.time_per_replica * o.replicas_per_instance * counts[i])
        rows.append(row)
    for b, load in enumerate(problem.load_units):
        if load:
            m.add(1000 * sum(r[b] for r in rows if b in r) >= load * alpha)
    m.maximize(alpha)
    res = solve(m, config)
    if res.status == "infeasible":
        return 0.0, ()
    s = res.solver
    units = tuple(tuple(int(s.value(r[b])) if b in r else 0
                        for b in range(len(problem.load_units))) for r in rows)
    return s.value(alpha) / 1000.0, units


# ---- the plan -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Deployment:
    """Instances of one replica option in the plan."""

    option: ReplicaOption
    instances: int
    assigned_rps: tuple[float, ...]  # per bucket, at the load (with headroom)
    capacity_rps: float  # this deployment's share at the fleet's maximum uniform load

    @property
    def replicas(self) -> int:
        return self.instances * self.option.replicas_per_instance

    @property
    def gpus(self) -> int:
        return self.instances * self.option.offering.gpus_per_instance

    @property
    def usd_per_hour(self) -> float:
        return self.instances * self.option.usd_per_instance_hour

    def served(self) -> list[BucketPerf]:
        """Performance on the buckets this deployment is assigned (all it can serve if none)."""
        got = [p for p, r in zip(self.option.perf, self.assigned_rps, strict=True) if p and r > 0]
        return got or [p for p in self.option.perf if p]


@dataclass(frozen=True)
class ServeResult:
    """Outcome of plan_serving; serve_json renders the JSON contract."""

    status: str  # optimal | feasible | infeasible
    name: str
    model: ModelSpec
    workload: ServeWorkload
    constraints: ServeConstraints
    deployments: tuple[Deployment, ...] = ()
    load_rps: float = 0.0
    capacity_rps: float = 0.0
    explanation: str | None = None
    solver: dict[str, Any] = field(default_factory=dict)
    options: int = 0
    rejected: tuple[str, ...] = ()

    @property
    def usd_per_hour(self) -> float:
        return sum(d.usd_per_hour for d in self.deployments)

    @property
    def usd_per_month(self) -> float:
        """USD per month: USD per served hour × hours_per_day × 730/24 days."""
        return self.usd_per_hour * self.workload.hours_per_day * _DAYS_PER_MONTH


def _explain_no_options(model: ModelSpec, w: ServeWorkload, c: ServeConstraints,
                        best: _Best, n_offerings: int) -> str:
    buckets = w.request_buckets()
    if n_offerings == 0:
        def shown(v: Any) -> Any:
            return list(v) if v else "any"

        return (f"no offering matches the filters (gpus={shown(c.gpus)}, providers="
                f"{shown(c.providers)}, regions={shown(c.regions)}, pricing={list(c.pricing)}) "
                "and no [[hardware]] is given; widen the filters")
    if not best.ttft:  # nothing fits memory at batch 1
        weights = serving_weight_bytes(model, w.weight_precision) / GIB
        int4 = serving_weight_bytes(model, "int4") / GIB
        need = best.min_memory
        where = f"; the closest is {need[1]}: {need[0]:.1f} GiB per GPU of {need[2]:g}" \
            if need else ""
        return (f"{model.name} at {w.weight_precision} ({weights:.1f} GiB of weights) plus the KV "
                f"cache of one {buckets[0].context}-token sequence fits no allowed instance"
                f"{where}; allow GPUs with more memory or more GPUs per instance, or quantize "
                f"(int4 weights: {int4:.1f} GiB)")
    parts = []
    for i, bk in enumerate(buckets):
        tag = "" if len(buckets) == 1 else \
            f"bucket {i + 1} ({bk.prompt_tokens}+{bk.output_tokens} tokens): "
        if i not in best.ttft:
            parts.append(f"{tag}no instance fits its {bk.context}-token sequences")
            continue
        if c.ttft_s is not None and best.ttft[i][0] > c.ttft_s:
            v, lab = best.ttft[i]
            parts.append(f"{tag}TTFT {c.ttft_s:g} s is below the fastest prefill of any option: "
                         f"{v:.3g} s on {lab} ({bk.prompt_tokens}-token prompt); nearest fix: "
                         f"ttft_s = {math.ceil(v * 1000) / 1000:g}, a faster GPU or a shorter "
                         "prompt")
        elif c.tpot_ms is not None and best.tpot[i][0] * 1e3 > c.tpot_ms:
            v, lab = best.tpot[i]
            parts.append(f"{tag}TPOT {c.tpot_ms:g} ms is below the fastest decode of any option: "
                         f"{v * 1e3:.3g} ms per token on {lab} at batch 1; nearest fix: "
                         f"tpot_ms = {math.ceil(v * 1e4) / 10:g}, more TP or a lower-bit "
                         "weight format")
        elif c.e2e_p50_s is not None and best.e2e[i][0] > c.e2e_p50_s:
            v, lab = best.e2e[i]
            parts.append(f"{tag}end-to-end {c.e2e_p50_s:g} s is below the fastest of any option: "
                         f"{v:.3g} s on {lab} at batch 1; nearest fix: e2e_p50_s = "
                         f"{math.ceil(v * 100) / 100:g} or fewer output tokens")
        else:
            parts.append(f"{tag}no single option meets all latency targets together "
                         f"(fastest TTFT {best.ttft[i][0]:.3g} s on {best.ttft[i][1]}, fastest "
                         f"TPOT {best.tpot[i][0] * 1e3:.3g} ms on {best.tpot[i][1]}); relax one")
    return "; ".join(parts) if parts else "no replica option meets the targets"


def _explain_solver_infeasible(problem: IntProblem, c: ServeConstraints, load: float,
                               config: SolverConfig | None) -> str:
    served = [b for b, u in enumerate(problem.load_units) if u and not any(
        o.time_per_unit[b] is not None for o in problem.options)]
    if served:
        return (f"no option can serve bucket(s) {', '.join(str(b + 1) for b in served)} within "
                "the targets; relax the latency targets for them")
    if c.max_replicas is not None:
        relaxed = replace(problem, max_replicas=None)
        sol = solve_problem(relaxed, config)
        if sol.status != "infeasible":
            pairs = zip(relaxed.options, sol.counts, strict=True)
            need = sum(o.replicas_per_instance * v for o, v in pairs)
            return (f"max_replicas = {c.max_replicas} is too few for {load:.3g} requests/s "
                    f"(headroom {c.headroom:g}, {c.spare_replicas} spare); the cheapest plan "
                    f"needs {need} replicas; nearest fix: max_replicas = {need}")
    return (f"the instance limits (owned boxes, max_count, catalog max_instances) cannot carry "
            f"{load:.3g} requests/s with headroom {c.headroom:g} and {c.spare_replicas} spare "
            "replica(s) per deployment; add hardware, allow cloud offerings or lower the load")


def plan_serving(job: ServeJob, frame: Any, base_dir: Path | None = None,
                 config: SolverConfig | None = None,
                 assumptions: PerfAssumptions | None = None) -> ServeResult:
    """The cheapest deployment of a serving job.

    Args:
        job: a validated ServeJob.
        frame: the price catalog DataFrame (None: owned / bought hardware only).
        base_dir: directory for a relative hf_config path.
        config: CP-SAT settings.
        assumptions: performance constants (default: defaults + stored calibration + the job's
            [assumptions]).

    Returns:
        ServeResult; status "infeasible" carries an explanation naming the binding target.

    Raises:
        ConfigError: an invalid model, filter value or hardware entry.
    """
    from optimizer.inputs.calibration import base_assumptions

    model = job.model.resolve(base_dir)
    w, c = job.workload, job.constraints
    a = assumptions or base_assumptions(job.assumptions)
    offerings = serve_offerings(frame, c, job.hardware.owned, job.hardware.buy)
    options, rejected, best = replica_options(model, w, c, offerings, a)
    load = w.load_requests_per_s
    buckets = w.request_buckets()
    base: dict[str, Any] = dict(name=job.name, model=model, workload=w, constraints=c,
                                load_rps=load, options=len(options), rejected=tuple(rejected))
    if not options:
        return ServeResult("infeasible", explanation=_explain_no_options(
            model, w, c, best, len(offerings)), solver={"name": "cp-sat", "options": 0}, **base)
    loads = [load * bk.share for bk in buckets]
    problem, unit_rps = build_problem(options, loads, c)
    missing = [i for i, u in enumerate(problem.load_units) if u and not any(
        o.time_per_unit[i] is not None for o in problem.options)]
    if missing:
        explanation = _explain_no_options(model, w, c, best, len(offerings))
        return ServeResult("infeasible", explanation=explanation,
                           solver={"name": "cp-sat", "options": len(options)}, **base)
    sol = solve_problem(problem, config)
    solver_info = dict(sol.result.as_dict() if sol.result else {}, options=len(options))
    if sol.status == "infeasible":
        return ServeResult("infeasible", explanation=_explain_solver_infeasible(
            problem, c, load, config), solver=solver_info, **base)
    alpha, at_alpha = max_load_scale(problem, sol.counts, config)
    deployments = []
    for i, count in enumerate(sol.counts):
        if not count:
            continue
        assigned = tuple(u * r for u, r in zip(sol.assignment[i], unit_rps, strict=True))
        cap = sum(u * r for u, r in zip(at_alpha[i], unit_rps, strict=True)) if at_alpha else 0.0
        deployments.append(Deployment(options[i], count, assigned, cap))
    deployments.sort(key=lambda d: -d.usd_per_hour)
    capacity = alpha * load * (1 + c.headroom)
    solver_info.update(objective_cents=sol.cost_cents)
    return ServeResult(sol.status, deployments=tuple(deployments), capacity_rps=capacity,
                       solver=solver_info, **base)


def _r(v: float, digits: int = 4) -> float:
    return float(f"{v:.{digits}g}")


def _deployment_json(d: Deployment, quant: str) -> dict[str, Any]:
    o, off = d.option, d.option.offering
    served = d.served()
    return {
        "gpu": off.gpu_id, "gpus": d.gpus, "tp": o.tp, "quantization": quant,
        "replicas": d.replicas, "provider": off.provider, "instance": off.instance,
        "pricing": off.pricing, "region": off.region, "instances": d.instances,
        "gpus_per_instance": off.gpus_per_instance, "batch": o.batch,
        "usd_per_hour": round(d.usd_per_hour, 4),
        "usd_per_instance_hour": round(o.usd_per_instance_hour, 4),
        "requests_per_s": round(sum(d.assigned_rps), 4),
        "capacity_requests_per_s": round(d.capacity_rps, 4),
        "requests_per_s_per_replica": [round(r, 4) for r in o.rates],
        "bucket_requests_per_s": [round(r, 4) for r in d.assigned_rps],
        "ttft_s": _r(max(p.ttft_s for p in served)),
        "tpot_ms": _r(max(p.tpot_s for p in served) * 1e3),
        "e2e_s": _r(max(p.e2e_s for p in served)),
        "memory_gib": round(max(p.memory_gib for p in served), 2),
    }


def serve_json(result: ServeResult) -> dict[str, Any]:
    """The `ccopt serve --json` contract (DESIGN.md), with added fields."""
    w, c = result.workload, result.constraints
    job = {"name": result.name, "model": result.model.name, "params": result.model.params(),
           "quantization": w.weight_precision, "load_requests_per_s": _r(result.load_rps),
           "hours_per_day": w.hours_per_day,
           "buckets": [b.model_dump() for b in w.request_buckets()],
           "targets": {"ttft_s": c.ttft_s, "tpot_ms": c.tpot_ms, "e2e_p50_s": c.e2e_p50_s},
           "redundancy_spare_replicas": c.spare_replicas, "headroom_required": c.headroom}
    out: dict[str, Any] = {"status": result.status, "plan": None,
                           "explanation": result.explanation, "solver": result.solver, "job": job,
                           "rejected": list(result.rejected)}
    if result.status == "infeasible":
        return out
    deps = [_deployment_json(d, w.weight_precision) for d in result.deployments]
    out["plan"] = {
        "deployments": deps,
        "usd_per_hour": round(result.usd_per_hour, 4),
        "usd_per_month": round(result.usd_per_month, 2),
        "capacity_requests_per_s": round(result.capacity_rps, 4),
        "load_requests_per_s": round(result.load_rps, 4),
        "headroom": round(result.capacity_rps / result.load_rps - 1, 4)
        if result.load_rps else None,
        "ttft_s": max(d["ttft_s"] for d in deps),
        "tpot_ms": max(d["tpot_ms"] for d in deps),
        "e2e_s": max(d["e2e_s"] for d in deps),
        "replicas": sum(d["replicas"] for d in deps),
        "gpus": sum(d["gpus"] for d in deps),
        "spare_replicas": c.spare_replicas * len(deps),
    }
    return out


def compare_serving(job: ServeJob, frame: Any, base_dir: Path | None = None,
                    config: SolverConfig | None = None,
                    assumptions: PerfAssumptions | None = None) -> dict[str, Any]:
    """Best deployment per GPU type (each solved alone) and the best mix over all types.

    Returns:
        {"best": serve_json of the whole job, "per_gpu": {gpu_id: {"usd_per_hour",
        "usd_per_month", "deployments", ...} or {"explanation": ...}}}
    """
    from optimizer.inputs.gpus import resolve_gpu_id

    overall = plan_serving(job, frame, base_dir, config, assumptions)
    offerings = serve_offerings(frame, job.constraints, job.hardware.owned, job.hardware.buy)
    gpu_ids = sorted({o.gpu_id for o, _, _ in offerings})
    per_gpu: dict[str, Any] = {}
    for gpu in gpu_ids:
        allowed = resolve_gpu_id(gpu)
        sub = job.model_copy(update={"constraints": job.constraints.model_copy(
            update={"gpus": (allowed,)})})
        res = plan_serving(sub, frame, base_dir, config, assumptions)
        data = serve_json(res)
        per_gpu[gpu] = data["plan"] if data["plan"] else {"explanation": data["explanation"]}
    return {"best": serve_json(overall), "per_gpu": per_gpu}


def _load(job: Any, prices: str | Path | None, offline: bool | None
          ) -> tuple[ServeJob, Any, Path | None]:
    from optimizer.inputs.jobs.train import coerce_document
    from optimizer.inputs.jobs.serve import load_serve_job, serve_job_from_dict

    job, base_dir = coerce_document(job, ServeJob, load_serve_job, serve_job_from_dict)
    frame = None
    if job.constraints.cloud:
        from optimizer.pricing.catalog import load_catalog

        frame = load_catalog(prices, offline=offline).frame
    return job, frame, base_dir


def run_serve(job: Any, *, prices: str | Path | None = None, offline: bool | None = None,
              time_limit_s: float = 10.0) -> dict[str, Any]:
    """Plan a serving job (a TOML path, a dict or a ServeJob) and return the JSON contract."""
    j, frame, base_dir = _load(job, prices, offline)
    return serve_json(plan_serving(j, frame, base_dir, SolverConfig(time_limit_s=time_limit_s)))


def run_serve_compare(job: Any, *, prices: str | Path | None = None,
                      offline: bool | None = None, time_limit_s: float = 10.0) -> dict[str, Any]:
    """Best deployment per GPU type for a serving job (see compare_serving)."""
    j, frame, base_dir = _load(job, prices, offline)
    return compare_serving(j, frame, base_dir, SolverConfig(time_limit_s=time_limit_s))


def require_feasible(data: dict[str, Any]) -> dict[str, Any]:
    """Raise InfeasibleError for an infeasible serve_json answer (for API users who prefer it)."""
    if data["status"] == "infeasible":
        raise InfeasibleError(data["explanation"] or "no deployment meets the targets",
                              data["explanation"])
    return data
