"""The JSON contract of training results: `ccopt plan --json` and `ccopt compare --json`."""

from __future__ import annotations

from typing import Any

from optimizer.inputs.calibration import base_assumptions
from optimizer.inputs.jobs.train import Job
from optimizer.model.fitted import step_time_interval
from optimizer.model.pcie import intra_node_bw_gb_s, intra_node_path
from optimizer.model.setup import TrainingSetup
from optimizer.pricing.offering import cost_usd
from optimizer.report.contract.common import emit, explanation_of, rejected_list
from optimizer.report.contract.train import CompareOutput, PlanOutput
from optimizer.solve.train.compare import BreakEven, CompareResult
from optimizer.solve.train.enumerate import Candidate, class_label
from optimizer.solve.train.host_check import unit_of
from optimizer.solve.train.pcie_note import host_path_warning
from optimizer.solve.train.plan import PlanResult
from optimizer.solve.train.prepare import PreparedJob, headroom_of
from optimizer.solve.train.variants import options_of
from optimizer.solve.train.warnings import plan_warnings
from optimizer.units import HOURS_PER_DAY

__all__ = ["plan_dict", "plan_json", "compare_json", "solver_block"]


NO_DATA_NOTE = "no [data] section: dataset transfer, storage and the data loader are not counted or checked"


def data_block(c: Candidate) -> dict[str, Any]:
    """The plan's data lines (what `cost_usd` added for [data])."""
    d = c.offering.data
    if not d.counted:
        return {"counted": False, "note": NO_DATA_NOTE}
    total = d.usd(c.hours)
    return {
        "counted": True,
        "dataset_gb": d.dataset_gb,
        "egress_gb": d.egress_gb,
        "egress_usd_per_gb": d.egress_usd_per_gb,
        "egress_usd": round(d.egress_usd, 2),
        "route": d.route,
        "storage_usd_per_gb_month": d.storage_usd_per_gb_month,
        "dataset_storage_usd": round(d.dataset_storage_usd(c.hours), 2),
        "checkpoint_gb": round(d.checkpoint_gb, 2),
        "checkpoint_every_hours": d.checkpoint_every_h,
        "checkpoints_kept": d.checkpoints_kept,
        "checkpoint_storage_usd": round(d.checkpoint_storage_usd(c.hours), 2),
        "total_usd": round(total, 2),
        "share_of_cost": round(total / c.cost_usd, 6) if c.cost_usd > 0 else 0.0,
        "unknown": list(d.unknown),
    }


def host_block(c: Candidate, job: Job | None = None) -> dict[str, Any] | None:
    h = c.host
    if h is None:
        return None
    kind = job.data.kind if job is not None and job.data is not None else "text"
    return {
        "unit": unit_of(kind),
        "vcpus": h.vcpus,
        "ram_gib": h.ram_gib,
        "local_nvme_gb": h.local_nvme_gb,
        "ram_needed_gib": round(h.ram_needed_gib, 2),
        "offloaded_gib_per_gpu": round(h.offloaded_gib_per_gpu, 2),
        "gpu_samples_per_s": round(h.gpu_samples_per_s, 1),
        "loader_samples_per_s": None if h.loader_samples_per_s is None else round(h.loader_samples_per_s, 1),
        "loader_bound": h.slowdown > 1.0 + 1e-9,
        "slowdown": round(h.slowdown, 4),
        "notes": list(h.notes),
    }


LOADER_FIX = (
    "fix: an instance with more vCPUs per GPU, or preprocess offline (decoded, "
    "resized shards: a higher data.samples_per_s_per_vcpu)"
)


def loader_bound_list(prep: Any) -> list[dict[str, str]]:
    """Offerings slowed to their loader rate, cheapest GPU-hour first, with the nearest fix."""
    price = {class_label(o): o.usd_per_hour / o.gpus_per_instance for o in prep.offerings}
    ranked = sorted(prep.table.slowed.items(), key=lambda kv: (price.get(kv[0], 0.0), kv[0]))
    return [
        {"option": k, "reason": f"${price.get(k, 0.0):,.3f}/GPU-h, {why}; {LOADER_FIX}"} for k, why in ranked
    ]


