"""Launch scripts of a plan: torchrun and accelerate command lines, Slurm sbatch, and the
serving engine's launch line."""

from __future__ import annotations

import json
import shlex
from typing import Any

from optimizer.errors import ConfigError
from optimizer.model.stacks import get_stack
from optimizer.report.export.common import (
    MASTER_PORT,
    TrainPlan,
    comment,
    job_stack,
    shell_default,
    shell_exports,
    wall_time,
)
from optimizer.report.export.defaults import ACCELERATE_FSDP_WRAP
from optimizer.report.export.training import (
    DEEPSPEED_FILE,
    TRAIN_SCRIPT_GUARD,
    deepspeed_config,
    fabric_env,
    joined_command,
    launch_lines,
    layout_env,
    needs_deepspeed_file,
    sequence_parallel,
    shell_words,
    stack_variables,
)

__all__ = [
    "torchrun_script",
    "accelerate_script",
    "sbatch_script",
    "deepspeed_heredoc",
    "serve_command",
    "serve_replicas_per_instance",
    "READINESS_PATH",
    "SERVE_PORT",
]

SERVE_PORT = 8000
_SHEBANG = "#!/usr/bin/env bash\n"
#: the flags of a weight format, for the engines that take one on the command line (others: none)
_PRECISION_FLAGS = {
    "vllm": {
        "fp16": ["--dtype", "float16"],
        "bf16": ["--dtype", "bfloat16"],
        "fp8": ["--quantization", "fp8"],
    },
    "tgi": {
        "fp8": ["--quantize", "fp8"],
        "int8": ["--quantize", "eetq"],
        "int4": ["--quantize", "awq"],
    },
}
#: the health endpoint each serving engine answers once the model is loaded
READINESS_PATH = {
    "vllm": "/health",
    "tgi": "/health",
    "tensorrt-llm": "/health",
    "llama.cpp": "/health",
    "mlc-llm": "/v1/models",
}


def deepspeed_heredoc(t: TrainPlan) -> str:
    """Shell lines that write the DeepSpeed config the launch line names (empty when none)."""
    return _heredoc(t) if needs_deepspeed_file(t) else ""


def _heredoc(t: TrainPlan) -> str:
    body = json.dumps(deepspeed_config(t), indent=2)
    return f"cat > {DEEPSPEED_FILE} <<'CCOPT_JSON'\n{body}\nCCOPT_JSON\n"


def _fabric(t: TrainPlan) -> str:
    """The fabric's NCCL / libfabric exports, under comment lines citing where they come from."""
    env, lines = fabric_env(t)
    return comment(lines) + shell_exports(env)


def _preamble(t: TrainPlan, head: str = _SHEBANG) -> str:
    """A launch script's first lines: `head` (the shebang, sbatch directives), the plan's
    comment lines, strict mode, the fabric's and the layout's exports."""
    return head + comment(t.lines) + "set -euo pipefail\n" + _fabric(t) + shell_exports(layout_env(t))


def _script(t: TrainPlan, rendezvous: str, command: str, head: str = _SHEBANG) -> str:
    """A launch script: the preamble, the stack's variables, the rendezvous, the DeepSpeed
    config it names and the command."""
    return (
        _preamble(t, head)
        + shell_default(stack_variables(t))
        + rendezvous
        + deepspeed_heredoc(t)
        + command
        + "\n"
    )


def _manual_rendezvous(t: TrainPlan) -> str:
    how = (
        ""
        if t.nodes == 1
        else f"# run this script on each of the {t.nodes} nodes with NODE_RANK=0..{t.nodes - 1} and "
        "MASTER_ADDR=<node 0's address>\n"
    )
    rank = "${NODE_RANK:-0}" if t.nodes == 1 else "${NODE_RANK:?set NODE_RANK (0 on the first node)}"
    addr = "${MASTER_ADDR:-127.0.0.1}" if t.nodes == 1 else "${MASTER_ADDR:?set MASTER_ADDR (node 0)}"
    return (
        f"{how}NNODES={t.nodes}\nNPROC_PER_NODE={t.gpus_per_node}\nNODE_RANK={rank}\nMASTER_ADDR={addr}\n"
        "export NNODES NPROC_PER_NODE NODE_RANK MASTER_ADDR\n"
    )


