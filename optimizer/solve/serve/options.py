"""Replica options of a serving job: (offering, TP degree, batch) with per-bucket performance.

Per offering class, the tensor-parallel degrees that fit one instance and the largest batch
(concurrent sequences) that fits memory (optimizer.model.memory.serving_memory), then a batch
ladder 1, 2, 4, ..., max; at each batch the serving model (optimizer.model.serving) gives
requests/s, TTFT and TPOT of one replica per request bucket. An option keeps only the buckets
whose latency targets hold; every rejection keeps its reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from optimizer.inputs.jobs.serve import Bucket, ServeConstraints, ServeWorkload
from optimizer.model.bands import serve_band_for
from optimizer.model.hardware import GpuSpec
from optimizer.model.layout import tensor_degrees
from optimizer.model.memory import MemoryBreakdown, serving_memory
from optimizer.model.serving import serving_max_batch, serving_perf
from optimizer.model.setup import PerfAssumptions, ServeSetup
from optimizer.model.spec import ModelSpec
from optimizer.pricing.offering import Offering, hourly_usd
from optimizer.units import HOURS_PER_DAY

__all__ = [
    "BucketPerf",
    "ReplicaOption",
    "BestLatency",
    "tp_degrees",
    "option_label",
    "batch_ladder",
    "max_batch_that_fits",
    "latency_violations",
    "served_hour_usd",
    "replica_options",
]


@dataclass(frozen=True)
class BucketPerf:
    """One replica configuration serving one request bucket (all of its requests)."""

    requests_per_s: float
    ttft_s: float
    tpot_s: float
    e2e_s: float  # ttft + tpot × (output − 1)
    memory_gib: float  # per GPU
    memory: MemoryBreakdown | None = None  # the parts of memory_gib


def served_hour_usd(offering: Offering, hours_per_day: float) -> float:
    """USD per instance per *served* hour: running + fixed × 24 / hours_per_day (hourly_usd)."""
    running, fixed = hourly_usd(offering)
    return running + fixed * HOURS_PER_DAY / hours_per_day


@dataclass(frozen=True)
class ReplicaOption:
    """(offering, tp, batch): a replica type the solver may deploy, with its cost and capacity.

    `perf[b]` is None where the replica cannot serve bucket b (memory or latency).
    """

    offering: Offering
    tp: int
    batch: int
    perf: tuple[BucketPerf | None, ...]
    hours_per_day: float = 24.0

    @property
    def replicas_per_instance(self) -> int:
        return self.offering.gpus_per_instance // self.tp

    @property
    def usd_per_instance_hour(self) -> float:
        """USD per instance per *served* hour (served_hour_usd of the offering)."""
        return served_hour_usd(self.offering, self.hours_per_day)

    @property
    def rates(self) -> tuple[float, ...]:
        """Requests/s of one replica per bucket (0 where it cannot serve)."""
        return tuple(p.requests_per_s if p else 0.0 for p in self.perf)

    @property
    def label(self) -> str:
        """ "L4 ×1 TP1 (aws g6.xlarge)": the offering and the TP degree (option_label)."""
        return option_label(self.offering, self.tp)

    @property
    def key(self) -> str:
        """Stable identity: offering key, TP degree, batch (also the solver's tie-break key)."""
        return f"{self.offering.key}/tp{self.tp}/b{self.batch}"

    @property
    def sort_key(self) -> tuple[str, int, int]:
        return (self.offering.key, self.tp, self.batch)


@dataclass
class BestLatency:
    """Fastest latency seen per bucket over every configuration that fits (for explanations)."""

    ttft: dict[int, tuple[float, str]] = field(default_factory=dict)
    tpot: dict[int, tuple[float, str]] = field(default_factory=dict)
    e2e: dict[int, tuple[float, str]] = field(default_factory=dict)
    min_memory: tuple[float, str, float] | None = None  # (need GiB, label, GPU GiB)

    def see(self, store: dict[int, tuple[float, str]], b: int, value: float, label: str) -> None:
        if b not in store or value < store[b][0]:
            store[b] = (value, label)


def option_label(offering: Offering, tp: int | None = None) -> str:
    """ "L4 ×1 TP1 (aws g6.xlarge)": GPU, GPUs per instance, TP degree (when given), provider and
    instance (as the training planner's class_label names an offering)."""
    degree = f" TP{tp}" if tp is not None else ""
    return (
        f"{offering.gpu_id} ×{offering.gpus_per_instance}{degree} ({offering.provider} {offering.instance})"
    )


def tp_degrees(model: ModelSpec, gpus_per_instance: int, allowed: Iterable[int] | None = None) -> list[int]:
    """TP degrees of a replica within one instance: the rulebook's (model/layout.py) degrees of
    `allowed` (default: every degree) that divide the GPUs per instance, the heads and KV heads.

    (Megatron TP splits attention by heads, Shoeybi et al. 2019 §3; TP stays inside a node.)
    """
    return list(tensor_degrees(model, gpus_per_instance, allowed))


def batch_ladder(max_batch: int) -> list[int]:
    """1, 2, 4, ... below `max_batch`, then `max_batch` itself."""
    ladder, b = [], 1
    while b < max_batch:
        ladder.append(b)
        b *= 2
    return ladder + [max_batch] if max_batch >= 1 else []


def _setup(
    weight_precision: str, kv_precision: str, batch: int, bucket: Bucket, stack: str = "generic"
) -> ServeSetup:
    return ServeSetup(
        weight_precision=weight_precision,
        kv_precision=kv_precision,
        batch=batch,
        context=bucket.context,
        stack=stack,
        output_tokens=bucket.output_tokens,
    )


def max_batch_that_fits(
    model: ModelSpec,
    weight_precision: str,
    kv_precision: str,
    gpu: GpuSpec,
    tp: int,
    bucket: Bucket,
    cap: int,
    assumptions: PerfAssumptions | None = None,
    stack: str = "generic",
) -> int:
    """Largest batch ≤ cap that the serving stack admits on the GPU (0 if not even batch 1).

    The same function `estimate --batch max` uses (model.serving.serving_max_batch): the
    stack's KV budget, its KV occupancy (paged: average context) and its scheduler cap.
    """
    return serving_max_batch(
        model, _setup(weight_precision, kv_precision, 1, bucket, stack), gpu, tp, assumptions, cap=cap
    )


def latency_violations(p: BucketPerf, c: ServeConstraints) -> list[str]:
    """The latency targets (TTFT, TPOT, end-to-end) that `p` misses, as phrases."""
    out = []
    if c.ttft_s is not None and p.ttft_s > c.ttft_s:
        out.append(f"TTFT {p.ttft_s:.3g} s > {c.ttft_s:g} s")
    if c.tpot_ms is not None and p.tpot_s * 1e3 > c.tpot_ms:
        out.append(f"TPOT {p.tpot_s * 1e3:.3g} ms > {c.tpot_ms:g} ms")
    if c.e2e_p50_s is not None and p.e2e_s > c.e2e_p50_s:
        out.append(f"end-to-end {p.e2e_s:.3g} s > {c.e2e_p50_s:g} s")
    return out


def _bucket_perf(
    model: ModelSpec,
    w: ServeWorkload,
    gpu: GpuSpec,
    tp: int,
    batch: int,
    bucket: Bucket,
    a: PerfAssumptions,
    factor: float = 1.0,
) -> BucketPerf:
    """A replica's speed on one request bucket, its times × `factor` (the serving band's
    multiplier at the job's confidence: latencies longer, throughput lower by it)."""
    setup = _setup(w.weight_precision, w.kv_cache_precision, batch, bucket, w.stack)
    perf = serving_perf(model, setup, gpu, tp, bucket.prompt_tokens, bucket.output_tokens, a)
    mem = serving_memory(model, setup, tp, a)
    return BucketPerf(
        requests_per_s=perf.requests_per_s / factor,
        ttft_s=perf.ttft_s * factor,
        tpot_s=perf.tpot_s * factor,
        e2e_s=(perf.ttft_s + perf.tpot_s * max(bucket.output_tokens - 1, 0)) * factor,
        memory_gib=mem.total,
        memory=mem,
    )


def _rates(p: tuple[BucketPerf | None, ...]) -> tuple[float, ...]:
    return tuple(x.requests_per_s if x else 0.0 for x in p)


def _pareto_batches(
    rows: list[tuple[int, tuple[BucketPerf | None, ...]]],
) -> list[tuple[int, tuple[BucketPerf | None, ...]]]:
    """Drop batches whose per-bucket rates are all ≤ another batch's (same price, less capacity)."""
    keep = []
    for i, (b, p) in enumerate(rows):
        r = _rates(p)
        if not any(r):
            continue
        dominated = any(
            all(x >= y for x, y in zip(_rates(q), r, strict=True)) and (_rates(q) != r or j < i)
            for j, (_, q) in enumerate(rows)
            if j != i
        )
        if not dominated:
            keep.append((b, p))
    return keep


Template = tuple[int, int, tuple[BucketPerf | None, ...]]  # (tp, batch, per-bucket perf)


def _templates(
    model: ModelSpec,
    w: ServeWorkload,
    c: ServeConstraints,
    gpu: GpuSpec,
    cheapest: Offering,
    a: PerfAssumptions,
    best: BestLatency,
    rejected: list[tuple[int | None, str]],
) -> list[Template]:
    """Non-dominated (tp, batch) choices of one hardware class that meet the targets; the
    rejections as (tp or None, reason), for every offering of the class; best latencies are
    labelled with the class's cheapest offering."""
    buckets = w.request_buckets()
    factor = serve_band_for(gpu, w.stack, a).multiplier(c.confidence)
    per_instance = cheapest.gpus_per_instance
    tps = tp_degrees(model, per_instance, c.tp_degrees)
    if not tps:
        rejected.append(
            (
                None,
                f"no TP degree divides both the {per_instance} GPUs and the "
                f"{model.heads} heads / {model.n_kv_heads} KV heads",
            )
        )
        return []
    templates: list[Template] = []
    for tp in tps:
        label = option_label(cheapest, tp)
        limits = [
            max_batch_that_fits(
                model, w.weight_precision, w.kv_cache_precision, gpu, tp, bk, c.max_batch, a, w.stack
            )
            for bk in buckets
        ]
        if not any(limits):
            need = serving_memory(
                model, _setup(w.weight_precision, w.kv_cache_precision, 1, buckets[0], w.stack), tp, a
            )
            if (
                best.min_memory is None
                or need.device / gpu.memory_gib < best.min_memory[0] / best.min_memory[2]
            ):
                best.min_memory = (need.device, label, gpu.memory_gib)
            rejected.append(
                (
                    tp,
                    f"needs {need.device:.1f} GiB per GPU at batch 1 "
                    f"(weights {need.weights:.1f}), GPU has {gpu.memory_gib:g}",
                )
            )
            continue
        rows: list[tuple[int, tuple[BucketPerf | None, ...]]] = []
        why: set[str] = set()
        for batch in batch_ladder(max(limits)):
            perfs: list[BucketPerf | None] = []
            for i, bk in enumerate(buckets):
                if batch > limits[i]:
                    perfs.append(None)
                    continue
                p = _bucket_perf(model, w, gpu, tp, batch, bk, a, factor)
                if batch == 1:
                    best.see(best.ttft, i, p.ttft_s, label)
                    best.see(best.tpot, i, p.tpot_s, label)
                    best.see(best.e2e, i, p.e2e_s, label)
                bad = latency_violations(p, c)
                why.update(bad)
                perfs.append(None if bad else p)
            rows.append((batch, tuple(perfs)))
        kept = _pareto_batches(rows)
        if not kept:
            rejected.append(
                (
                    tp,
                    f"misses the latency targets at every batch "
                    f"({'; '.join(sorted(why)) or 'no batch fits'})",
                )
            )
        templates.extend((tp, b, p) for b, p in kept)
    return templates


def replica_options(
    model: ModelSpec,
    workload: ServeWorkload,
    constraints: ServeConstraints,
    offerings: Sequence[Offering],
    assumptions: PerfAssumptions | None = None,
) -> tuple[list[ReplicaOption], list[str], BestLatency]:
    """Every non-dominated (offering, tp, batch) replica option, the rejections, best latencies.

    Offerings with the same GPU (and link) and GPUs per instance perform alike: for each such
    class only the cheaper offerings up to the first one without an instance limit are kept
    (a dearer offering of the same class can never be in an optimal plan). A rejection is
    "label: reason", one per offering of the class (option_label; regions of one instance
    type collapse), without repeats, sorted by (label, reason).
    """
    a = assumptions or PerfAssumptions()
    classes: dict[tuple[GpuSpec, int], list[Offering]] = {}
    for off in offerings:
        classes.setdefault((off.gpu, off.gpus_per_instance), []).append(off)
    best = BestLatency()
    rejected: set[tuple[str, str]] = set()
    options: list[ReplicaOption] = []
    for (gpu, _per_instance), items in classes.items():
        items = sorted(items, key=lambda o: (served_hour_usd(o, workload.hours_per_day), o.key))
        why: list[tuple[int | None, str]] = []
        templates = _templates(model, workload, constraints, gpu, items[0], a, best, why)
        rejected.update((option_label(off, tp), reason) for tp, reason in why for off in items)
        if not templates:
            continue
        for off in items:
            for tp, batch, perf in templates:
                options.append(ReplicaOption(off, tp, batch, perf, workload.hours_per_day))
            if off.max_instances is None:
                break
    return options, [f"{label}: {reason}" for label, reason in sorted(rejected)], best
