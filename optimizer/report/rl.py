"""The JSON contract of RL post-training plans: `ccopt rl --json`."""

from __future__ import annotations

from typing import Any

from optimizer.model.rl.step import RlStep
from optimizer.report.contract.common import emit, explanation_of
from optimizer.report.contract.rl import RlOutput
from optimizer.report.place import offering_place
from optimizer.solve.rl.candidates import RlCandidate
from optimizer.solve.rl.options import PoolOption
from optimizer.solve.rl.plan import RlResult

__all__ = ["rl_json", "candidate_json"]


def _pool(p: PoolOption, role: str) -> dict[str, Any]:
    off = p.offering
    out: dict[str, Any] = {
        "role": role,
        **offering_place(off),
        "gpus": p.gpus,
        "instances": p.instances,
        "gpus_per_instance": off.gpus_per_instance,
        "usd_per_hour": round(p.usd_per_hour, 4),
        "network_gbps": p.network_gbps,
    }
    if role in ("generation", "colocated") and p.generation is not None:
        gen = p.generation if role == "generation" else None
        if gen is not None:
            out["rollout"] = {"tp": gen.tp, "replicas": gen.replicas, "batch": gen.batch}
    return out


def _step(step: RlStep) -> dict[str, Any]:
    out: dict[str, Any] = {
        "time_s": round(step.time_s, 3),
        "generation_s": round(step.generation_s, 3),
        "logprob_s": round(step.logprob_s, 3),
        "update_s": round(step.update_s, 3),
        "sync_s": round(step.sync_s, 3),
        "pipelined": step.pipelined,
        "training_layout": step.train.update.layout.as_dict(),
    }
    if step.generation is not None:
        g = step.generation
        out["rollout"] = {
            "tp": g.tp,
            "replicas": g.replicas,
            "batch": g.batch,
            "bulk_s": round(g.bulk_s, 3),
            "tail_s": round(g.tail_s, 3),
            "gpu_memory_utilization": round(g.memory_utilization, 2),
        }
    return out


def _p50(c: RlCandidate) -> dict[str, Any]:
    """The step by phase at P50: each phase × its band's median (the sync is unbanded)."""
    s, gen = c.step, (c.gen_pool or c.train_pool).bands.generation_p50
    train = c.train_pool.bands.training_p50
    return {
        "time_s": round(c.step_s_p50, 3),
        "generation_s": round(s.generation_s * gen, 3),
        "logprob_s": round(s.logprob_s * train, 3),
        "update_s": round(s.update_s * train, 3),
        "sync_s": round(s.sync_s, 3),
    }


def candidate_json(c: RlCandidate) -> dict[str, Any]:
    """One plan: its pools, its step (the model's point, and at P50 by phase) and its whole run
    at confidence."""
    pools = [_pool(c.train_pool, "colocated" if c.gen_pool is None else "training")]
    if c.gen_pool is not None:
        pools.insert(0, _pool(c.gen_pool, "generation"))
    return {
        "mode": c.mode,
        "label": c.label,
        "gpus": c.gpus,
        "pools": pools,
        "step": _step(c.step),
        "step_p50": _p50(c),
        "step_s_at_confidence": round(c.step_s, 3),
        "hours": round(c.hours, 3),
        "cost_usd": round(c.cost_usd, 2),
        "usd_per_hour": round(c.cost_usd / c.hours, 4) if c.hours > 0 else 0.0,
    }


def rl_json(r: RlResult) -> dict[str, Any]:
    """The answer of `ccopt rl --json`, checked against its contract (report/contract/rl.py)."""
    j, setup = r.job, r.job.setup()
    return emit(
        RlOutput,
        {
            "status": str(r.status),
            "job": {
                "name": j.name,
                "kind": j.workload.kind,
                "model": r.model.name,
                "params": r.model.params(),
                "steps": j.rl.steps,
                "sequences_per_step": setup.sequences,
                "rl": {
                    "prompts_per_step": setup.prompts_per_step,
                    "samples_per_prompt": setup.samples_per_prompt,
                    "prompt_tokens_mean": setup.prompt_tokens_mean,
                    "prompt_tokens_max": setup.prompt_tokens_max,
                    "response_tokens_mean": setup.response_tokens_mean,
                    "response_tokens_max": setup.response_tokens_max,
                    "reference": setup.reference,
                    "critic": setup.critic,
                },
                "pools": j.rl.pools.mode,
                "async_steps": setup.async_steps,
                "deadline_hours": j.constraints.deadline_hours,
                "budget_usd": j.constraints.budget_usd,
                "confidence": j.constraints.confidence,
            },
            "plan": candidate_json(r.plan) if r.plan is not None else None,
            "other_mode": candidate_json(r.other_mode) if r.other_mode is not None else None,
            "explanation": explanation_of(r.explanation or None, " + ".join(r.core) or None),
            "solver": r.solver,
            "catalog": r.catalog,
        },
    )
