"""What a launch line needs beyond the layout: the real entry points' own arguments (DeepSpeed's
launcher, Megatron-LM's model shape), the NCCL / libfabric environment of the plan's fabric, and
the layout, workload and adapters as CCOPT_* variables for scripts that read their own."""

from __future__ import annotations

import shlex

from optimizer.errors import ConfigError
from optimizer.model.presets import get_preset
from optimizer.model.spec import ModelSpec
from optimizer.report.export.common import MASTER_PORT, TrainPlan

__all__ = [
    "deepspeed_launcher",
    "preset_spec",
    "megatron_model_args",
    "megatron_arrays",
    "fabric_env",
    "fp32_env",
    "layout_env",
]


def deepspeed_launcher(t: TrainPlan) -> list[str]:
    """DeepSpeed's own launcher (`deepspeed`, deepspeed/launcher/runner.py). Several nodes: each
    node starts its share itself (--no_ssh with --node_rank, DeepSpeed >= 0.14.5 as accelerate's
    commands/launch.py requires for its "nossh" launcher), like torchrun, so no hostfile or pdsh."""
    cmd = ["deepspeed", "--num_gpus", "$NPROC_PER_NODE"]
    if t.nodes > 1:
        cmd += ["--num_nodes", "$NNODES", "--no_ssh", "--node_rank", "$NODE_RANK"]
    return [*cmd, "--master_addr", "$MASTER_ADDR", "--master_port", str(MASTER_PORT)]


def preset_spec(t: TrainPlan) -> ModelSpec | None:
    """The plan's model as a preset transformer (None: a measured profile or a model of its own)."""
    try:
        spec = get_preset(t.model_ref)
    except ConfigError:
        return None
    return spec if isinstance(spec, ModelSpec) else None


def megatron_model_args(t: TrainPlan) -> list[str] | None:
    """pretrain_gpt.py's model-shape arguments of a preset model (Megatron-LM
    megatron/training/arguments.py _add_network_size_args), None for a model ccopt has only as
    a path or an inline shape (the user fills MODEL_ARGS in)."""
    spec = preset_spec(t)
    if spec is None:
        return None
    args = [
        "--num-layers", str(spec.layers), "--hidden-size", str(spec.hidden),
        "--ffn-hidden-size", str(spec.ffn), "--num-attention-heads", str(spec.heads),
    ]  # fmt: skip
    if spec.kv_heads is not None and spec.kv_heads != spec.heads:
        args += ["--group-query-attention", "--num-query-groups", str(spec.kv_heads)]
    if spec.ffn_kind == "gated":
        args.append("--swiglu")
    args += ["--normalization", "RMSNorm" if spec.norm == "rmsnorm" else "LayerNorm"]
    if not spec.learned_positions:
        args += ["--position-embedding-type", "rope"]
    if not spec.tied_embeddings:
        args.append("--untie-embeddings-and-output-weights")
    if not (spec.qkv_bias or spec.mlp_bias or spec.out_bias):
        args.append("--disable-bias-linear")
    return args


def megatron_arrays(t: TrainPlan) -> str:
    """MODEL_ARGS and DATA_ARGS as bash arrays (each word quoted) before the launch line."""
    shape = megatron_model_args(t)
    vocab = "32000"
    try:
        spec = get_preset(t.model_ref)
        vocab = str(getattr(spec, "vocab", 32000))
    except ConfigError:
        pass
    model = (
        f"MODEL_ARGS=({' '.join(map(shlex.quote, shape))})\n"
        if shape is not None
        else "# fill in the model's shape: --num-layers --hidden-size ...\nMODEL_ARGS=()\n"
    )
    data = ["--mock-data", "--tokenizer-type", "NullTokenizer", "--vocab-size", vocab]
    return (
        model
        + "# synthetic tokens to check the launch; for training: --data-path PREFIX --tokenizer-type ...\n"
        + f"DATA_ARGS=({' '.join(data)})\n"
    )


