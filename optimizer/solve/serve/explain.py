"""Why a serving job has no plan: the binding latency target, memory limit or fleet limit.

Each explanation names the target or limit and the nearest feasible change (e.g. "nearest fix:
ttft_s = 0.35"), from the fastest latencies seen while enumerating the replica options and,
for a fleet limit, a re-solve without max_replicas.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from optimizer.errors import Status
from optimizer.inputs.jobs.serve import Bucket, ServeConstraints, ServeWorkload
from optimizer.model.memory import serving_weight_bytes
from optimizer.model.spec import ModelSpec
from optimizer.solve.cpsat.solver import SolverConfig
from optimizer.solve.serve.model import solve_problem
from optimizer.solve.serve.options import BestLatency
from optimizer.solve.serve.problem import IntProblem
from optimizer.units import CENTS_PER_USD, GIB

__all__ = ["diagnose_no_options", "diagnose_solver_infeasible", "no_options_binding"]


def _shown(v: Iterable[str] | None) -> list[str] | str:
    return list(v) if v else "any"


def no_options_binding(best: BestLatency, n_offerings: int) -> str:
    """What diagnose_no_options blames: filters, memory or latency."""
    return "filters" if n_offerings == 0 else "memory" if not best.ttft else "latency"


def _fix(change: str, requirement: str, usd_per_hour: float | None = None) -> dict[str, Any]:
    """One structured fix, as the training planner's: the change, what it relaxes, and what the
    plan after it costs per served hour (None where it was not re-solved)."""
    return {"change": change, "requirement": requirement, "usd_per_hour": usd_per_hour}


def _keep_loosest(fixes: dict[str, tuple[float, str]], requirement: str, value: float) -> float:
    """A latency fix over all buckets must satisfy each: keep the loosest value (with its
    shown form); `value` returned, for the bucket's own line."""
    if requirement not in fixes or value > fixes[requirement][0]:
        fixes[requirement] = (value, f"{value:g}")
    return value


def diagnose_no_options(
    model: ModelSpec, w: ServeWorkload, c: ServeConstraints, best: BestLatency, n_offerings: int
) -> tuple[str, tuple[dict[str, Any], ...]]:
    """Why no replica option serves the job, and the nearest fixes as structured changes:
    no offering, no memory fit, or a latency target below the fastest option (per bucket; the
    fix is the loosest value any bucket needs). Costs are not known without a re-plan (None)."""
    buckets = w.request_buckets()
    if n_offerings == 0:
        return (
            f"no offering matches the filters (gpu_types={_shown(c.gpu_types)}, providers="
            f"{_shown(c.providers)}, regions={_shown(c.regions)}, pricing={list(c.pricing)}) "
            "and no [[hardware]] is given; widen the filters",
            (
                _fix(
                    "widen constraints.gpu_types / providers / regions / pricing, or add "
                    "[[hardware.owned]] / [[hardware.buy]]",
                    "filters",
                ),
            ),
        )
    if not best.ttft:  # nothing fits memory at batch 1
        weights = serving_weight_bytes(model, w.weight_precision) / GIB
        int4 = serving_weight_bytes(model, "int4") / GIB
        need = best.min_memory
        where = f"; the closest is {need[1]}: {need[0]:.1f} GiB per GPU of {need[2]:g}" if need else ""
        fixes = [_fix("allow GPUs with more memory or more GPUs per instance", "memory")]
        if w.weight_precision != "int4":
            fixes.append(_fix('workload.precision = "int4"', "memory"))
        return (
            f"{model.name} at {w.weight_precision} ({weights:.1f} GiB of weights) plus the KV "
            f"cache of one {buckets[0].context}-token sequence fits no allowed instance"
            f"{where}; allow GPUs with more memory or more GPUs per instance, or quantize "
            f"(int4 weights: {int4:.1f} GiB)",
            tuple(fixes),
        )
    parts = []
    loosest: dict[str, tuple[float, str]] = {}
    for i, bk in enumerate(buckets):
        tag = "" if len(buckets) == 1 else f"bucket {i + 1} ({bk.prompt_tokens}+{bk.output_tokens} tokens): "
        parts.append(tag + _bucket_miss(i, bk, c, best, loosest))
    latency = tuple(_fix(f"constraints.{req} = {shown}", req) for req, (_, shown) in sorted(loosest.items()))
    return ("; ".join(parts) if parts else "no replica option meets the targets"), latency