def torchrun_script(t: TrainPlan) -> str:
    """The plan's launch line as a script (torchrun, or the stack's own launcher)."""
    return _script(t, _manual_rendezvous(t), launch_lines(t))


def _accelerate_args(t: TrainPlan) -> list[str]:
    """`accelerate launch` flags of the layout (accelerate/commands/launch.py)."""
    args = [
        "--num_machines", str(t.nodes),
        "--num_processes", str(t.gpus),
        "--machine_rank", "$NODE_RANK",
        "--main_process_ip", "$MASTER_ADDR",
        "--main_process_port", str(MASTER_PORT),
    ]  # fmt: skip
    precision = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "fp32": "no"}[t.precision]
    if t.cp > 1:
        raise ConfigError(
            f"--export accelerate: plan {t.job!r} uses context parallelism (cp {t.cp}); export megatron"
        )
    if t.tp > 1 or t.pp > 1:
        args += [
            "--use_megatron_lm",
            "--megatron_lm_tp_degree", str(t.tp),
            "--megatron_lm_pp_degree", str(t.pp),
            "--megatron_lm_num_micro_batches", str(t.grad_accum),
            "--megatron_lm_sequence_parallelism", str(sequence_parallel(t)).lower(),
            "--megatron_lm_recompute_activations", str(t.checkpointing != "none").lower(),
            "--megatron_lm_use_distributed_optimizer", str(t.zero_stage >= 1).lower(),
            "--mixed_precision", precision,
        ]  # fmt: skip
        if t.zero_stage >= 2:
            raise ConfigError(
                f"--export accelerate: plan {t.job!r} combines tp/pp with ZeRO-{t.zero_stage}, which "
                "accelerate's Megatron-LM plugin does not shard; export deepspeed or torchrun"
            )
    elif t.stack == "fsdp" and t.zero_stage >= 1:
        if t.offload == "optimizer":
            # torch.distributed.fsdp.CPUOffload has one switch, offload_params: parameters and
            # gradients go to the CPU with it, the step runs there (accelerate's
            # --fsdp_offload_params); there is no optimizer-only offload
            raise ConfigError(
                f"--export accelerate: plan {t.job!r} offloads only the optimizer states; PyTorch "
                "FSDP offloads parameters and gradients with them (CPUOffload(offload_params)). "
                "Allowed: offload_params, or export deepspeed"
            )
        strategy = "FULL_SHARD" if t.zero_stage == 3 else "SHARD_GRAD_OP"
        args += [
            "--use_fsdp", "--fsdp_sharding_strategy", strategy, *ACCELERATE_FSDP_WRAP,
            "--fsdp_offload_params", str(t.offload != "none").lower(),
            "--fsdp_activation_checkpointing", str(t.checkpointing != "none").lower(),
            "--mixed_precision", precision,
            "--gradient_accumulation_steps", str(t.grad_accum),
        ]  # fmt: skip
    elif t.zero_stage >= 1:  # the DeepSpeed JSON carries precision, accumulation and ZeRO
        args += ["--use_deepspeed", "--deepspeed_config_file", DEEPSPEED_FILE]
    else:
        args += ["--multi_gpu"] if t.gpus > 1 else []
        args += ["--mixed_precision", precision, "--gradient_accumulation_steps", str(t.grad_accum)]
    return args


def accelerate_script(t: TrainPlan) -> str:
    """An `accelerate launch` line of the plan (writes the DeepSpeed config it names)."""
    args = _accelerate_args(t)
    ds = _heredoc(t) if DEEPSPEED_FILE in args else ""
    return (
        _preamble(t)
        + shell_default({"TRAIN_SCRIPT": t.train_script} if t.train_script else {})
        + _manual_rendezvous(t)
        + ds
        + TRAIN_SCRIPT_GUARD
        + joined_command(["accelerate launch", *shell_words([*args, "$TRAIN_SCRIPT"])])
        + "\n"
    )


def _sbatch_window(t: TrainPlan) -> list[str]:
    """A batch job's start window as Slurm times (relative to submitting at the horizon start)."""
    if t.start_hour is None:
        return []
    out = [f"#SBATCH --begin=now+{int(round(t.start_hour * 60))}minutes"]
    if t.deadline_hour is not None:
        out.append(f"#SBATCH --deadline=now+{int(round(t.deadline_hour * 60))}minutes")
    return out


