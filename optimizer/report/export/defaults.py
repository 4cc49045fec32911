"""What each framework would do differently from the plan if left at its defaults, written out.

An exported file sets the layout; everything it leaves out runs at the framework's default.
Where a default would hold more memory than the plan counts, run slower than it assumes, or
refuse to start, the export writes the setting the plan assumed (each cited to the framework's
source). Used by training.py (Megatron-LM, NeMo, torchtitan, torchtune, HF Trainer) and
launchers.py (accelerate).
"""

from __future__ import annotations

from optimizer.errors import ConfigError
from optimizer.model.setup import PerfAssumptions
from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import get_stack
from optimizer.report.export.common import TrainPlan
from optimizer.report.export.entry import preset_spec

__all__ = [
    "deepspeed_data_types",
    "deepspeed_zero_defaults",
    "hf_trainer_args",
    "megatron_default_args",
    "nemo_default_overrides",
    "torchtitan_defaults",
    "torchtitan_plan_tables",
    "torchtune_default_overrides",
    "ACCELERATE_FSDP_WRAP",
]

#: accelerate's FSDP plugin wraps nothing by default (utils/dataclasses.py: AUTO_WRAP_POLICY
#: "NO_WRAP" -> auto_wrap_policy None): the whole model would be one FSDP unit, gathered for
#: the whole step, where the plan counts a few layers gathered at a time; and it prefetches
#: nothing in backward (FullyShardedDataParallelPlugin.backward_prefetch "NO_PREFETCH" -> None,
#: where torch's FSDP defaults to BACKWARD_PRE), so each all-gather waits behind the
#: reduce-scatter on the one NCCL stream, where stacks.toml fsdp dp_overlap 0.85 counts it hidden
ACCELERATE_FSDP_WRAP = [
    "--fsdp_auto_wrap_policy", "TRANSFORMER_BASED_WRAP",
    "--fsdp_backward_prefetch", "BACKWARD_PRE",
]  # fmt: skip


#: bytes of one ZeRO gradient bucket (reduce_bucket_size, allgather_bucket_size): two of them
#: (ZeRO-1/2 with overlap_comm double-buffers) take 0.19 GiB, inside the 0.25 GiB of
#: temporaries every plan counts (PerfAssumptions.workspace_gib); DeepSpeed's default of 5e8
#: elements is 0.93 GiB per buffer in 16 bits. Ours, overridable by editing the JSON
ZERO_BUCKET_BYTES = 100_000_000


def deepspeed_zero_defaults(t: TrainPlan) -> dict[str, bool | int]:
    """ZeRO keys the plan assumes (deepspeed/runtime/zero/config.py): gradient buckets that fit
    the workspace the plan counts (ZERO_BUCKET_BYTES; stage_1_and_2.py setup_buckets allocates
    reduce_bucket_size elements in the optimizer's dtype, twice with overlap_comm, stage3.py
    once), and for the DeepSpeed profile gradients reduced during backward (overlap_comm is on
    by default for stage 3 only; stacks.toml deepspeed dp_overlap 0.7 counts it on). The
    Megatron-DeepSpeed profile counts BF16_Optimizer's reduction after backward and keeps
    DeepSpeed's default. Stage 0 runs no ZeRO optimizer and reads none of these keys."""
    if t.zero_stage == 0:
        return {}
    bucket = ZERO_BUCKET_BYTES // (4 if t.precision == "fp32" else 2)
    keys: dict[str, bool | int] = {
        "contiguous_gradients": True,
        "reduce_bucket_size": bucket,
        "allgather_bucket_size": bucket,
    }
    if t.stack != "megatron-deepspeed":
        keys["overlap_comm"] = True
    return keys | _zero3_gathered(t)