@dataclass(frozen=True)
class _LatencyTarget:
    """A latency target as _bucket_miss holds it against a bucket's fastest option."""

    name: str  # the ServeConstraints field, also the name of its fix
    fastest: Callable[[BestLatency], dict[int, tuple[float, str]]]  # seconds and the option, per bucket
    per_s: float  # the target's units per second
    fix: Callable[[float], float]  # the nearest fix from the fastest seconds, rounded up
    words: str  # the explanation: limit, shown (fastest, target units), lab, prompt, fix


_LATENCY_TARGETS = (
    _LatencyTarget(
        "ttft_s",
        lambda best: best.ttft,
        1,
        lambda v: math.ceil(v * 1000) / 1000,
        "TTFT {limit:g} s is below the fastest prefill of any option: {shown:.3g} s on {lab} "
        "({prompt}-token prompt); nearest fix: ttft_s = {fix:g}, a faster GPU or a shorter prompt",
    ),
    _LatencyTarget(
        "tpot_ms",
        lambda best: best.tpot,
        1e3,
        lambda v: math.ceil(v * 1e4) / 10,
        "TPOT {limit:g} ms is below the fastest decode of any option: {shown:.3g} ms per token on "
        "{lab} at batch 1; nearest fix: tpot_ms = {fix:g}, more TP or a lower-bit weight format",
    ),
    _LatencyTarget(
        "e2e_p50_s",
        lambda best: best.e2e,
        1,
        lambda v: math.ceil(v * 100) / 100,
        "end-to-end {limit:g} s is below the fastest of any option: {shown:.3g} s on {lab} at "
        "batch 1; nearest fix: e2e_p50_s = {fix:g} or fewer output tokens",
    ),
)


def _bucket_miss(
    i: int, bk: Bucket, c: ServeConstraints, best: BestLatency, loosest: dict[str, tuple[float, str]]
) -> str:
    """Why bucket `i` has no option: no instance fits it, or the first latency target below
    the fastest option (its nearest fix kept in `loosest`), or the targets only together."""
    if i not in best.ttft:
        return f"no instance fits its {bk.context}-token sequences"
    for t in _LATENCY_TARGETS:
        limit: float | None = getattr(c, t.name)
        if limit is not None and t.fastest(best)[i][0] * t.per_s > limit:
            v, lab = t.fastest(best)[i]
            fix = _keep_loosest(loosest, t.name, t.fix(v))
            return t.words.format(limit=limit, shown=v * t.per_s, lab=lab, prompt=bk.prompt_tokens, fix=fix)
    return (
        f"no single option meets all latency targets together "
        f"(fastest TTFT {best.ttft[i][0]:.3g} s on {best.ttft[i][1]}, fastest "
        f"TPOT {best.tpot[i][0] * 1e3:.3g} ms on {best.tpot[i][1]}); relax one"
    )


def diagnose_solver_infeasible(
    problem: IntProblem, c: ServeConstraints, load: float, config: SolverConfig | None
) -> tuple[str, tuple[dict[str, Any], ...]]:
    """Why the options cannot carry the load, and the fixes: an unservable bucket,
    max_replicas (with the replicas and USD per served hour of the cheapest plan without it)
    or the instance limits."""
    served = [
        b
        for b, u in enumerate(problem.load_units)
        if u and not any(o.time_per_unit[b] is not None for o in problem.options)
    ]
    if served:
        return (
            f"no option can serve bucket(s) {', '.join(str(b + 1) for b in served)} within "
            "the targets; relax the latency targets for them",
            (_fix("relax the latency targets (ttft_s, tpot_ms, e2e_p50_s)", "latency"),),
        )
    headroom = c.min_capacity_headroom_fraction
    if c.max_replicas is not None:
        relaxed = replace(problem, max_replicas=None)
        sol = solve_problem(relaxed, config)
        if sol.status != Status.INFEASIBLE:
            pairs = zip(relaxed.options, sol.counts, strict=True)
            need = sum(o.replicas_per_instance * v for o, v in pairs)
            cost = None if sol.cost_cents is None else round(sol.cost_cents / CENTS_PER_USD, 2)
            return (
                f"max_replicas = {c.max_replicas} is too few for {load:.3g} requests/s "
                f"(headroom {headroom:g}, {c.spare_replicas} spare instance(s)); the "
                f"cheapest plan needs {need} replicas; nearest fix: max_replicas = {need}",
                (_fix(f"constraints.max_replicas = {need}", "max_replicas", cost),),
            )
    return (
        f"the instance limits (owned boxes, max_gpus, catalog max_instances) cannot carry "
        f"{load:.3g} requests/s with headroom {headroom:g} and {c.spare_replicas} spare "
        "instance(s) per deployment; add hardware, allow cloud offerings or lower the load",
        (_fix("add hardware (num_boxes, max_gpus), allow cloud offerings or lower the load", "capacity"),),
    )
