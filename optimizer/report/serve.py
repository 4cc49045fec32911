"""The JSON contract of serving results: `ccopt serve --json` and `ccopt serve-compare --json`."""

from __future__ import annotations

from typing import Any

from optimizer.errors import Status
from optimizer.report.contract.common import emit, explanation_of, rejected_list, significant
from optimizer.report.contract.serve import ServeCompareOutput, ServeOutput
from optimizer.report.place import offering_place
from optimizer.report.train import solver_block
from optimizer.solve.serve.result import Deployment, ServeComparison, ServeResult

__all__ = ["serve_json", "serve_compare_json"]


def _memory(d: Deployment) -> dict[str, float]:
    """Memory per GPU of the deployment's most demanding served bucket."""
    peak = d.peak_memory
    if peak.memory is not None:
        return peak.memory.as_dict(2)
    return {"weights": 0.0, "overhead": 0.0, "total": round(peak.memory_gib, 2)}


def _deployment_json(d: Deployment, quant: str) -> dict[str, Any]:
    o, off = d.option, d.option.offering
    return {
        **offering_place(off),
        "gpus": d.gpus,
        "gpu_generation": off.gpu.generation,
        "tp": o.tp,
        "precision": quant,
        "quantization": quant,
        "replicas": d.replicas,
        "instances": d.instances,
        "gpus_per_instance": off.gpus_per_instance,
        "batch": o.batch,
        "usd_per_hour": round(d.usd_per_hour, 4),
        "usd_per_instance_hour": round(o.usd_per_instance_hour, 4),
        "requests_per_s": round(d.requests_per_s, 4),
        "capacity_requests_per_s": round(d.capacity_rps, 4),
        "requests_per_s_per_replica": [round(r, 4) for r in o.rates],
        "bucket_requests_per_s": [round(r, 4) for r in d.assigned_rps],
        "ttft_s": significant(d.ttft_s),
        "tpot_ms": significant(d.tpot_s * 1e3),
        "e2e_s": significant(d.e2e_s),
        "memory_gib": _memory(d),
        "price_flags": [{"rule": f.rule, "reason": f.reason} for f in getattr(off, "flags", ())],
        "price_source": off.price_origin,
        "price": off.price_info(),
    }


def serve_json(result: ServeResult) -> dict[str, Any]:
    """The `ccopt serve --json` contract (DESIGN.md), with added fields."""
    return emit(ServeOutput, _serve_data(result))


def _serve_data(result: ServeResult) -> dict[str, Any]:
    w, c = result.workload, result.constraints
    job = {
        "name": result.name,
        "model": result.model.name,
        "params": result.params,
        "precision": w.weight_precision,
        "quantization": w.weight_precision,
        "load_requests_per_s": significant(result.load_rps),
        "hours_per_day": w.hours_per_day,
        "buckets": [b.model_dump() for b in result.buckets],
        "targets": {"ttft_s": c.ttft_s, "tpot_ms": c.tpot_ms, "e2e_p50_s": c.e2e_p50_s},
        "confidence": c.confidence,
        "redundancy_spare_replicas": c.spare_replicas,
        "spare_instances_per_deployment": c.spare_replicas,
        "headroom_required": c.min_capacity_headroom_fraction,
        "min_capacity_headroom_fraction": c.min_capacity_headroom_fraction,
        "kv_cache_precision": w.kv_cache_precision,
        "stack": w.stack,
    }
    solver = dict(result.solver)
    if solver.get("objective_usd_per_hour") is not None:
        solver["objective_usd_per_hour"] = round(solver["objective_usd_per_hour"], 2)
    out: dict[str, Any] = {
        "status": str(result.status),
        "plan": None,
        "explanation": explanation_of(result.explanation, result.binding, [dict(f) for f in result.fixes]),
        "solver": solver_block(solver, str(result.status)),
        "job": job,
        "rejected": rejected_list([r.split(": ", 1) if ": " in r else (r, "") for r in result.rejected]),
        "notes": list(result.notes),
    }
    if result.catalog is not None:
        out["catalog"] = result.catalog
    if result.status == Status.INFEASIBLE:
        return out
    deps = [_deployment_json(d, w.weight_precision) for d in result.deployments]
    out["plan"] = {
        "deployments": deps,
        "usd_per_hour": round(result.usd_per_hour, 4),
        "usd_per_month": round(result.usd_per_month, 2),
        "capacity_requests_per_s": round(result.capacity_rps, 4),
        "load_requests_per_s": round(result.load_rps, 4),
        "headroom": None if result.headroom is None else round(result.headroom, 4),
        "ttft_s": significant(result.ttft_s),
        "tpot_ms": significant(result.tpot_s * 1e3),
        "e2e_s": significant(result.e2e_s),
        "replicas": result.replicas,
        "gpus": result.gpus,
        "spare_replicas": result.spare_replicas,
        "instance_failures_survived": result.instance_failures_survived,
    }
    return out


def serve_compare_json(comparison: ServeComparison) -> dict[str, Any]:
    """The `ccopt serve-compare --json` contract.

    Returns:
        {"status", "best": serve_json of the whole job, "per_gpu": {gpu_id: the plan of
        serve_json or null}, "per_gpu_explanation": {gpu_id: why it has no plan}}
    """
    per_gpu: dict[str, Any] = {}
    why: dict[str, Any] = {}
    for gpu, result in comparison.per_gpu.items():
        data = _serve_data(result)
        per_gpu[gpu] = data["plan"]
        if data["explanation"] is not None:
            why[gpu] = data["explanation"]
    best = _serve_data(comparison.best)
    return emit(
        ServeCompareOutput,
        {"status": best["status"], "best": best, "per_gpu": per_gpu, "per_gpu_explanation": why},
    )