def _zero3_gathered(t: TrainPlan) -> dict[str, bool | int]:
    """ZeRO-3's gathered parameters as the plan counts them: the layer being computed and the
    next one (PerfAssumptions.zero3_prefetch_layers, model/memory.py). DeepSpeed keeps up to
    stage3_max_live_parameters (default 1e9: about 5 layers of a 7B model) and anything reused
    within stage3_max_reuse_distance (1e9) gathered (runtime/zero/config.py,
    partitioned_param_coordinator.py); prefetching a layer ahead takes stage3_prefetch_bucket_size
    of one layer. A model ccopt has only as a path or an inline shape keeps DeepSpeed's."""
    spec = preset_spec(t)
    if t.zero_stage != 3 or spec is None:
        return {}
    layer = spec.layer_params()
    live = PerfAssumptions().zero3_prefetch_layers * layer
    return {
        "stage3_prefetch_bucket_size": layer,
        "stage3_max_live_parameters": live,
        "stage3_max_reuse_distance": live,
    }


def deepspeed_data_types(t: TrainPlan) -> dict[str, dict[str, str]]:
    """DeepSpeed's data_types section the plan assumes: Megatron-DeepSpeed's profile counts
    BF16_Optimizer's fp32 gradient accumulation (stacks.toml fp32_grad_buffer), which DeepSpeed
    picks for a bf16 model at ZeRO ≤ 1 only when grad_accum_dtype is fp32
    (runtime/engine.py _do_optimizer_sanity_check); the default (None) accumulates in the
    model's bf16 (get_data_types) and runs the ZeRO or DDP optimizer instead."""
    if t.stack == "megatron-deepspeed" and t.precision in ("bf16", "fp8") and t.zero_stage <= 1:
        return {"data_types": {"grad_accum_dtype": "fp32"}}
    return {}


def hf_trainer_args(t: TrainPlan) -> list[str]:
    """The HF Trainer's own flags for what the DeepSpeed JSON also says: transformers'
    DeepSpeed integration (integrations/deepspeed.py trainer_config_process / _finalize) checks
    the JSON's micro-batch, accumulation, batch and bf16/fp16 against TrainingArguments
    (defaults 8, 1, bf16 and fp16 off) and refuses a mismatch; gradient checkpointing is the
    model's (TrainingArguments.gradient_checkpointing, off by default): the JSON's
    activation_checkpointing section is read only by deepspeed.checkpointing.configure."""
    args = [
        "--per_device_train_batch_size", str(t.micro_batch),
        "--gradient_accumulation_steps", str(t.grad_accum),
    ]  # fmt: skip
    if t.precision in ("bf16", "fp8"):
        args.append("--bf16")
    elif t.precision == "fp16":
        args.append("--fp16")
    if t.checkpointing != "none":
        args.append("--gradient_checkpointing")
    return args


def megatron_default_args(t: TrainPlan, spec: ModelSpec | None) -> list[str]:
    """Megatron-LM flags the plan assumes whose defaults differ (megatron/training/arguments.py):
    gradients in bf16 when the plan counted 2-byte gradients (--grad-reduce-in-bf16: with --bf16,
    validate_args otherwise sets accumulate_allreduce_grads_in_fp32, 2 B per parameter more);
    overlapped gradient reduction and parameter gather (--overlap-grad-reduce /
    --overlap-param-gather, default off; stacks.toml megatron-core dp_overlap 0.95); fp8
    weights gathered in fp8 with the distributed optimizer (--fp8-param-gather, default off;
    stacks.toml fp8_params); with --use-torch-fsdp2, no gradient-accumulation fusion (on by
    default, and asserted off with FSDP2).

    Raises:
        ConfigError: ZeRO-3 (FSDP2) for a model with tied embeddings, which Megatron-LM asserts
            against ('--use-torch-fsdp2 requires --untie-embeddings-and-output-weights').
    """
    if t.stack == "megatron-deepspeed":  # DeepSpeed's JSON decides these
        return []
    bf16_params = t.precision in ("bf16", "fp8")
    offload = _megatron_offload(t)
    args = ["--grad-reduce-in-bf16"] if bf16_params and not get_stack(t.stack).fp32_grad_buffer else []
    args.append("--overlap-grad-reduce")
    if t.zero_stage == 1:
        args.append("--overlap-param-gather")
        if t.precision == "fp8":
            args.append("--fp8-param-gather")
    if t.zero_stage == 3:
        if spec is not None and spec.tied_embeddings:
            raise ConfigError(
                f"--export megatron: plan {t.job!r} shards everything (ZeRO-3, --use-torch-fsdp2), "
                "which Megatron-LM runs only with untied embeddings; the model ties them. Allowed: "
                "plan with zero_stages = [0, 1], or export torchrun / deepspeed"
            )
        args.append("--no-gradient-accumulation-fusion")
    return args + offload


