"""The JSON contract of training results: `ccopt plan --json` and `ccopt compare --json`."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from optimizer.model.profile import is_profile
from optimizer.report.band_basis import basis_dict
from optimizer.report.contract.common import emit, explanation_of, rejected_list
from optimizer.report.contract.train import CompareOutput, PlanOutput
from optimizer.report.mix import mix_dict
from optimizer.report.place import place_dict
from optimizer.report.rent_buy import break_even_dict, verdict_dict
from optimizer.report.settle import settle_dict
from optimizer.solve.train.enumerate import Candidate
from optimizer.solve.train.figures import JobFigures, PlanFigures
from optimizer.solve.train.mix import MixOutcome
from optimizer.solve.train.plan import PlanResult
from optimizer.solve.train.prepare import PreparedJob
from optimizer.units import HOURS_PER_DAY

if TYPE_CHECKING:  # a type only: `ccopt plan` does not load the comparison
    from optimizer.solve.train.compare import CompareResult

__all__ = ["plan_dict", "plan_json", "compare_json", "solver_block", "figures_of"]


NO_DATA_NOTE = "no [data] section: dataset transfer, storage and the data loader are not counted or checked"


def data_block(c: Candidate, f: PlanFigures) -> dict[str, Any]:
    """The plan's data lines (what `cost_usd` added for [data])."""
    d, lines = c.offering.data, f.data
    if lines is None:
        return {"counted": False, "note": NO_DATA_NOTE}
    return {
        "counted": True,
        "dataset_gb": d.dataset_gb,
        "egress_gb": d.egress_gb,
        "egress_usd_per_gb": d.egress_usd_per_gb,
        "egress_usd": round(lines.egress_usd, 2),
        "route": d.route,
        "storage_usd_per_gb_month": d.storage_usd_per_gb_month,
        "dataset_storage_usd": round(lines.dataset_storage_usd, 2),
        "checkpoint_gb": round(d.checkpoint_gb, 2),
        "checkpoint_every_hours": d.checkpoint_every_h,
        "checkpoints_kept": d.checkpoints_kept,
        "checkpoint_storage_usd": round(lines.checkpoint_storage_usd, 2),
        "storage_usd": round(lines.storage_usd, 2),
        "total_usd": round(lines.total_usd, 2),
        "share_of_cost": round(lines.share_of_cost, 6),
        "unknown": list(d.unknown),
    }


def host_block(c: Candidate, f: PlanFigures) -> dict[str, Any] | None:
    h = c.host
    if h is None:
        return None
    return {
        "unit": f.host_unit,
        "vcpus": h.vcpus,
        "ram_gib": h.ram_gib,
        "local_nvme_gb": h.local_nvme_gb,
        "ram_needed_gib": round(h.ram_needed_gib, 2),
        "offloaded_gib_per_gpu": round(h.offloaded_gib_per_gpu, 2),
        "gpu_samples_per_s": round(h.gpu_samples_per_s, 1),
        "loader_samples_per_s": None if h.loader_samples_per_s is None else round(h.loader_samples_per_s, 1),
        "loader_bound": f.loader_bound,
        "slowdown": round(h.slowdown, 4),
        "notes": list(h.notes),
    }


def figures_of(c: Candidate) -> PlanFigures:
    """The figures the solve layer attached to a plan (every plan of a result has them)."""
    if c.figures is None:
        raise ValueError(
            "a plan without figures: results attach them (optimizer.solve.train.plan_figures.with_figures)"
        )
    return c.figures