#: NCCL / libfabric settings per fabric (the catalog's inter_node_kind), with where they come from
_FABRIC_ENV: dict[str, tuple[dict[str, str], str]] = {
    "efa": (
        {"FI_PROVIDER": "efa", "FI_EFA_USE_DEVICE_RDMA": "1", "RDMAV_FORK_SAFE": "1"},
        "AWS EFA: NCCL reaches it through the aws-ofi-nccl libfabric plugin (AWS EC2 user guide "
        "'Get started with EFA and NCCL'); FI_EFA_USE_DEVICE_RDMA and RDMAV_FORK_SAFE as "
        "aws/sagemaker-training-toolkit torch_distributed.py sets them on RDMA instances",
    ),
    "infiniband": (
        {"NCCL_IB_DISABLE": "0"},
        "InfiniBand: NCCL's IB verbs transport (NCCL docs, Environment Variables: NCCL_IB_DISABLE=0 "
        "keeps it on; NCCL_IB_HCA picks the adapters if the node has others)",
    ),
    "rdma": (
        {"NCCL_IB_DISABLE": "0", "NCCL_IB_GID_INDEX": "3"},
        "RoCE: NCCL's IB verbs transport over Ethernet (NCCL docs, Environment Variables: "
        "NCCL_IB_GID_INDEX selects the RoCE v2 GID; 3 is the usual index, a GUESS: check "
        "show_gids on the node)",
    ),
    "ethernet": (
        {"NCCL_IB_DISABLE": "1"},
        "TCP sockets: no RDMA fabric between the instances (NCCL docs, NCCL_IB_DISABLE=1)",
    ),
}
_FABRIC_ENV["internet"] = _FABRIC_ENV["ethernet"]


def fabric_env(t: TrainPlan) -> tuple[dict[str, str], tuple[str, ...]]:
    """The NCCL / libfabric environment of the fabric the plan's speed assumes between its
    instances (the offering's inter_node_kind from the catalog), and comment lines saying which
    fabric, at what bandwidth, from where. Empty on one instance."""
    if t.nodes == 1 or t.fabric not in _FABRIC_ENV:
        return {}, ()
    env, source = _FABRIC_ENV[t.fabric]
    gbps = f"{t.fabric_gbps:,.0f} Gbit/s " if t.fabric_gbps else ""
    return dict(env), (
        f"fabric: {gbps}{t.fabric} between the {t.nodes} instances ({t.provider} {t.instance}: "
        "the catalog's inter_node_kind, pricing_data/instance_network.csv); the plan's speed assumes it",
        f"fabric settings: {source}",
    )


def layout_env(t: TrainPlan) -> dict[str, str]:
    """The layout as environment variables (CCOPT_*), for scripts that read their own layout,
    with the workload and, for LoRA / QLoRA, the adapters the plan counted; an fp32 plan also
    turns on TF32 matmuls, which its step time assumes (hardware.peak_tflops)."""
    return fp32_env(t) | _layout_values(t) | _workload_env(t)


def _workload_env(t: TrainPlan) -> dict[str, str]:
    """CCOPT_WORKLOAD (pretrain | finetune | lora | qlora: QLoRA's base is 4-bit NF4, which its
    memory assumes) and the adapters' rank and target modules (q,k,v,o,gate,up,down)."""
    out = {"CCOPT_WORKLOAD": t.workload}
    if t.workload in ("lora", "qlora"):
        out["CCOPT_LORA_RANK"] = str(t.lora_rank or "")
        out["CCOPT_LORA_TARGETS"] = ",".join(t.lora_targets)
    return out


def _layout_values(t: TrainPlan) -> dict[str, str]:
    return {
        "CCOPT_DP": str(t.dp),
        "CCOPT_TP": str(t.tp),
        "CCOPT_PP": str(t.pp),
        "CCOPT_CP": str(t.cp),
        "CCOPT_VP": str(t.vp),
        "CCOPT_ZERO_STAGE": str(t.zero_stage),
        "CCOPT_ACTIVATION_CHECKPOINTING": t.checkpointing,
        "CCOPT_MICRO_BATCH": str(t.micro_batch),
        "CCOPT_GRAD_ACCUM": str(t.grad_accum),
        "CCOPT_GLOBAL_BATCH": str(t.global_batch),
        "CCOPT_SEQ_LEN": str(t.seq_len or ""),
        "CCOPT_STEPS": str(t.steps),
        "CCOPT_PRECISION": t.precision,
        "CCOPT_OFFLOAD": t.offload,
        "CCOPT_MODEL": t.model_ref,
        "CCOPT_FUSED_KERNELS": "1" if t.fused_kernels else "0",
    }


def fp32_env(t: TrainPlan) -> dict[str, str]:
    """An fp32 plan is timed on TF32 tensor cores (GpuSpec.peak_tflops), but PyTorch ≥ 1.12
    leaves `torch.backends.cuda.matmul.allow_tf32` False: TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1
    turns it on for any script (what NGC PyTorch containers set; MONAI docs, "Precision and
    Accelerating": https://docs.monai.io/en/stable/precision_accelerating.html, read 2026-12-05)."""
    return {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"} if t.precision == "fp32" else {}