def sbatch_script(t: TrainPlan) -> str:
    """A Slurm sbatch script: the nodes and GPUs of the plan, P90 wall time, its launch line."""
    limit_h = t.hours_p90 if t.hours_p90 is not None else t.hours
    if t.slot_end_hour is not None and t.start_hour is not None:
        limit_h = max(limit_h, t.slot_end_hour - t.start_hour)
    directives = [
        f"#SBATCH --job-name={t.stem or 'ccopt'}",  # a slug: letters, digits, dashes
        f"#SBATCH --nodes={t.nodes}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --gpus-per-node={t.gpus_per_node}",
        f"#SBATCH --time={wall_time(limit_h)}",
        "#SBATCH --exclusive",
        "#SBATCH --output=%x-%j.out",
        *_sbatch_window(t),
    ]
    rendezvous = (
        f"NNODES=$SLURM_NNODES\nNPROC_PER_NODE={t.gpus_per_node}\n"
        'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | sed -n 1p)\n'
        "export NNODES NPROC_PER_NODE MASTER_ADDR\n"
    )
    body = launch_lines(t).replace("\n", "\n  ")
    command = (
        f"launch() {{\n  export NODE_RANK=$SLURM_NODEID\n  {body}\n}}\nexport -f launch\n"
        "srun --kill-on-bad-exit=1 bash -c launch"
    )
    return _script(t, rendezvous, command, head="#!/bin/bash\n" + "\n".join(directives) + "\n")


