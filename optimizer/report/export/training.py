"""Training launch configs of a plan: DeepSpeed JSON, Megatron-LM / NeMo arguments, torchtitan,
torchtune and llm-foundry fragments, and the launch line of the plan's stack."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from typing import Any

from optimizer.errors import ConfigError
from optimizer.model.layout import pipeline_zero_stages
from optimizer.model.stacks import get_stack
from optimizer.report.export.base_configs import config_guard, foundry_yaml, torchtitan_config
from optimizer.report.export.common import MASTER_PORT, TrainPlan, toml_text
from optimizer.report.export.defaults import (
    deepspeed_data_types,
    deepspeed_zero_defaults,
    hf_trainer_args,
    megatron_default_args,
    nemo_default_overrides,
    torchtitan_defaults,
    torchtitan_plan_tables,
    torchtune_default_overrides,
)
from optimizer.report.export.entry import (
    deepspeed_launcher,
    fabric_env,
    fp32_env,
    layout_env,
    megatron_arrays,
    megatron_model_args,
    preset_spec,
)
from optimizer.report.export.torchtune_configs import (
    torchtune_config,
    torchtune_lora_overrides,
    torchtune_tensor_parallel_overrides,
)

__all__ = [
    "deepspeed_config",
    "fp32_env",
    "megatron_args",
    "nemo_overrides",
    "torchtitan_overrides",
    "torchtitan_toml",
    "torchtune_overrides",
    "foundry_fragment",
    "foundry_overrides",
    "layout_env",
    "fabric_env",
    "launch_lines",
    "joined_command",
    "needs_deepspeed_file",
    "sequence_parallel",
    "stack_variables",
    "DEEPSPEED_FILE",
    "check_launcher",
    "TRAIN_SCRIPT_GUARD",
    "shell_words",
    "megatron_model_args",
    "FRAMEWORK_STACKS",
]

#: the DeepSpeed config the launch lines name (written beside them)
DEEPSPEED_FILE = "ccopt_deepspeed.json"
#: formats that are one stack's own config, and the stack (`workload.stack`) they belong to
FRAMEWORK_STACKS = {"torchtitan": "torchtitan", "torchtune": "torchtune", "llm-foundry": "llm-foundry"}
#: stacks whose training scripts take a DeepSpeed config (HF Trainer: `--deepspeed FILE`)
_DEEPSPEED_STACKS = ("deepspeed", "megatron-deepspeed", "hf-trainer")

# torch dtype words of the plan's precision (fp8: bf16 weights, the GEMMs in fp8)
_TORCH_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp8": "bfloat16"}


def check_launcher(t: TrainPlan, launcher: str, fmt: str) -> None:
    """Refuse a plan whose pipeline + ZeRO combination `launcher` (a stacks.toml profile whose
    engine reads the exported file) cannot run, naming the reason and the nearest runnable
    layouts (same split with the highest ZeRO stage it allows, or no pipeline).

    Raises:
        ConfigError: e.g. pp 4 with ZeRO-2 for DeepSpeed's PipelineEngine.
    """
    stack = get_stack(launcher)
    allowed = pipeline_zero_stages(stack)
    if t.pp == 1 or t.dp == 1 or t.zero_stage in allowed:
        return
    source = (
        stack.provenance["pipeline_zero_stages"].source if "pipeline_zero_stages" in stack.provenance else ""
    )
    top = max(allowed, default=0)
    raise ConfigError(
        f"--export {fmt}: plan {t.job!r} runs pp {t.pp} with ZeRO-{t.zero_stage}, which {launcher} "
        f"cannot run (pipelines with ZeRO {', '.join(map(str, allowed))} only: {source}). "
        "Nearest runnable layouts: "
        f"dp {t.dp} × tp {t.tp} × pp {t.pp} with ZeRO-{top}, or dp {t.dp * t.pp} × tp {t.tp} × pp 1 with "
        f"ZeRO-{t.zero_stage}; their memory and cost differ, so re-plan with workload.stack = "
        f'"{launcher}" (the planner then proposes only layouts it runs)'
    )


def _launcher_of(t: TrainPlan, fmt: str) -> str:
    """The stack profile whose engine runs a `fmt` file of this plan."""
    if t.stack == "megatron-deepspeed":
        return "megatron-deepspeed"
    return {"deepspeed": "deepspeed", "megatron": "megatron-core", "nemo": "megatron-core"}[fmt]


def deepspeed_config(t: TrainPlan) -> dict[str, Any]:
    """DeepSpeed's JSON: batch triple, ZeRO stage and offload, precision (DeepSpeed config docs,
    deepspeed.ai/docs/config-json). train_batch_size = micro × accumulation × data-parallel size.

    Raises:
        ConfigError: pipeline stages with ZeRO ≥ 2 (DeepSpeed's PipelineEngine refuses them).
    """
    check_launcher(t, _launcher_of(t, "deepspeed"), "deepspeed")
    zero: dict[str, Any] = {"stage": t.zero_stage, **deepspeed_zero_defaults(t)}
    if t.offload in ("optimizer", "params"):
        zero["offload_optimizer"] = {"device": "cpu", "pin_memory": True}
    if t.offload == "params":
        zero["offload_param"] = {"device": "cpu", "pin_memory": True}
    cfg: dict[str, Any] = {
        "train_batch_size": t.global_batch,
        "train_micro_batch_size_per_gpu": t.micro_batch,
        "gradient_accumulation_steps": t.grad_accum,
        "zero_optimization": zero,
        "bf16": {"enabled": t.precision in ("bf16", "fp8")},
        "fp16": {"enabled": t.precision == "fp16"},
        **deepspeed_data_types(t),
        "gradient_clipping": 1.0,
        "steps_per_print": 100,
        "wall_clock_breakdown": False,
    }
    if t.checkpointing != "none":
        cfg["activation_checkpointing"] = {
            "partition_activations": t.tp > 1,
            "contiguous_memory_optimization": False,
        }
    return cfg


def sequence_parallel(t: TrainPlan) -> bool:
    """Sequence parallelism as planned; null (the stack's default) means on whenever tp > 1."""
    return bool(t.sequence_parallel) if t.sequence_parallel is not None else t.tp > 1


def _recompute(t: TrainPlan) -> list[str]:
    if t.checkpointing == "selective":
        return ["--recompute-granularity", "selective"]
    if t.checkpointing == "full":
        return [
            "--recompute-granularity",
            "full",
            "--recompute-method",
            "uniform",
            "--recompute-num-layers",
            "1",
        ]
    return []


def megatron_args(t: TrainPlan) -> list[str]:
    """Megatron-LM `pretrain_gpt.py` arguments of the layout (megatron/training/arguments.py).

    Raises:
        ConfigError: the plan shards gradients or weights (ZeRO-2/3), which Megatron-LM's
            distributed optimizer (ZeRO-1) does not; Megatron-DeepSpeed plans are exported.
    """
    if t.zero_stage != 2 or t.stack == "megatron-deepspeed":
        check_launcher(t, _launcher_of(t, "megatron"), "megatron")
    if t.zero_stage == 2 and t.stack != "megatron-deepspeed":
        raise ConfigError(
            f"--export megatron: plan {t.job!r} uses ZeRO-2; Megatron-LM shards the optimizer state "
            "(--use-distributed-optimizer, ZeRO-1) or everything (--use-torch-fsdp2, ZeRO-3), not "
            "gradients alone, so the plan would not run as planned. Allowed: plan with "
            'workload.stack = "megatron-deepspeed", or export deepspeed / torchrun'
        )
    args = [
        "--tensor-model-parallel-size", str(t.tp),
        "--pipeline-model-parallel-size", str(t.pp),
        "--context-parallel-size", str(t.cp),
        "--micro-batch-size", str(t.micro_batch),
        "--global-batch-size", str(t.global_batch),
        "--train-iters", str(t.steps),
    ]  # fmt: skip
    if t.seq_len:
        args += ["--seq-length", str(t.seq_len), "--max-position-embeddings", str(t.seq_len)]
    if t.vp > 1:
        args += ["--num-virtual-stages-per-pipeline-rank", str(t.vp)]
    if sequence_parallel(t):
        args.append("--sequence-parallel")
    if t.precision in ("bf16", "fp16"):
        args.append(f"--{t.precision}")
    elif t.precision == "fp8":
        args += ["--bf16", "--fp8-format", "hybrid"]
    args += megatron_default_args(t, preset_spec(t))
    args += _recompute(t)
    args += ["--optimizer", "sgd" if t.optimizer == "sgd" else "adam"]
    if t.stack == "megatron-deepspeed":
        args += ["--deepspeed", "--deepspeed_config", DEEPSPEED_FILE, "--zero-stage", str(t.zero_stage)]
    elif t.zero_stage == 1:
        args.append("--use-distributed-optimizer")
    elif t.zero_stage == 3:  # PyTorch FSDP2 inside Megatron-LM (full sharding)
        args += ["--use-torch-fsdp2", "--ckpt-format", "torch_dist"]
    return args


def nemo_overrides(t: TrainPlan) -> list[str]:
    """NeMo (Megatron GPT) Hydra overrides of the layout (NeMo megatron_gpt_config.yaml keys)."""
    megatron_args(t)  # the same ZeRO limit as Megatron-LM
    precision = {"bf16": "bf16-mixed", "fp16": "16-mixed", "fp32": "32", "fp8": "bf16-mixed"}[t.precision]
    out = [
        f"trainer.num_nodes={t.nodes}",
        f"trainer.devices={t.gpus_per_node}",
        f"trainer.max_steps={t.steps}",
        f"trainer.precision={precision}",
        f"model.tensor_model_parallel_size={t.tp}",
        f"model.pipeline_model_parallel_size={t.pp}",
        f"model.context_parallel_size={t.cp}",
        f"model.virtual_pipeline_model_parallel_size={t.vp if t.vp > 1 else 'null'}",
        f"model.sequence_parallel={sequence_parallel(t)}",
        f"model.micro_batch_size={t.micro_batch}",
        f"model.global_batch_size={t.global_batch}",
        "model.activations_checkpoint_granularity="
        + ("null" if t.checkpointing == "none" else t.checkpointing),
    ]
    if t.seq_len:
        out.append(f"model.encoder_seq_length={t.seq_len}")
    if t.checkpointing == "full":
        out += ["model.activations_checkpoint_method=uniform", "model.activations_checkpoint_num_layers=1"]
    if t.precision == "fp8":
        out.append("model.fp8=True")
    if t.precision != "fp32":
        # 16-bit parameters with fp32 main parameters, as the plan counts them; NeMo's default
        # (megatron_gpt_config.yaml megatron_amp_O2: False) autocasts over fp32 parameters, and
        # its distributed optimizer refuses to start without O2 ("Distributed optimizers require O2")
        out.append("model.megatron_amp_O2=True")
    if t.zero_stage == 1:
        out.append("model.optim.name=distributed_fused_adam")
    elif t.zero_stage == 3:
        out.append("model.fsdp=True")
    return out + nemo_default_overrides(t)


def _need_stack(t: TrainPlan, fmt: str) -> None:
    stack = FRAMEWORK_STACKS[fmt]
    if t.stack != stack:
        raise ConfigError(
            f"--export {fmt}: plan {t.job!r} was planned for stack {t.stack!r}, and the {fmt} "
            f'profile sets what it overlaps and shards; plan with workload.stack = "{stack}" '
            "first (or export torchrun / deepspeed / megatron)"
        )


def _torchtitan_values(t: TrainPlan) -> dict[str, dict[str, Any]]:
    _need_stack(t, "torchtitan")
    shard = t.dp if t.zero_stage >= 2 else 1  # FSDP shards over the data-parallel group
    parallelism: dict[str, Any] = {
        "data_parallel_replicate_degree": t.dp // shard,
        "data_parallel_shard_degree": shard,
        "tensor_parallel_degree": t.tp,
        "pipeline_parallel_degree": t.pp,
        "context_parallel_degree": t.cp,
    }
    # torchtitan accumulates global / (local × dp) steps; with pp the local batch is split into
    # pipeline micro-batches instead (torchtitan config/job_config.py Training, Parallelism)
    local = t.micro_batch
    if t.pp > 1:
        parallelism["pipeline_parallel_microbatch_size"] = t.micro_batch
        # the schedule of the plan's bubble: interleaved when it splits stages into vp chunks
        # (torchtitan Parallelism.pipeline_parallel_schedule, torch.distributed.pipelining)
        parallelism["pipeline_parallel_schedule"] = "Interleaved1F1B" if t.vp > 1 else "1F1B"
        local = t.micro_batch * t.grad_accum
    ac, reshard = torchtitan_defaults(t)
    parallelism.update(reshard)
    extra = torchtitan_plan_tables(t)
    return {
        **({"model": extra["model"]} if "model" in extra else {}),
        "training": {
            "local_batch_size": local,
            "global_batch_size": t.global_batch,
            "seq_len": t.seq_len or 0,
            "steps": t.steps,
            "mixed_precision_param": _TORCH_DTYPE[t.precision],
            **extra.get("training", {}),
        },
        "parallelism": parallelism,
        "activation_checkpoint": {"mode": t.checkpointing, **ac},
    }


def torchtitan_toml(t: TrainPlan) -> str:
    """The torchtitan job-config TOML tables the plan sets (torchtitan/config/job_config.py)."""
    return toml_text(_torchtitan_values(t))


def torchtitan_overrides(t: TrainPlan) -> list[str]:
    """The same values as torchtitan command-line overrides (`--section.key value`)."""
    # a list is comma-separated on the command line (config/manager.py list_str_rule)
    return [
        f"--{table}.{k}={','.join(v) if isinstance(v, list) else v}"
        for table, values in _torchtitan_values(t).items()
        for k, v in values.items()
    ]


def torchtune_overrides(t: TrainPlan) -> list[str]:
    """torchtune recipe overrides (key=value) of the plan (torchtune recipe configs)."""
    _need_stack(t, "torchtune")
    if t.pp > 1 or t.cp > 1:
        raise ConfigError(
            f"--export torchtune: plan {t.job!r} uses pp {t.pp} × cp {t.cp}; torchtune's distributed "
            "recipes shard with FSDP and split tensors (tensor_parallel_dim) only"
        )
    tensor = [f"tensor_parallel_dim={t.tp}", *torchtune_tensor_parallel_overrides(t)] if t.tp > 1 else []
    return [
        *tensor,
        f"batch_size={t.micro_batch}",
        f"gradient_accumulation_steps={t.grad_accum}",
        f"enable_activation_checkpointing={t.checkpointing != 'none'}",
        f"dtype={'fp32' if t.precision == 'fp32' else 'bf16' if t.precision != 'fp16' else 'fp16'}",
        f"fsdp_cpu_offload={t.offload != 'none'}",
        f"fsdp_reshard_after_forward={t.zero_stage == 3}",  # False: ZeRO-2 (weights kept gathered)
        f"max_steps_per_epoch={t.steps}",
        "epochs=1",
        *torchtune_default_overrides(t),
        *torchtune_lora_overrides(t),
    ]


def foundry_fragment(t: TrainPlan) -> dict[str, Any]:
    """llm-foundry train YAML keys of the plan (llm-foundry scripts/train/yamls)."""
    _need_stack(t, "llm-foundry")
    if t.tp > 1 or t.pp > 1 or t.cp > 1:
        raise ConfigError(
            f"--export llm-foundry: plan {t.job!r} uses tp {t.tp} × pp {t.pp} × cp {t.cp}; "
            "llm-foundry trains with FSDP (data parallel) only"
        )
    if t.offload != "none":
        # composer distributed/mosaic_parallelism.py get_cpu_offload: "FSDP CPU Offload not
        # supported yet."
        raise ConfigError(
            f"--export llm-foundry: plan {t.job!r} offloads to CPU, which Composer's FSDP refuses "
            "('FSDP CPU Offload not supported yet.'). Allowed: plan without offload_optimizer / "
            "offload_params, or export deepspeed / torchrun"
        )
    sharding = {0: "NO_SHARD", 1: "SHARD_GRAD_OP", 2: "SHARD_GRAD_OP", 3: "FULL_SHARD"}[t.zero_stage]
    precision = {"bf16": "amp_bf16", "fp16": "amp_fp16", "fp32": "fp32", "fp8": "amp_fp8"}[t.precision]
    out: dict[str, Any] = {
        "global_train_batch_size": t.global_batch,
        "device_train_microbatch_size": t.micro_batch,
        "max_duration": f"{t.steps}ba",
        "precision": precision,
        "fsdp_config": {
            "sharding_strategy": sharding,
            "mixed_precision": "PURE" if t.precision != "fp32" else "FULL",
            "activation_checkpointing": t.checkpointing != "none",
        },
    }
    if t.seq_len:
        # the base YAMLs read every length from variables.max_seq_len (scripts/train/yamls/
        # pretrain/mpt-7b.yaml: model, tokenizer, train_loader.dataset); a top-level max_seq_len
        # is only the ICL evaluation's (command_utils/train.py), the run would train at 2,048
        out = {"variables": {"max_seq_len": t.seq_len}, **out}
    return out


def foundry_overrides(t: TrainPlan) -> list[str]:
    """The fragment as composer/omegaconf dotted overrides."""
    flat: list[str] = []
    for k, v in foundry_fragment(t).items():
        if isinstance(v, dict):
            flat += [f"{k}.{kk}={vv}" for kk, vv in v.items()]
        else:
            flat.append(f"{k}={v}")
    return flat


def joined_command(cmd: list[str]) -> str:
    """One command, one argument pair per line (backslash continuations)."""
    out, i = [cmd[0]], 1
    while i < len(cmd):
        if (
            cmd[i].startswith("--")
            and "=" not in cmd[i]
            and i + 1 < len(cmd)
            and not cmd[i + 1].startswith("--")
        ):
            out.append(f"{cmd[i]} {cmd[i + 1]}")
            i += 2
        else:
            out.append(cmd[i])
            i += 1
    return " \\\n    ".join(out)


def shell_words(words: list[str]) -> list[str]:
    """Shell words: a plain `$NAME` becomes "$NAME" (expanded, never split), a word we wrote
    already quoted ("${X[@]}", "$((...))") stays, anything else is shlex-quoted data."""
    return [
        f'"{w}"' if re.fullmatch(r"\$[A-Z_]+", w) else w if w.startswith('"$') else shlex.quote(w)
        for w in words
    ]


_TORCHRUN = [
    "torchrun",
    "--nnodes", "$NNODES",
    "--nproc-per-node", "$NPROC_PER_NODE",
    "--node-rank", "$NODE_RANK",
    "--master-addr", "$MASTER_ADDR",
    "--master-port", str(MASTER_PORT),
]  # fmt: skip


def launch_lines(t: TrainPlan) -> str:
    """The shell command that starts the plan with its stack; it reads NNODES, NPROC_PER_NODE,
    NODE_RANK and MASTER_ADDR, which each wrapper (SkyPilot run, sbatch, script) sets."""
    if t.stack in ("megatron-core", "megatron-deepspeed"):
        cmd = [
            *_TORCHRUN,
            '"$MEGATRON_DIR/pretrain_gpt.py"',
            *megatron_args(t),
            '"${MODEL_ARGS[@]}"',
            '"${DATA_ARGS[@]}"',
        ]
        return megatron_arrays(t) + joined_command(shell_words(cmd))
    elif t.stack == "torchtitan":
        cmd = [
            *_TORCHRUN, "-m", "torchtitan.train", "--job.config_file", '"$TORCHTITAN_CONFIG"',
            *torchtitan_overrides(t),
        ]  # fmt: skip
    elif t.stack == "torchtune":
        recipe = (
            "lora_finetune_distributed" if t.workload in ("lora", "qlora") else "full_finetune_distributed"
        )
        cmd = [
            "tune", "run", "--nnodes", "$NNODES", "--nproc_per_node", "$NPROC_PER_NODE",
            "--rdzv-backend", "c10d", "--rdzv-endpoint", f'"$MASTER_ADDR:{MASTER_PORT}"', recipe,
            "--config", '"$TORCHTUNE_CONFIG"', *torchtune_overrides(t),
        ]  # fmt: skip
    elif t.stack == "llm-foundry":
        cmd = [
            "composer", "--world_size", '"$((NNODES * NPROC_PER_NODE))"', "--node_rank", "$NODE_RANK",
            "--master_addr", "$MASTER_ADDR", "--master_port", str(MASTER_PORT),
            '"${FOUNDRY_DIR:-llm-foundry/scripts}/train/train.py"', '"$FOUNDRY_YAML"',
            *foundry_overrides(t),
        ]  # fmt: skip
    elif t.stack == "deepspeed":
        cmd = [*deepspeed_launcher(t), "$TRAIN_SCRIPT", "--deepspeed", "--deepspeed_config", DEEPSPEED_FILE]
    elif t.stack in _DEEPSPEED_STACKS:  # hf-trainer: the Trainer's --deepspeed FILE
        cmd = [*_TORCHRUN, "$TRAIN_SCRIPT", "--deepspeed", DEEPSPEED_FILE, *hf_trainer_args(t)]
    else:  # generic, fsdp, unsloth, litgpt: the script reads the CCOPT_* layout variables
        cmd = [*_TORCHRUN, "$TRAIN_SCRIPT"]
    guard = _config_guard(t) + (TRAIN_SCRIPT_GUARD if "$TRAIN_SCRIPT" in cmd else "")
    return _split_warning(t) + guard + joined_command(shell_words(cmd))


#: stack -> the variable naming its framework's config in the launch line, and the config of
#: the plan's model it starts from (None: the framework bundles none)
_MODEL_CONFIGS: dict[str, tuple[str, Callable[[TrainPlan], str | None]]] = {
    "torchtitan": ("TORCHTITAN_CONFIG", torchtitan_config),
    "torchtune": ("TORCHTUNE_CONFIG", torchtune_config),
    "llm-foundry": ("FOUNDRY_YAML", foundry_yaml),
}


def _config_guard(t: TrainPlan) -> str:
    """The stop line when the framework bundles no config of the plan's model."""
    variable, config = _MODEL_CONFIGS.get(t.stack, ("", None))
    return config_guard(variable, t.stack) if config is not None and config(t) is None else ""


#: the user's training script is theirs to name (--train-script PATH, or TRAIN_SCRIPT=... when
#: running): the launch line stops with this message rather than run a placeholder
TRAIN_SCRIPT_GUARD = (
    ': "${TRAIN_SCRIPT:?set TRAIN_SCRIPT to your training script (or export with --train-script PATH)}"\n'
)


def _split_warning(t: TrainPlan) -> str:
    """A comment above the launch line when the stack's launcher cannot split tensors or layers
    itself (the plan still needs tp × pp; CCOPT_TP / CCOPT_PP carry them to the script)."""
    if (t.tp > 1 or t.pp > 1) and t.stack in ("deepspeed", "hf-trainer", "fsdp", "unsloth"):
        return (
            f"# warning: the plan splits tp {t.tp} × pp {t.pp}; {t.stack} does not do that from its "
            "launch line: your script must build it from CCOPT_TP / CCOPT_PP\n"
        )
    return ""


def needs_deepspeed_file(t: TrainPlan) -> bool:
    """Whether the launch line names the DeepSpeed config (the wrapper then writes it)."""
    return t.stack in _DEEPSPEED_STACKS


def stack_variables(t: TrainPlan) -> dict[str, str]:
    """What the launch line reads besides the layout, with the value to start from (edit it)."""
    if t.stack in ("megatron-core", "megatron-deepspeed"):
        return {"MEGATRON_DIR": "Megatron-LM"}
    if t.stack in _MODEL_CONFIGS:
        variable, config = _MODEL_CONFIGS[t.stack]
        found = config(t)
        folder = {"FOUNDRY_DIR": "llm-foundry/scripts"} if t.stack == "llm-foundry" else {}
        return folder | ({variable: found} if found else {})
    return {"TRAIN_SCRIPT": t.train_script} if t.train_script else {}