def plan_dict(c: Candidate, figures: PlanFigures | None = None) -> dict[str, Any]:
    """A plan in the JSON contract of DESIGN.md (plus extra fields): its own fields and the
    figures solve attached, rounded (`figures`: held by the result instead, as a batch does)."""
    off, f = c.offering, figures or figures_of(c)
    return {
        **place_dict(c),
        "gpus_per_instance": off.gpus_per_instance,
        "layout": c.layout.as_dict(),
        "global_batch": c.layout.global_batch,
        "steps": c.steps,
        "step_time_s": round(c.step.time_s, 3),
        "hours": round(c.hours, 2),
        "step_time_s_p10": round(f.step_time_s_p10, 3),
        "step_time_s_p50": round(f.step_time_s_p50, 3),
        "step_time_s_p90": round(f.step_time_s_p90, 3),
        "days": round(f.days, 2),
        "usd_per_hour": round(c.usd_per_hour, 2),
        "days_p10": round(f.days_p10, 2),
        "days_p50": round(f.days_p50, 2),
        "days_p90": round(f.days_p90, 2),
        "cost_usd": round(c.cost_usd, 2),
        "capital_usd": round(c.capital_usd, 2),
        "running_usd": round(f.running_usd, 2),
        "cost_usd_p10": round(f.cost_usd_p10, 2),
        "cost_usd_p50": round(f.cost_usd_p50, 2),
        "cost_usd_p90": round(f.cost_usd_p90, 2),
        "confidence": f.confidence,
        "interval_basis": basis_dict(f.band_cases, f.band_sources, f.band_basis),
        "mfu_unclipped": None if c.step.mfu_unclipped is None else round(c.step.mfu_unclipped, 4),
        "gpu_hours": round(f.gpu_hours, 2),
        "memory_gib": c.memory.as_dict(2),
        "gpu_memory_gib": off.gpu.memory_gib,
        "memory_headroom_gib": round(f.memory_headroom_gib, 2),
        "memory_headroom_fraction": round(f.memory_headroom_fraction, 4),
        "memory_headroom_required_gib": None
        if f.memory_headroom_required_gib is None
        else round(f.memory_headroom_required_gib, 2),
        "memory_device_gib_p10": round(f.memory_device_gib_p10, 2),
        "memory_device_gib_p90": round(f.memory_device_gib_p90, 2),
        "memory_confidence": f.memory_confidence,
        "step": c.step.as_dict(),
        "intra_node_link": off.gpu.intra_node_link,
        "intra_node_path": f.intra_node_path,
        "intra_node_bw_gb_s": round(f.intra_node_bw_gb_s, 2),
        "tokens_per_s": round(c.step.tokens_per_s, 1),
        "tokens_per_s_per_gpu": round(c.step.tokens_per_s_per_gpu, 1),
        "mfu": round(c.step.mfu, 4),
        "tokens": f.tokens,
        "sample_unit": f.sample_unit,
        "samples_per_s": None if f.samples_per_s is None else round(f.samples_per_s, 2),
        "inter_node_gbps": off.inter_node_gbps,
        "commitment_hours": off.commitment_hours,
        "kind": off.kind,
        "calibrated": c.step.calibrated,
        "memory_calibrated": c.memory.calibrated,
        "memory_activation_factor": None
        if c.memory.activation_factor is None
        else round(c.memory.activation_factor, 4),
        "inter_node_kind": off.inter_node_kind,
        "inter_node_is_default": off.inter_node_is_default,
        "options": dict(f.options),
        "price_flags": [{"rule": fl.rule, "reason": fl.reason} for fl in getattr(off, "flags", ())],
        "price_source": off.price_origin,
        "price": off.price_info(),
        "terms": terms_block(c),
        "warnings": list(f.warnings),
        "spot": spot_block(c),
        "goodput": goodput_block(c),
        "data_usd": round(f.data_usd, 2),
        "data": data_block(c, f),
        "host": host_block(c, f),
    }


def terms_block(c: Candidate) -> dict[str, Any] | None:
    """The seller's terms a plan pays (None: billed per hour used): the hours billed against the
    hours run, the minimum term, the billing increment, the longest block and where they are read."""
    terms = c.offering.terms
    if not terms.any and terms.min_nodes <= 1:
        return None
    billed = terms.billed(c.hours)
    return {
        "billed_hours": round(billed, 3),
        "run_hours": round(c.hours, 3),
        "idle_hours": round(billed - c.hours, 3),
        "min_term_hours": terms.min_term_hours,
        "billing_increment_hours": terms.billing_increment_hours,
        "max_term_hours": terms.max_term_hours,
        "min_nodes": terms.min_nodes,
        "max_nodes": terms.max_nodes,
        "words": terms.describe(),
        "source": terms.source,
    }


def goodput_block(c: Candidate) -> dict[str, Any] | None:
    """Where the plan's hours go (None for a hand-made row without the breakdown)."""
    g = c.goodput
    if g is None:
        return None
    interval = None if math.isinf(g.checkpoint_interval_h) else round(g.checkpoint_interval_h, 3)
    running_days = (g.wall_h - g.startup_h) / HOURS_PER_DAY  # interruptions stop a running job
    return {
        "compute_hours": round(g.compute_h, 3),
        "checkpoint_hours": round(g.checkpoint_h, 3),
        "failures_hours": round(g.failures_h, 3),
        "startup_hours": round(g.startup_h, 3),
        "evaluation_hours": round(g.evaluation_h, 3),
        "conversion_hours": round(g.conversion_h, 3),
        "goodput": round(g.goodput, 4),
        "failures_per_gpu_day": float(f"{g.failures_per_gpu_day:.4g}"),
        "failure_rate_source": g.failure_rate_source,
        "interruptions_per_day": round(g.expected_interruptions / running_days, 4)
        if running_days > 0
        else 0.0,
        "expected_interruptions": round(g.expected_interruptions, 3),
        "checkpoint_interval_h": interval,
    }


def spot_block(c: Candidate) -> dict[str, Any] | None:
    """The interruption estimate of a spot plan (None otherwise or under the fixed rule)."""
    s = c.spot
    if s is None:
        return None
    return {
        "interruptions_per_instance_day": s.interruptions_per_instance_day,
        "rate_source": c.offering.spot_rate_source,
        "expected_interruptions": round(s.expected_interruptions, 3),
        "checkpoint_gib": round(s.checkpoint_gib, 2),
        "checkpoint_write_s": round(s.checkpoint_write_s, 1),
        "checkpoint_interval_h": round(s.checkpoint_interval_h, 3),
        "restart_s": s.restart_s,
        "work_hours": round(s.work_h, 3),
        "expected_hours": round(s.expected_wall_h, 3),
    }