def plan_dict(c: Candidate, job: Job | None = None) -> dict[str, Any]:
    """A plan in the JSON contract of DESIGN.md (plus extra fields)."""
    off = c.offering
    tokens = c.steps * c.layout.global_batch * (job.workload.seq_len if job else 0)
    p10, p90 = c.step.interval or step_time_interval(off.gpu, job.workload.stack if job else "generic")
    unit = job.workload.sample_unit if job else None
    seq_len = job.workload.seq_len if job else 1
    a = base_assumptions(job.assumptions if job else None)
    return {
        "gpu": off.gpu_id,
        "provider": off.provider,
        "instance": off.instance,
        "region": off.region,
        "pricing": off.pricing,
        "instances": c.instances,
        "gpus": c.gpus,
        "gpus_per_instance": off.gpus_per_instance,
        "layout": c.layout.as_dict(),
        "global_batch": c.layout.global_batch,
        "steps": c.steps,
        "step_time_s": round(c.step.time_s, 3),
        "hours": round(c.hours, 2),
        "step_time_s_p10": round(c.step.time_s * p10, 3),
        "step_time_s_p90": round(c.step.time_s * p90, 3),
        "days": round(c.hours / HOURS_PER_DAY, 2),
        "usd_per_hour": round(c.usd_per_hour, 2),
        "days_p90": round(c.hours * p90 / HOURS_PER_DAY, 2),
        "cost_usd": round(c.cost_usd, 2),
        "capital_usd": round(c.capital_usd, 2),
        "cost_usd_p90": round(cost_usd(off, c.instances, c.hours * p90).total_usd, 2),
        "memory_gib": c.memory.as_dict(2),
        "gpu_memory_gib": off.gpu.memory_gib,
        "memory_headroom_gib": round(off.gpu.memory_gib - c.memory.device, 2),
        "memory_headroom_required_gib": round(headroom_of(job.constraints).kept_gib(off.gpu.memory_gib), 2)
        if job
        else None,
        "step": c.step.as_dict(),
        "intra_node_link": off.gpu.intra_node_link,
        "intra_node_path": intra_node_path(off.gpu),
        "intra_node_bw_gb_s": round(intra_node_bw_gb_s(off.gpu, a), 2),
        "tokens_per_s": round(c.step.tokens_per_s, 1),
        "tokens_per_s_per_gpu": round(c.step.tokens_per_s_per_gpu, 1),
        "mfu": round(c.step.mfu, 4),
        "tokens": tokens,
        "sample_unit": unit,
        "samples_per_s": round(c.step.tokens_per_s / seq_len, 2) if unit else None,
        "inter_node_gbps": off.inter_node_gbps,
        "commitment_hours": off.commitment_hours,
        "kind": off.kind,
        "calibrated": c.step.calibrated,
        "inter_node_kind": off.inter_node_kind,
        "inter_node_is_default": off.inter_node_is_default,
        "options": options_of(
            c.setup or (job.workload.setup() if job else TrainingSetup(seq_len=0)), c.layout.vp
        ),
        "price_flags": [{"rule": f.rule, "reason": f.reason} for f in getattr(off, "flags", ())],
        "warnings": plan_warnings(c) + host_path_warning(c, a),
        "spot": spot_block(c),
        "data_usd": round(cost_usd(off, c.instances, c.hours).data_usd, 2),
        "data": data_block(c),
        "host": host_block(c, job),
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
        "checkpoint_interval_h": round(s.checkpoint_interval_s / 3600, 3),
        "restart_s": s.restart_s,
        "work_hours": round(s.work_s / 3600, 3),
        "expected_hours": round(s.expected_wall_s / 3600, 3),
    }


def plan_json(result: PlanResult) -> dict[str, Any]:
    """A PlanResult in the `ccopt plan --json` contract."""
    job = result.prepared.job if result.prepared else None
    best = result.plan
    out: dict[str, Any] = {
        "status": str(result.status),
        "plan": dict(plan_dict(best, job), tensor_parallel_avoided=result.tp_avoided) if best else None,
        "alternatives": [
            dict(plan_dict(a, job), extra_cost_usd=round(a.cost_usd - best.cost_usd, 2))
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
        out["cheaper_if_later"] = plan_dict(result.cheaper_if_later, job)
    if result.pareto:
        out["pareto"] = [plan_dict(c, job) for c in result.pareto]
    if result.catalog is not None:
        out["catalog"] = dict(result.catalog)
    if result.prepared is not None:
        out["rejected"] = rejected_list(result.prepared.table.rejected)
        out["loader_bound"] = loader_bound_list(result.prepared)
        out["job"] = job_block(result.prepared)
    return emit(PlanOutput, out)


def job_block(prep: PreparedJob) -> dict[str, Any]:
    """The job as planned: the `job` object of `ccopt plan --json` (compare: `job_detail`)."""
    job, w = prep.job, prep.job.workload
    ref = job.model.reference(prep.base_dir)
    return {
        "name": job.name,
        "model": prep.model.name,
        "params": prep.model.params(),
        "tokens": w.total_tokens(),
        "deadline_hours": prep.deadline_h,
        "budget_usd": prep.budget_usd,
        "stack": w.stack,
        "model_ref": ref,
        "kind": w.kind,
        "seq_len": w.seq_len,
        "lora_rank": w.lora_rank,
        "lora_targets": list(w.lora_targets),
        "attention": w.attention,
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


def _plans(by: dict[str, Candidate | None], job: Job) -> dict[str, Any]:
    return {k: plan_dict(v, job) if v else None for k, v in by.items()}


def _r2(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _break_even(be: BreakEven) -> dict[str, Any]:
    return {
        "gpu": be.gpu,
        "cloud_plan": be.cloud_plan,
        "net_capital_usd": round(be.net_capital_usd, 2),
        "power_usd_per_job": round(be.power_usd_per_job, 2),
        "cloud_usd_per_job": round(be.cloud_usd_per_job, 2),
        "jobs_to_break_even": _r2(be.jobs),
        "months_to_break_even": _r2(be.months),
        "months_continuous": _r2(be.months_continuous),
        "note": be.note,
    }


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
            "job_detail": job_block(result.prepared) if result.prepared else None,
            "solver": solver_block(result.solver, "optimal" if found else "infeasible"),
            "per_gpu_explanation": result.per_gpu_explanation,
            "per_provider_explanation": result.per_provider_explanation,
            "per_gpu": _plans(result.per_gpu, job),
            "per_provider": _plans(result.per_provider, job),
            "cloud": plan_dict(result.cloud, job) if result.cloud else None,
            "owned_or_bought": plan_dict(result.local, job) if result.local else None,
            "break_even": None if be is None else _break_even(be),
            "break_even_per_gpu": {gpu: _break_even(x) for gpu, x in result.break_even_per_gpu.items()},
            "rejected": rejected_list(result.rejected),
        },
    )
