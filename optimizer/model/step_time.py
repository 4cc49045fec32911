"""Training step time of a layout on a cluster: compute, communication, pipeline bubble."""

from __future__ import annotations

import math
from dataclasses import replace

from optimizer.errors import ConfigError
from optimizer.model.calibrated import comm_key
from optimizer.model.ceilings import mfu_ceiling
from optimizer.model.cluster import Cluster, StepTime
from optimizer.model.comms import p2p_s, ring_allgather_s, ring_allreduce_s, ring_reduce_scatter_s
from optimizer.model.efficiency import (
    achieved_efficiency,
    attention_efficiency,
    base_efficiency,
    hidden_half,
    size_factor,
)
from optimizer.model.flops import (
    attention_flops_per_token_layer,
    model_flops_per_token,
    training_flops_per_token,
)
from optimizer.model.hardware import GpuSpec
from optimizer.model.memory import lora_params, params_per_gpu, qlora_bytes_per_param
from optimizer.model.pcie import intra_node_bw_gb_s
from optimizer.model.profile import is_profile
from optimizer.model.profile_time import profile_microbatch_times_s, profile_step_time
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import knobs
from optimizer.units import BYTES_PER_DTYPE, GB

__all__ = [
    "Cluster",
    "StepTime",
    "training_step_time",
    "compute_efficiency",
    "bubble_fraction",
    "dp_bus_bandwidth_gb_s",
    "p2p_bandwidth_gb_s",
    "microbatch_times_s",
    "microbatch_size_factor",
    "comm_multiplier",
]

#: activations and gradients travel as bf16 (Megatron/FSDP mixed precision: 2-byte values)
COMM_BYTES = BYTES_PER_DTYPE["bf16"]
#: optimizer update traffic per parameter: fp32 master + two Adam moments + fp32 gradient
#: (Rajbhandari et al. 2020 §3: 16 bytes of mixed-precision Adam state), read and written
ADAM_STATE_BYTES = 16.0


def comm_multiplier(cluster: Cluster, setup: TrainingSetup, a: PerfAssumptions) -> float:
    """The calibrated multiplier of the modelled communication time (before the overlap hides
    part of it) of `setup` on `cluster`'s fabric (optimizer.api.calibrate_comm: stored runs on
    the same GPUs per node and network); 1 elsewhere. An explicit efficiency overrides compute,
    not this."""
    if not a.calibrated_comm:
        return 1.0
    key = comm_key(
        cluster.gpu.gpu_id, setup.precision, setup.stack, cluster.gpus_per_node, cluster.inter_node_gbps
    )
    return a.calibrated_comm.get(key, 1.0)


def bubble_fraction(pp: int, microbatches: int) -> float:
    """1F1B pipeline bubble (p−1)/(m+p−1) of the step (Narayanan et al. 2021, §2.2.1)."""
    return (pp - 1) / (microbatches + pp - 1) if pp > 1 else 0.0


def compute_efficiency(
    gpu: GpuSpec, precision: str, assumptions: PerfAssumptions, stack: str = "generic"
) -> tuple[float, bool]:
    """(efficiency, calibrated?): explicit override > user calibration > default table × fit.

    An upper bound of the achieved efficiency of any layout (the size curve is ≤ 1)."""
    return base_efficiency(gpu, precision, assumptions, stack)


def dp_bus_bandwidth_gb_s(cluster: Cluster, group_spans_nodes: bool, a: PerfAssumptions) -> float:
    """Bus bandwidth of the data-parallel ring in GB/s: NVLink/PCIe inside a node (through host
    memory without peer-to-peer, model.pcie); across nodes the node's NIC (Gbit/s / 8) bounds
    every ring, shared by nothing else (NCCL busBW model)."""
    intra = intra_node_bw_gb_s(cluster.gpu, a)
    if not group_spans_nodes:
        return intra
    return min(intra, cluster.inter_node_gbps / 8.0 * a.link_efficiency)


def p2p_bandwidth_gb_s(cluster: Cluster, spans_nodes: bool, a: PerfAssumptions) -> float:
    """One GPU's point-to-point bandwidth: its NVLink/PCIe share inside a node, its rail (the
    node's NIC bandwidth / GPUs per node, one NIC per GPU on HGX nodes) across nodes."""
    if not spans_nodes:
        return intra_node_bw_gb_s(cluster.gpu, a)
    return cluster.inter_node_gbps / 8.0 / cluster.gpus_per_node * a.link_efficiency


