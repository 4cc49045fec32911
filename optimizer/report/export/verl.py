"""`ccopt rl --export verl`: a chosen colocated RL plan as a verl trainer config (YAML).

verl's trainer (`python3 -m verl.trainer.main_ppo`) reads Hydra config; the file holds the
keys of verl/trainer/config/ppo_trainer.yaml this plan decides (batch, lengths, rollout TP,
micro-batch, checkpointing, nodes) over verl's defaults (`defaults: [ppo_trainer, _self_]`,
with verl's config package on Hydra's search path). Every number is read from the rl_json
result, never recomputed; the job's name reaches the file only through PyYAML's emitter and
the header comment's escaping (export/common.py).
"""

from __future__ import annotations

from typing import Any

from optimizer.errors import ConfigError
from optimizer.report.export.common import ExportedFile, comment, header_lines, slug, yaml_text

__all__ = ["verl_config", "verl_export"]

#: verl's algorithm.adv_estimator per RL kind (verl docs "Config Explanation"); DPO is not a
#: main_ppo algorithm
_ESTIMATORS = {"grpo": "grpo", "ppo": "gae"}


def _literal(text: str) -> str:
    """A job string as a literal for Hydra/OmegaConf, which would resolve `${...}` in it (an
    environment variable, a resolver call): OmegaConf's escape is a backslash before `${`."""
    return text.replace("${", "\\${")


def _checked(result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(job, plan, its one pool) of a feasible colocated GRPO/PPO result, or ConfigError."""
    plan, job = result.get("plan"), result.get("job") or {}
    if result.get("status") == "infeasible" or not isinstance(plan, dict):
        raise ConfigError(
            "export: the result has no feasible RL plan to export (allowed: a feasible `ccopt rl`)"
        )
    kind = job.get("kind")
    if kind not in _ESTIMATORS:
        raise ConfigError(f"export verl: kind {kind!r} is not a verl main_ppo algorithm; allowed: grpo, ppo")
    if kind == "ppo" and not (job.get("rl") or {}).get("critic", True):
        raise ConfigError("export verl: PPO without a critic is not verl's gae; allowed: rl.critic = true")
    if plan.get("mode") != "colocated" or len(plan.get("pools") or ()) != 1:
        raise ConfigError(
            "export verl: the plan uses separate generation and training pools; verl's trainer "
            'runs colocated (hybrid engine) only: plan with [rl.pools] mode = "colocated"'
        )
    pool = plan["pools"][0]
    if pool["instances"] * pool["gpus_per_instance"] != pool["gpus"]:
        raise ConfigError(
            f"export verl: {pool['instances']} × {pool['gpus_per_instance']} GPUs ≠ gpus = {pool['gpus']}"
        )
    rollout = plan["step"].get("rollout") or {}
    if not rollout or pool["gpus"] % rollout["tp"]:
        raise ConfigError(f"export verl: rollout TP {rollout.get('tp')} does not divide {pool['gpus']} GPUs")
    return job, plan, pool


def verl_config(result: dict[str, Any]) -> dict[str, Any]:
    """The verl config of a feasible colocated GRPO/PPO result (the rl_json contract)."""
    job, plan, pool = _checked(result)
    rl = job["rl"]
    step, layout = plan["step"], plan["step"]["training_layout"]
    ckpt = layout["activation_checkpointing"] != "none"
    micro = layout["micro_batch"]
    # one policy update per step over the whole batch, as the plan's update phase is timed;
    # verl asserts train_batch_size >= ppo_mini_batch_size (its default 256 would fail)
    mini = rl["prompts_per_step"]
    reference = bool(rl.get("reference", True))
    algorithm: dict[str, Any] = {"adv_estimator": _ESTIMATORS[job["kind"]]}
    if job["kind"] == "ppo":
        algorithm["use_kl_in_reward"] = reference  # the reference model's KL in the reward
    config: dict[str, Any] = {
        "defaults": ["ppo_trainer", "_self_"],
        "hydra": {"searchpath": ["pkg://verl.trainer.config"]},
        "algorithm": algorithm,
        "data": {
            "train_batch_size": rl["prompts_per_step"],
            "max_prompt_length": rl["prompt_tokens_max"],
            "max_response_length": rl["response_tokens_max"],
        },
        "actor_rollout_ref": {
            "model": {
                "path": _literal(job["model"]),
                "enable_gradient_checkpointing": ckpt,
                "use_remove_padding": True,
            },
            "actor": {
                "ppo_mini_batch_size": mini,
                "ppo_micro_batch_size_per_gpu": micro,
                "use_kl_loss": job["kind"] == "grpo" and reference,
            },
            "ref": {"log_prob_micro_batch_size_per_gpu": micro},
            "rollout": {
                "name": "vllm",
                "log_prob_micro_batch_size_per_gpu": micro,
                "n": rl["samples_per_prompt"],
                "tensor_model_parallel_size": step["rollout"]["tp"],
                "gpu_memory_utilization": step["rollout"]["gpu_memory_utilization"],
                # the plan times decode with CUDA graphs on (RlSetup.rollout_cuda_graphs); verl
                # <= v0.5 defaulted to eager (rollout.yaml at 8fdc4d3), ~0.3 ms more per layer
                "enforce_eager": False,
            },
        },
        "trainer": {
            "project_name": "ccopt",
            "experiment_name": _literal(job["name"]),
            "n_gpus_per_node": pool["gpus_per_instance"],
            "nnodes": pool["instances"],
            "total_training_steps": job["steps"],
        },
    }
    if job["kind"] == "ppo":
        config["critic"] = {
            "ppo_mini_batch_size": mini,
            "ppo_micro_batch_size_per_gpu": micro,
            "model": {"path": _literal(job["model"])},
        }
    return config


def verl_export(result: dict[str, Any]) -> ExportedFile:
    """The verl config file of a result, with its header (plan, cost, catalog, version)."""
    job, plan, _ = _checked(result)
    body = [
        f"plan: {job.get('name')} ({job.get('model')}, {job.get('kind')}), {result.get('status')}",
        f"pools: {plan.get('label')}",
        f"cost: ${plan['cost_usd']:,.2f} in {plan['hours']:.2f} h ({job.get('steps')} steps of "
        f"{plan['step_s_at_confidence']:.1f} s at the job's confidence)",
        "model.path: the plan's model name; replace it with its checkpoint (a HF id or a folder)",
        'run: python3 -m verl.trainer.main_ppo --config-path="$(pwd)" --config-name=<file name, no .yaml>',
    ]
    text = comment(header_lines(result, "verl", body)) + yaml_text(verl_config(result))
    name = f"{slug(str(job.get('name') or 'rl'))}.verl.yaml"
    return ExportedFile(name, text, str(job.get("name") or "rl"), "verl")