def _megatron_offload(t: TrainPlan) -> list[str]:
    """The optimizer states on the CPU, as an offload_optimizer plan counts them
    (--optimizer-cpu-offload, off by default, asserts --use-precision-aware-optimizer:
    arguments.py validate_args; its main parameters and moments stay fp32 by default).

    Raises:
        ConfigError: parameters offloaded, which Megatron-LM does not do.
    """
    if t.offload == "params":
        raise ConfigError(
            f"--export megatron: plan {t.job!r} offloads the parameters to the CPU; Megatron-LM "
            "offloads only the optimizer states (--optimizer-cpu-offload). Allowed: "
            "offload_optimizer without offload_params, or export deepspeed"
        )
    return ["--optimizer-cpu-offload", "--use-precision-aware-optimizer"] if t.offload == "optimizer" else []


def nemo_default_overrides(t: TrainPlan) -> list[str]:
    """NeMo overrides the plan assumes: with the distributed optimizer, gradients synchronised
    in bf16 (Apex DistributedFusedAdam grad_sync_dtype defaults to its fp32 dtype: 2 B per
    parameter more than the plan's bf16 gradients) and the updated parameters gathered while
    the next forward runs (overlap_param_sync, off by default).

    Raises:
        ConfigError: fp8 with ZeRO-3 (NeMo megatron_base_model.py: 'Torch FSDP does not
            support FP8.'); a 16-bit plan without ZeRO whose gradients the plan counts in 16
            bits (NeMo's O2 wrapper accumulates them in fp32 then).
    """
    if t.precision == "fp8" and t.zero_stage == 3:
        raise ConfigError(
            f"--export nemo: plan {t.job!r} trains in fp8 with ZeRO-3 (model.fsdp), which NeMo "
            "refuses ('Torch FSDP does not support FP8.'). Allowed: plan with zero_stages = [0, 1] "
            "or precision bf16, or export megatron"
        )
    if t.offload != "none":
        raise ConfigError(
            f"--export nemo: plan {t.job!r} offloads to the CPU, which this export does not set up "
            "for NeMo. Allowed: plan without offload_optimizer / offload_params, or export "
            "megatron (--optimizer-cpu-offload) or deepspeed"
        )
    if t.zero_stage == 0 and t.precision in ("bf16", "fp8") and not get_stack(t.stack).fp32_grad_buffer:
        raise ConfigError(
            f"--export nemo: plan {t.job!r} keeps 2-byte gradients without the distributed "
            "optimizer (ZeRO-0), where NeMo accumulates bf16 models' gradients in fp32 "
            "(megatron_base_model.py configure_optimizers: fp32_grad_accum = True with O2), 2 B per "
            "parameter more than planned. Allowed: plan with zero_stages = [1] (the distributed "
            "optimizer reduces in bf16), or export megatron"
        )
    if t.zero_stage != 1:
        return []
    # Apex DistributedFusedAdam (apex/contrib/optimizers/distributed_fused_adam.py __init__):
    # overlap_grad_sync=True but overlap_param_sync=False, the parameter all-gather after the
    # step exposed where stacks.toml megatron-core dp_overlap 0.95 counts it hidden
    overlap = ["model.optim.overlap_param_sync=True"]
    return ["model.optim.grad_sync_dtype=bf16", *overlap] if t.precision in ("bf16", "fp8") else overlap


