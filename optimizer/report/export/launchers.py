"""Launch scripts of a plan: torchrun and accelerate command lines, Slurm sbatch, and the
serving engine's launch line."""

from __future__ import annotations

import json
import shlex
from typing import Any

from optimizer.errors import ConfigError
from optimizer.report.export.common import (
    MASTER_PORT,
    TrainPlan,
    comment,
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


def serve_command(d: dict[str, Any], stack: str, max_len: int) -> str:
    """The serving engine's launch line of one deployment (one server per instance).

    Raises:
        ConfigError: the deployment packs several replicas on an instance and the engine has no
            data-parallel mode to run them as one server.
    """
    engine = "vllm" if stack == "generic" else stack
    per = serve_replicas_per_instance(d)
    q = d.get("quantization") or d.get("precision") or "fp16"
    if per > 1 and engine != "vllm":
        raise ConfigError(
            f"--export: the {d['gpu']} deployment runs {per} replicas per instance and {engine} has no "
            'data-parallel mode to serve them behind one port; plan with workload.stack = "vllm"'
        )
    port = str(SERVE_PORT)
    if engine == "vllm":
        cmd = ["vllm", "serve", '"$MODEL_ID"', "--tensor-parallel-size", str(d["tp"])]
        if per > 1:
            cmd += ["--data-parallel-size", str(per)]
        cmd += ["--max-num-seqs", str(d["batch"]), "--max-model-len", str(max_len), "--port", port]
        cmd += _PRECISION_FLAGS[engine].get(q, [])
    elif engine == "tgi":
        cmd = ["text-generation-launcher", "--model-id", '"$MODEL_ID"', "--num-shard", str(d["tp"])]
        cmd += [
            "--max-concurrent-requests",
            str(d["batch"]),
            "--max-total-tokens",
            str(max_len),
            "--port",
            port,
        ]
        cmd += _PRECISION_FLAGS[engine].get(q, [])
    elif engine == "tensorrt-llm":
        cmd = ["trtllm-serve", '"$MODEL_ID"', "--tp_size", str(d["tp"]), "--max_batch_size", str(d["batch"])]
        cmd += ["--max_seq_len", str(max_len), "--host", "0.0.0.0", "--port", port]
    elif engine == "llama.cpp":
        cmd = ["llama-server", "-m", '"$MODEL_ID"', "-ngl", "999", "-np", str(d["batch"])]
        cmd += ["-c", str(max_len * d["batch"]), "--host", "0.0.0.0", "--port", port]
    elif engine == "mlc-llm":
        over = f"tensor_parallel_shards={d['tp']};max_num_sequence={d['batch']};context_window_size={max_len}"
        cmd = [
            "mlc_llm",
            "serve",
            '"$MODEL_ID"',
            "--overrides",
            shlex.quote(over),
            "--host",
            "0.0.0.0",
            "--port",
            port,
        ]
    else:
        raise ConfigError(
            f"--export: no serving launch line for stack {stack!r}; allowed: {', '.join(READINESS_PATH)}"
        )
    return " ".join(cmd)
