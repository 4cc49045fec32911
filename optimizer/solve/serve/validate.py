"""Plain-Python re-check of a serving plan against every constraint (run after each solve).

Recomputed from the replica options in floats, independent of the integer model: each bucket's
load (with headroom) assigned in full, busy time of each deployment within its replicas minus
the spares, memory and latency targets of every used option, instance limits per offering,
max_replicas, and the cost per served hour from the one pricing rule (hourly_usd) against the
solver's objective in cents.
"""

from __future__ import annotations

import math

from optimizer.errors import SolverError, Status
from optimizer.pricing.offering import hourly_usd
from optimizer.solve.serve.options import latency_violations
from optimizer.solve.serve.result import ServeResult
from optimizer.units import CENTS_PER_USD, HOURS_PER_DAY

__all__ = ["serve_violations", "validate_serve"]

#: relative slack for float sums (the integer model rounds time up, so a valid plan has margin)
_REL_TOL = 1e-9


def _load_violations(result: ServeResult) -> list[str]:
    c = result.constraints
    out = []
    for b, bucket in enumerate(result.workload.request_buckets()):
        need = result.load_rps * bucket.share * (1 + c.min_capacity_headroom_fraction)
        got = sum(d.assigned_rps[b] for d in result.deployments)
        if not math.isclose(got, need, rel_tol=1e-6, abs_tol=1e-9):
            out.append(f"bucket {b + 1}: {got:.6g} requests/s assigned, load is {need:.6g}")
    return out


def _deployment_violations(result: ServeResult) -> list[str]:
    c = result.constraints
    out = []
    for d in result.deployments:
        o = d.option
        name = o.key
        if d.instances < 1:
            out.append(f"{name}: {d.instances} instances")
        busy = 0.0
        for b, (perf, rps) in enumerate(zip(o.perf, d.assigned_rps, strict=True)):
            if rps < 0:
                out.append(f"{name}: negative load {rps:g} on bucket {b + 1}")
            if rps > 0 and perf is None:
                out.append(f"{name}: assigned bucket {b + 1}, which it cannot serve")
            elif perf is not None and rps > 0:
                busy += rps / perf.requests_per_s
        rpi = o.replicas_per_instance
        up = (d.instances - c.spare_replicas) * rpi  # N+k: k whole instances may fail
        if busy > up * (1 + _REL_TOL):
            out.append(
                f"{name}: busy {busy:.6g} replica-seconds per second > {up} replicas "
                f"(({d.instances} − {c.spare_replicas} spare) instances × {rpi})"
            )
        for b, perf in enumerate(o.perf):
            if perf is None:
                continue
            out.extend(f"{name}, bucket {b + 1}: {v}" for v in latency_violations(perf, c))
            if perf.memory_gib > o.offering.gpu.memory_gib:
                out.append(
                    f"{name}: needs {perf.memory_gib:.1f} GiB per GPU, GPU has {o.offering.gpu.memory_gib:g}"
                )
        if o.offering.gpus_per_instance % o.tp:
            out.append(f"{name}: TP{o.tp} does not divide {o.offering.gpus_per_instance} GPUs")
    return out


def _limit_violations(result: ServeResult) -> list[str]:
    c = result.constraints
    out = []
    per_offering: dict[str, int] = {}
    for d in result.deployments:
        per_offering[d.option.offering.key] = per_offering.get(d.option.offering.key, 0) + d.instances
    limits = {d.option.offering.key: d.option.offering.max_instances for d in result.deployments}
    for key, used in per_offering.items():
        limit = limits[key]
        if limit is not None and used > limit:
            out.append(f"{key}: {used} instances > limit {limit}")
    replicas = sum(d.replicas for d in result.deployments)
    if c.max_replicas is not None and replicas > c.max_replicas:
        out.append(f"{replicas} replicas > max_replicas = {c.max_replicas}")
    return out


def _cost_violations(result: ServeResult) -> list[str]:
    hours = result.workload.hours_per_day
    usd = 0.0
    instances = 0.0
    for d in result.deployments:
        running, fixed = hourly_usd(d.option.offering)
        usd += d.instances * (running + fixed * HOURS_PER_DAY / hours)
        instances += d.instances
    out = []
    if not math.isclose(usd, result.usd_per_hour, rel_tol=_REL_TOL, abs_tol=1e-9):
        out.append(f"cost {result.usd_per_hour:.6g} USD/h != {usd:.6g} recomputed")
    cents = result.solver.get("objective_cents")
    # the solver prices each instance in cents rounded up: usd·100 ≤ cents < usd·100 + instances
    if cents is not None and not usd * CENTS_PER_USD - 1e-6 <= cents < usd * CENTS_PER_USD + instances + 1e-6:
        out.append(f"solver objective {cents} cents does not match {usd:.6g} USD/h")
    return out


def serve_violations(result: ServeResult) -> list[str]:
    """Every constraint the plan in `result` breaks (empty list = valid; infeasible = valid)."""
    if result.status == Status.INFEASIBLE:
        return [] if not result.deployments else ["an infeasible result carries deployments"]
    if not result.deployments:
        return ["a feasible result without deployments"]
    return (
        _load_violations(result)
        + _deployment_violations(result)
        + _limit_violations(result)
        + _cost_violations(result)
    )


def validate_serve(result: ServeResult) -> ServeResult:
    """Return `result` if its plan meets every constraint.

    Raises:
        SolverError: naming each violated constraint (a bug in the model, not user input).
    """
    problems = serve_violations(result)
    if problems:
        raise SolverError(f"serving plan {result.name!r} fails validation: " + "; ".join(problems))
    return result