def torchtitan_defaults(t: TrainPlan) -> tuple[dict[str, str], dict[str, str]]:
    """(activation_checkpoint, parallelism) keys the plan assumes (torchtitan config/
    job_config.py): selective checkpointing per op (selective_ac_option defaults to "2", full
    checkpointing of every second layer; stacks.toml torchtitan selective_ac "op"); FSDP
    resharding as the plan's ZeRO stage (fsdp_reshard_after_forward "default" reshards unless
    pipelined: ZeRO-3 for a ZeRO-2 plan, ZeRO-2 for a pipelined ZeRO-3 one)."""
    ac = {"selective_ac_option": "op"} if t.checkpointing == "selective" else {}
    reshard = {2: "never", 3: "always"}.get(t.zero_stage)
    return ac, ({"fsdp_reshard_after_forward": reshard} if reshard else {})


#: torchtitan's float8 training converter (components/quantization/float8.py at v0.2.2:
#: register_model_converter(Float8LinearConverter, "quantize.linear.float8")); without it an fp8
#: plan runs its GEMMs in bf16 (the shipped llama3_8b.toml leaves converters empty)
TORCHTITAN_FLOAT8 = "quantize.linear.float8"


def torchtitan_plan_tables(t: TrainPlan) -> dict[str, dict[str, bool | list[str]]]:
    """torchtitan keys for what the plan counts beyond the layout (config/job_config.py at
    v0.2.2): fp8 GEMMs (model.converters, empty by default) and the CPU offload of an
    offload_params plan (training.enable_cpu_offload, off by default: FSDP2's CPUOffloadPolicy
    moves parameters, gradients and optimizer states together).

    Raises:
        ConfigError: optimizer-only offload, which torchtitan does not do; tensor or pipeline
            parallelism without FSDP (ZeRO-0, or one data-parallel shard): torchtitan's DDP
            refuses more than one dimension (llama3/infra/parallelize.py: "DDP has not
            supported > 1D parallelism") and without FSDP it trains tp/pp in fp32
            (distributed/utils.py maybe_enable_amp: "Mixed precision training is disabled").
    """
    if t.offload == "optimizer":
        raise ConfigError(
            f"--export torchtitan: plan {t.job!r} offloads only the optimizer states; torchtitan "
            "offloads parameters, gradients and optimizer together (training.enable_cpu_offload). "
            "Allowed: offload_params, or no offload, or export deepspeed"
        )
    shards = t.dp if t.zero_stage >= 2 else 1
    if shards == 1 and t.cp == 1 and (t.tp > 1 or t.pp > 1):
        why = "its DDP refuses more than one dimension" if t.dp > 1 else "it then trains in fp32"
        raise ConfigError(
            f"--export torchtitan: plan {t.job!r} splits tp {t.tp} × pp {t.pp} without FSDP "
            f"(ZeRO-{t.zero_stage}, {t.dp} data-parallel rank(s)), and {why} (torchtitan "
            "parallelize.py / maybe_enable_amp). Allowed: ZeRO-2/3 over 2 or more data-parallel "
            "ranks, or export megatron"
        )
    tables: dict[str, dict[str, bool | list[str]]] = {}
    if t.precision == "fp8":
        tables["model"] = {"converters": [TORCHTITAN_FLOAT8]}
    if t.offload == "params":
        tables["training"] = {"enable_cpu_offload": True}
    return tables


def torchtune_default_overrides(t: TrainPlan) -> list[str]:
    """torchtune keys the plan assumes: sequences cut and packed to the plan's length (the
    recipe configs' tokenizer.max_seq_len null and dataset.packed False: unpacked samples of
    any length, so neither the plan's memory nor its tokens per step hold)."""
    if not t.seq_len:
        return []
    return [f"tokenizer.max_seq_len={t.seq_len}", "dataset.packed=True"]