def serve_replicas_per_instance(d: dict[str, Any]) -> int:
    """Replicas of a deployment that share one instance (its GPUs / the replica's tp)."""
    return max(1, d["replicas"] // max(1, d["instances"]))


def serve_command(d: dict[str, Any], job: dict[str, Any]) -> str:
    """The serving engine's launch line of one deployment (one server per instance). The longest
    request is the engine's own limit (the model's context): the job's buckets are mean lengths,
    and a limit at the mean would refuse every longer request (vLLM serving_engine.py
    _validate_input, TGI's router); llama.cpp alone allocates its context up front, per slot.

    Raises:
        ConfigError: several replicas per instance on an engine without a data-parallel mode, or
            a KV-cache or weight precision the engine cannot run as planned (serve_checks).
    """
    stack = job_stack(job)
    engine = "vllm" if stack == "generic" else stack
    per = serve_replicas_per_instance(d)
    q = serve_weights(d)
    if per > 1 and engine != "vllm":
        raise ConfigError(
            f"--export: the {d['gpu']} deployment runs {per} replicas per instance and {engine} has no "
            'data-parallel mode to serve them behind one port; plan with workload.stack = "vllm"'
        )
    kv = serve_checks(d, engine, q, str(job.get("kv_cache_precision") or "fp16"))
    port, batch = str(SERVE_PORT), str(d["batch"])
    if engine == "vllm":
        cmd = ["vllm", "serve", '"$MODEL_ID"', "--tensor-parallel-size", str(d["tp"])]
        cmd += ["--data-parallel-size", str(per)] if per > 1 else []
        cmd += ["--max-num-seqs", batch, "--port", port, *_PRECISION_FLAGS[engine].get(q, []), *kv]
    elif engine == "tgi":
        # --max-concurrent-requests refuses arrivals beyond it (HTTP 429, router infer/mod.rs); the
        # running batch is --max-batch-size (backends/v3 queue.rs next_batch). GUESS: room for a
        # queue as long as the batch, never below TGI's default of 128
        queue = str(max(128, 2 * d["batch"]))
        cmd = ["text-generation-launcher", "--model-id", '"$MODEL_ID"', "--num-shard", str(d["tp"])]
        cmd += ["--max-batch-size", batch, "--max-concurrent-requests", queue, "--port", port]
        cmd += [*_PRECISION_FLAGS[engine].get(q, []), *kv]
    elif engine == "tensorrt-llm":
        # the KV pool's share of free memory as the plan counts it (stacks.toml kv_memory_fraction;
        # trtllm-serve commands/serve.py --kv_cache_free_gpu_memory_fraction defaults to 0.9)
        free = f"{get_stack('tensorrt-llm').kv_memory_fraction:g}"
        cmd = ["trtllm-serve", '"$MODEL_ID"', "--tp_size", str(d["tp"]), "--max_batch_size", batch]
        cmd += ["--kv_cache_free_gpu_memory_fraction", free, "--host", "0.0.0.0", "--port", port]
    elif engine == "llama.cpp":
        cmd = ["llama-server", "-m", '"$MODEL_ID"', "-ngl", "999", "-np", batch]
        cmd += ["-c", str(serve_max_len(job) * d["batch"]), "--host", "0.0.0.0", "--port", port]
    elif engine == "mlc-llm":
        # --mode server sizes the KV cache from memory (gpu_memory_utilization 0.85); the default
        # "local" mode holds one context window in all (mlc_llm/serve/config.py EngineConfig)
        over = shlex.quote(f"tensor_parallel_shards={d['tp']};max_num_sequence={d['batch']}")
        cmd = ["mlc_llm", "serve", '"$MODEL_ID"', "--mode", "server", "--overrides", over]
        cmd += ["--host", "0.0.0.0", "--port", port]
    else:
        raise ConfigError(
            f"--export: no serving launch line for stack {stack!r}; allowed: {', '.join(READINESS_PATH)}"
        )
    return " ".join(cmd)


def serve_weights(d: dict[str, Any]) -> str:
    """A deployment's weight format: its quantization, else its precision (fp16 when unset)."""
    return str(d.get("quantization") or d.get("precision") or "fp16")


def serve_max_len(job: dict[str, Any]) -> int:
    """The longest mean request of the job's buckets (prompt + output tokens)."""
    return max((b["prompt_tokens"] + b["output_tokens"] for b in job.get("buckets") or []), default=4096)


#: KV-cache dtype flags (vLLM config/cache.py cache_dtype "auto" and TGI's unset
#: --kv-cache-dtype keep the model's 16-bit dtype, where an fp8 plan counts 1 B per value)
_KV_FLAGS = {"vllm": ["--kv-cache-dtype", "fp8"], "tgi": ["--kv-cache-dtype", "fp8_e4m3fn"]}
#: generations whose GPUs vLLM's fp8 weights refuse (quantization/fp8.py Fp8Config
#: get_min_capability 80: compute capability 8.0 and up)
_BELOW_SM80 = ("pascal", "volta", "turing")


def serve_checks(d: dict[str, Any], engine: str, weights: str, kv: str) -> list[str]:
    """The KV-cache flags of the plan's kv_cache_precision, after refusing what the engine would
    run otherwise than planned: a quantized KV cache it has no flag for here (int8 anywhere,
    fp8 outside vLLM and TGI), vLLM fp8 weights below compute capability 8.0."""
    if kv in ("fp8", "int8") and (kv == "int8" or engine not in _KV_FLAGS):
        raise ConfigError(
            f"--export: the plan keeps an {kv} KV cache, which this export sets for vLLM and TGI "
            f"(fp8) only, not for {engine}. Allowed: kv_cache_precision fp16, or workload.stack vllm"
        )
    if engine == "vllm" and weights == "fp8" and d.get("gpu_generation") in _BELOW_SM80:
        raise ConfigError(
            f"--export: vLLM refuses fp8 weights on {d['gpu']} (compute capability below 8.0: "
            "Fp8Config.get_min_capability 80). Allowed: quantization fp16 / int8 / int4, or an "
            "Ampere or newer GPU"
        )
    return _KV_FLAGS[engine] if kv == "fp8" else []


def serve_notes(d: dict[str, Any], job: dict[str, Any]) -> list[str]:
    """Header lines a serving script needs read before it runs: the checkpoint an 8- or 4-bit
    plan assumes (vLLM and TensorRT-LLM take the format from the checkpoint: vLLM
    EngineArgs.quantization None, trtllm-serve has no quantization flag) and where the longest
    request is capped (serve_command)."""
    q = serve_weights(d)
    notes = []
    if q in ("int8", "int4"):
        notes.append(
            f"weights: the plan counts {q} weights: MODEL_ID must name a checkpoint quantized to "
            f"{q} (AWQ / GPTQ / ModelOpt); a 16-bit one holds {16 // int(q[3:])}x the memory"
        )
    notes.append(
        "request length: the engine's own limit (the model's context)"
        if job_stack(job) != "llama.cpp"
        else f"request length: at most {serve_max_len(job)} tokens per slot (-c / -np), the buckets' mean"
    )
    return notes