def plan_json(result: PlanResult) -> dict[str, Any]:
    """A PlanResult in the `ccopt plan --json` contract."""
    best = result.plan
    out: dict[str, Any] = {
        "status": str(result.status),
        "plan": dict(plan_dict(best), tensor_parallel_avoided=result.tp_avoided) if best else None,
        "alternatives": [
            dict(plan_dict(a), extra_cost_usd=round(figures_of(a).extra_cost_usd or 0.0, 2))
            for a in result.alternatives
        ]
        if best
        else [],
        "explanation": explanation_of(result.explanation, result.binding, [dict(f) for f in result.fixes]),
        "binding_constraint": result.binding,
        "solver": solver_block(result.solver, str(result.status)),
        "notes": list(result.notes),
    }
    if result.cheaper_if_later is not None:
        out["cheaper_if_later"] = plan_dict(result.cheaper_if_later)
    if result.median_plan is not None:
        out["median_plan"] = {
            **plan_dict(result.median_plan),
            "rejected_because": result.median_plan_rejected,
        }
    if result.sizing_run is not None and result.prepared is not None:
        out["sizing_run"] = settle_dict(result.sizing_run, result.prepared.job.constraints.confidence)
    if result.pareto:
        out["pareto"] = [plan_dict(c) for c in result.pareto]
    if result.catalog is not None:
        out["catalog"] = dict(result.catalog)
    if result.prepared is not None:
        out["rejected"] = rejected_list(result.prepared.table.rejected)
        out["loader_bound"] = [
            {"option": r.option, "reason": r.reason, "usd_per_gpu_hour": round(r.usd_per_gpu_hour, 6)}
            for r in result.loader_bound
        ]
        out["job"] = job_block(result.prepared, result.job_figures)
    if result.rent_or_buy is not None:
        out["rent_or_buy"] = verdict_dict(result.rent_or_buy)
    out.update(_mix_block(result.mix))
    return emit(PlanOutput, out)


def job_block(prep: PreparedJob, f: JobFigures | None) -> dict[str, Any]:
    """The job as planned: the `job` object of `ccopt plan --json` (compare: `job_detail`)."""
    job, w = prep.job, prep.job.workload
    if f is None:
        raise ValueError("a result without job figures: solve attaches them (plan_figures.job_figures)")
    return {
        "name": job.name,
        "model": prep.model.name,
        "params": f.params,
        "tokens": f.tokens,
        "deadline_hours": prep.deadline_h,
        "budget_usd": prep.budget_usd,
        "stack": w.stack,
        "model_ref": f.model_ref,
        "kind": w.kind,
        "seq_len": w.seq_len,
        "lora_rank": w.lora_rank,
        "lora_targets": list(w.lora_targets),
        "attention": w.attention,
        "fused_kernels": w.fused_kernels,
        "head": "task" if is_profile(prep.model) else prep.model.head,  # a profile counts samples
    }


def solver_block(solver: dict[str, Any], status: str) -> dict[str, Any]:
    """The solver block of the contract: status, proven_optimal, wall_s and rows always there
    (rows keeps its older per-command names beside it)."""
    rows = solver.get("rows", solver.get("candidates", solver.get("options", 0)))
    return {
        "status": solver.get("status", status),
        "proven_optimal": True,
        "wall_s": 0.0,
        **solver,
        "rows": rows,
    }


def _plans(by: dict[str, Candidate | None]) -> dict[str, Any]:
    return {k: plan_dict(v) if v else None for k, v in by.items()}


def compare_json(result: CompareResult) -> dict[str, Any]:
    """A CompareResult in the `ccopt compare --json` contract."""
    job = result.job
    be = result.break_even
    found = result.cloud is not None or result.local is not None
    diag = result.diagnosis
    return emit(
        CompareOutput,
        {
            "status": "optimal" if found else "infeasible",
            "explanation": None
            if diag is None
            else explanation_of(diag.text, diag.binding, [dict(f) for f in diag.fixes]),
            "job": job.name,
            "job_detail": job_block(result.prepared, result.job_figures) if result.prepared else None,
            "solver": solver_block(result.solver, "optimal" if found else "infeasible"),
            "per_gpu_explanation": result.per_gpu_explanation,
            "per_provider_explanation": result.per_provider_explanation,
            "per_gpu": _plans(result.per_gpu),
            "per_provider": _plans(result.per_provider),
            "cloud": plan_dict(result.cloud) if result.cloud else None,
            "owned_or_bought": plan_dict(result.local) if result.local else None,
            "break_even": None if be is None else break_even_dict(be),
            "break_even_per_gpu": {gpu: break_even_dict(x) for gpu, x in result.break_even_per_gpu.items()},
            "rent_or_buy": None if be is None else verdict_dict(be),
            "rejected": rejected_list(result.rejected),
            **_mix_block(result.mix),
        },
    )


def _mix_block(mix: MixOutcome | None) -> dict[str, Any]:
    """{"mix": block} for a job with something to mix (mix_dict), else {} (no key added)."""
    block = mix_dict(mix)
    return {} if block is None else {"mix": block}