def _flop_split(
    model: ModelSpec, setup: TrainingSetup, checkpointing: str, attention: str
) -> tuple[float, float]:
    """(GEMM, attention-core) hardware FLOPs per token: fp8 applies to the GEMMs only, the
    attention core (Q·Kᵀ, softmax·V) runs in bf16 (Transformer Engine fp8 recipe)."""
    total = training_flops_per_token(model, setup, checkpointing)
    attn = model.layers * attention_flops_per_token_layer(model, setup.seq_len)
    passes = 2.0 if setup.is_adapter else 3.0  # forward + backward (input grads [+ weight grads])
    if checkpointing == "full" or (checkpointing == "selective" and attention == "eager"):
        passes += 1.0
    attn_total = min(attn * passes, total)
    return total - attn_total, attn_total


def microbatch_size_factor(
    model: ModelSpec, setup: TrainingSetup, layout: Layout, assumptions: PerfAssumptions
) -> float:
    """The size factor (efficiency.size_factor) of one micro-batch on one GPU: its b·s/cp
    tokens and the model's hidden size (what a calibrated curve is a function of)."""
    tokens_mb = layout.micro_batch * setup.seq_len / layout.cp
    return size_factor(tokens_mb, model.hidden, hidden_half(assumptions))


def microbatch_times_s(
    model: ModelSpec,
    setup: TrainingSetup,
    layout: Layout,
    cluster: Cluster,
    assumptions: PerfAssumptions | None = None,
) -> tuple[float, float, float, float]:
    """(compute, exposed tensor/context-parallel comm, exposed pipeline p2p, efficiency) of one
    micro-batch on one GPU (per virtual stage chunk summed over the GPU's layers).

    The step time is at least (grad_accum + (pp − 1) / vp) × their sum (micro-batches plus
    bubble), which the planner uses as a cheap lower bound before the full model.
    """
    if is_profile(model):
        return profile_microbatch_times_s(
            model,
            setup,
            layout,
            cluster,
            assumptions,
        )
    a = assumptions or PerfAssumptions()
    k = knobs(setup, a)
    gpu, s, b, cp = cluster.gpu, setup.seq_len, layout.micro_batch, layout.cp
    peak = gpu.peak_tflops(setup.precision)
    if peak is None:
        raise ConfigError(f"{gpu.gpu_id} has no {setup.precision} tensor path")
    tokens_mb = b * s / cp  # tokens of one micro-batch on one GPU of the tp × pp × cp group
    size = microbatch_size_factor(model, setup, layout, a)
    eff = achieved_efficiency(gpu, setup.precision, a, setup.stack, size)

    # compute: GEMMs at the precision's peak; attention core in 16 bit when training in fp8
    gemm_tok, attn_tok = _flop_split(model, setup, layout.checkpointing, k.attention)
    if setup.method == "qlora":
        gemm_tok *= a.qlora_dequant_factor
    if setup.precision == "fp8":
        peak16 = gpu.peak_tflops("bf16") or peak
        eff16 = eff / a.fp8_gemm_factor
    else:
        peak16, eff16 = peak, eff
    if k.attention != "eager":  # fused kernel: its own published fraction of the peak
        eff16 = attention_efficiency(gpu, k.stack.attention_kernel, eff16)
    work = tokens_mb / (layout.tp * layout.pp)
    compute_mb = work * (gemm_tok / (peak * 1e12 * eff) + attn_tok / (peak16 * 1e12 * eff16))
    layers_stage = math.ceil(model.layers / layout.pp)
    if k.attention == "eager":
        # materialised a·s² scores: softmax/mask/dropout passes are memory-bound (Dao et al.
        # 2022 §1: standard attention is bound by HBM reads/writes of the s×s matrix)
        elements = model.heads / layout.tp * tokens_mb * s * layers_stage
        compute_mb += elements * a.eager_score_bytes / (gpu.mem_bandwidth_gb_s * GB * a.bw_efficiency)

    # tensor parallel: 4 all-reduces (SP: reduce-scatter + all-gather, same volume) of b·s·h
    # 2-byte values per layer per micro-batch (Megatron §3; Korthikanti 2022 §4.2.2), +2 with
    # full recompute; the stack hides tp_overlap of it (TE userbuffers); GPUs without
    # peer-to-peer all-reduce through host memory (model.pcie)
    tp_mb = 0.0
    if layout.tp > 1:
        tp_msgs = 4 + (2 if layout.checkpointing == "full" else 0)
        tp_bw = intra_node_bw_gb_s(gpu, a)
        tp_mb = (
            layers_stage
            * tp_msgs
            * ring_allreduce_s(
                tokens_mb * model.hidden * COMM_BYTES, layout.tp, tp_bw, a.small_message_latency_s
            )
        )
        tp_mb *= 1.0 - k.tp_overlap

    # context parallel: ring attention passes each GPU's K, V chunk cp−1 times forward and
    # K, V + their gradients backward (Liu et al. 2023 "Ring Attention" §3), 2-byte values
    if cp > 1:
        chunk = 2 * tokens_mb * model.kv_dim / layout.tp * COMM_BYTES
        passes = 3 + (1 if layout.checkpointing == "full" else 0)
        cp_bw = p2p_bandwidth_gb_s(cluster, layout.tp * cp > cluster.gpus_per_node, a)
        cp_mb = layers_stage * passes * (cp - 1) * p2p_s(chunk, cp_bw, a.small_message_latency_s)
        tp_mb += cp_mb * (1.0 - k.cp_overlap)

    # pipeline: activation send forward + gradient send backward per micro-batch per boundary
    # (vp chunks per GPU: vp times the sends, Narayanan 2021 §2.2.2)
    pp_mb = 0.0
    if layout.pp > 1:
        pp_spans_nodes = layout.tp * layout.cp * layout.pp > cluster.gpus_per_node
        pp_bw = p2p_bandwidth_gb_s(cluster, pp_spans_nodes, a)
        pp_mb = (
            2
            * layout.vp
            * p2p_s(tokens_mb * model.hidden * COMM_BYTES / layout.tp, pp_bw, a.small_message_latency_s)
        )
        pp_mb *= 1.0 - k.pp_overlap
    mu = comm_multiplier(cluster, setup, a)  # a calibrated fabric's (api.calibrate_comm)
    return compute_mb, tp_mb * mu, pp_mb * mu, eff


