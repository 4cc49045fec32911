"""Why a serving job has no plan: the binding latency target, memory limit or fleet limit.

Each explanation names the target or limit and the nearest feasible change (e.g. "nearest fix:
ttft_s = 0.35"), from the fastest latencies seen while enumerating the replica options and,
for a fleet limit, a re-solve without max_replicas.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace
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


def _bucket_miss(
    i: int, bk: Bucket, c: ServeConstraints, best: BestLatency, loosest: dict[str, tuple[float, str]]
) -> str:
    """Why bucket `i` has no option: no instance fits it, or the first latency target below
    the fastest option (its nearest fix kept in `loosest`), or the targets only together."""
    if i not in best.ttft:
        return f"no instance fits its {bk.context}-token sequences"
    if c.ttft_s is not None and best.ttft[i][0] > c.ttft_s:
        v, lab = best.ttft[i]
        fix = _keep_loosest(loosest, "ttft_s", math.ceil(v * 1000) / 1000)
        return (
            f"TTFT {c.ttft_s:g} s is below the fastest prefill of any option: "
            f"{v:.3g} s on {lab} ({bk.prompt_tokens}-token prompt); nearest fix: "
            f"ttft_s = {fix:g}, a faster GPU or a shorter prompt"
        )
    if c.tpot_ms is not None and best.tpot[i][0] * 1e3 > c.tpot_ms:
        v, lab = best.tpot[i]
        fix = _keep_loosest(loosest, "tpot_ms", math.ceil(v * 1e4) / 10)
        return (
            f"TPOT {c.tpot_ms:g} ms is below the fastest decode of any option: "
            f"{v * 1e3:.3g} ms per token on {lab} at batch 1; nearest fix: "
            f"tpot_ms = {fix:g}, more TP or a lower-bit weight format"
        )
    if c.e2e_p50_s is not None and best.e2e[i][0] > c.e2e_p50_s:
        v, lab = best.e2e[i]
        fix = _keep_loosest(loosest, "e2e_p50_s", math.ceil(v * 100) / 100)
        return (
            f"end-to-end {c.e2e_p50_s:g} s is below the fastest of any option: "
            f"{v:.3g} s on {lab} at batch 1; nearest fix: e2e_p50_s = "
            f"{fix:g} or fewer output tokens"
        )
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