def training_step_time(
    model: ModelSpec,
    setup: TrainingSetup,
    layout: Layout,
    cluster: Cluster,
    assumptions: PerfAssumptions | None = None,
    microbatch: tuple[float, float, float, float] | None = None,
) -> StepTime:
    """Seconds per optimizer step of `layout` on `cluster`, with breakdown.

    step = m·(compute + TP/CP comm + PP p2p) per micro-batch + bubble (p−1)/v micro-batches
           + exposed DP communication + optimizer update (memory-bound).
    `microbatch` passes a precomputed microbatch_times_s(...) result (the planner caches it).
    """
    a = assumptions or PerfAssumptions()
    if is_profile(model):
        bw = dp_bus_bandwidth_gb_s(cluster, layout.gpus > cluster.gpus_per_node, a)
        return profile_step_time(
            model,
            setup,
            layout,
            cluster,
            bw,
            a,
            microbatch,
        )
    k = knobs(setup, a)
    gpu, s, m = cluster.gpu, setup.seq_len, layout.grad_accum
    peak = gpu.peak_tflops(setup.precision) or 0.0
    calibrated = compute_efficiency(gpu, setup.precision, a, setup.stack)[1]
    compute_mb, tp_mb, pp_mb, eff = microbatch or microbatch_times_s(model, setup, layout, cluster, a)
    per_mb = compute_mb + tp_mb + pp_mb
    bubble = (layout.pp - 1) / layout.vp * per_mb  # interleaved 1F1B (Narayanan 2021 §2.2.2)

    # data parallel over dp × cp GPUs (context-parallel ranks hold the same weights)
    dp_group = layout.dp * layout.cp
    dp_spans_nodes = layout.gpus > cluster.gpus_per_node
    dp_bw = dp_bus_bandwidth_gb_s(cluster, dp_spans_nodes, a)
    held = params_per_gpu(model, layout)  # parameters of this GPU's stage / tp slice
    trained = held
    if setup.is_adapter:
        trained = lora_params(model, setup.lora_rank, setup.lora_targets) / (layout.tp * layout.pp)
    grad_value_bytes = 4.0 if k.stack.fp32_grad_buffer and setup.precision != "fp32" else COMM_BYTES
    grad_bytes = trained * grad_value_bytes
    lat = a.small_message_latency_s
    if layout.zero_stage >= 3:
        # ZeRO-3/FSDP: all-gather the (sharded) weights in forward and backward of every
        # micro-batch + grad reduce-scatter (Rajbhandari 2020 §7: 1.5× the all-reduce volume
        # per step). Adapter methods shard and gather the frozen base too (NF4 for QLoRA).
        weight_bytes = held * COMM_BYTES
        if setup.method == "qlora":
            weight_bytes = held * qlora_bytes_per_param(k.stack.qlora_double_quant)
        gathers = 2 * m * ring_allgather_s(weight_bytes, dp_group, dp_bw, lat)
        dp_comm = gathers + ring_reduce_scatter_s(grad_bytes, dp_group, dp_bw, lat)
        window = compute_mb * m  # gathers prefetch during the whole step
    elif layout.zero_stage >= 1 and not setup.is_adapter:
        # distributed optimizer / ZeRO-1/2: reduce-scatter the gradients, all-gather the updated
        # 16-bit parameters (Megatron dist_optimizer.md; ZeRO §5: same volume as an all-reduce)
        dp_comm = ring_reduce_scatter_s(grad_bytes, dp_group, dp_bw, lat) + ring_allgather_s(
            trained * COMM_BYTES, dp_group, dp_bw, lat
        )
        window = compute_mb  # RS in the last backward, AG in the next forward
    else:
        dp_comm = ring_allreduce_s(grad_bytes, dp_group, dp_bw, lat)  # DDP: one all-reduce
        window = compute_mb * (2.0 / 3.0)  # the last micro-batch's backward hides the reduce
    dp_comm *= comm_multiplier(cluster, setup, a)  # a calibrated fabric's (api.calibrate_comm)
    hidden = min(dp_comm * k.dp_overlap, window)
    dp_exposed = dp_comm - hidden

    # optimizer update: read+write master and moments, memory-bound (16 B/param r+w with fp32
    # master; 8 B for bf16-only stacks)
    shard = dp_group if layout.zero_stage >= 1 else 1
    state_bytes = ADAM_STATE_BYTES if k.stack.fp32_master else ADAM_STATE_BYTES / 2
    opt_s = trained / shard * state_bytes * 2 / (gpu.mem_bandwidth_gb_s * GB * a.bw_efficiency)
    if setup.offload_optimizer:
        opt_s *= a.cpu_adam_slowdown

    compute_s = m * compute_mb
    comm_s = m * (tp_mb + pp_mb) + dp_exposed
    time_s = compute_s + comm_s + bubble + opt_s
    tokens_step = layout.global_batch * s
    tokens_per_s = tokens_step / time_s
    gpus = layout.gpus
    peak_total = peak * 1e12 * gpus
    mfu = model_flops_per_token(model, setup) * tokens_per_s / peak_total
    hfu = training_flops_per_token(model, setup, layout.checkpointing) * tokens_per_s / peak_total
    step = StepTime(
        time_s=time_s,
        compute_s=compute_s + opt_s,
        communication_s=comm_s,
        bubble_s=bubble,
        tokens_per_s=tokens_per_s,
        tokens_per_s_per_gpu=tokens_per_s / gpus,
        mfu=mfu,
        hfu=hfu,
        efficiency=eff,
        calibrated=calibrated,
        parts_s={
            "compute": compute_s,
            "optimizer": opt_s,
            "tp": m * tp_mb,
            "pp": m * pp_mb,
            "dp_total": dp_comm,
            "dp_exposed": dp_exposed,
            "bubble": bubble,
        },
    )
    return step if calibrated or a.efficiency is not None else clip_to_ceiling(step, gpu, setup.precision, a)


def clip_to_ceiling(step: StepTime, gpu: GpuSpec, precision: str, a: PerfAssumptions) -> StepTime:
    """`step` slowed to the MFU ceiling of `gpu` × `precision` when it predicts more (every part
    scaled alike: which part is optimistic is unknown), flagged; else `step` itself."""
    ceiling = mfu_ceiling(gpu, precision, a)
    if step.mfu <= ceiling.mfu:
        return step
    f = step.mfu / ceiling.mfu
    return replace(
        step,
        time_s=step.time_s * f,
        compute_s=step.compute_s * f,
        communication_s=step.communication_s * f,
        bubble_s=step.bubble_s * f,
        tokens_per_s=step.tokens_per_s / f,
        tokens_per_s_per_gpu=step.tokens_per_s_per_gpu / f,
        mfu=ceiling.mfu,
        hfu=step.hfu / f,
        parts_s={k: v * f for k, v in step.parts_s.items()},
        mfu_unclipped=step.mfu,
        ceiling_note=(
            f"predicted MFU {step.mfu:.0%} clipped to {ceiling.mfu:.0%}, {ceiling.describe(gpu, precision)}"
        ),
    )
