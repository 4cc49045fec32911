"""Training step time of a layout on a cluster: compute, communication, pipeline bubble."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from optimizer.errors import ConfigError
from optimizer.model.comms import p2p_s, ring_allgather_s, ring_allreduce_s, ring_reduce_scatter_s
from optimizer.model.efficiency import default_efficiency, size_factor
from optimizer.model.flops import model_flops_per_token, training_flops_per_token
from optimizer.model.hardware import GpuSpec
from optimizer.model.memory import lora_params, params_per_gpu, qlora_bytes_per_param
from optimizer.model.setup import Layout, PerfAssumptions, TrainingSetup
from optimizer.model.spec import ModelSpec
from optimizer.units import BYTES_PER_DTYPE, GB

__all__ = ["Cluster", "StepTime", "training_step_time", "compute_efficiency", "bubble_fraction",
           "dp_bus_bandwidth_gb_s"]

#: activations and gradients travel as bf16 (Megatron/FSDP mixed precision: 2-byte values)
COMM_BYTES = BYTES_PER_DTYPE["bf16"]
#: optimizer update traffic per parameter: fp32 master + two Adam moments + fp32 gradient
#: (Rajbhandari et al. 2020 §3: 16 bytes of mixed-precision Adam state), read and written
ADAM_STATE_BYTES = 16.0


@dataclass(frozen=True)
class Cluster:
    """The hardware a layout runs on: `nodes` instances of `gpus_per_node` GPUs each."""

    gpu: GpuSpec
    gpus_per_node: int
    nodes: int = 1
    inter_node_gbps: float = 100.0  # Gbit/s per node (NIC aggregate)

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * self.nodes


@dataclass(frozen=True)
class StepTime:
    """One optimizer step in seconds, with its parts and throughput figures."""

    time_s: float
    compute_s: float
    communication_s: float
    bubble_s: float
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    mfu: float
    hfu: float
    efficiency: float
    calibrated: bool
    parts_s: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, float]:
        return {"time_s": round(self.time_s, 4), "compute_s": round(self.compute_s, 4),
                "communication_s": round(self.communication_s, 4),
                "bubble_s": round(self.bubble_s, 4)}


def bubble_fraction(pp: int, microbatches: int) -> float:
    """1F1B pipeline bubble (p−1)/(m+p−1) of the step (Narayanan et al. 2021, §2.2.1)."""
    return (pp - 1) / (microbatches + pp - 1) if pp > 1 else 0.0


def compute_efficiency(gpu: GpuSpec, precision: str, assumptions: PerfAssumptions) -> tuple[float, bool]:
    """(efficiency, calibrated?): explicit override > user calibration > default table."""
    if assumptions.efficiency is not None:
        return assumptions.efficiency, False
    key = (gpu.gpu_id, precision)
    if key in assumptions.calibrated:
        return assumptions.calibrated[key], True
    return default_efficiency(gpu, precision), False


def dp_bus_bandwidth_gb_s(cluster: Cluster, group_spans_nodes: bool, a: PerfAssumptions) -> float:
    """Bus bandwidth of the data-parallel ring in GB/s: NVLink/PCIe inside a node; across nodes
    the node's NIC (Gbit/s / 8) bounds every ring, shared by nothing else (NCCL busBW model)."""
    intra = cluster.gpu.intra_node_bw_gb_s * a.link_efficiency
    if not group_spans_nodes:
        return intra
    return min(intra, cluster.inter_node_gbps / 8.0 * a.link_efficiency)


def microbatch_times_s(model: ModelSpec, setup: TrainingSetup, layout: Layout, cluster: Cluster,
                       assumptions: PerfAssumptions | None = None) -> tuple[float, float, float, float]:
    """(compute, tensor-parallel comm, pipeline p2p, efficiency) of one micro-batch on one GPU.

    The step time is at least (grad_accum + pp − 1) × their sum (micro-batches plus bubble),
    which the planner uses as a cheap lower bound before the full model.
    """
    a = assumptions or PerfAssumptions()
    gpu, s, b = cluster.gpu, setup.seq_len, layout.micro_batch
    peak = gpu.peak_tflops(setup.precision)
    if peak is None:
        raise ConfigError(f"{gpu.gpu_id} has no {setup.precision} tensor path")
    eff_base = compute_efficiency(gpu, setup.precision, a)[0]
    eff = eff_base * size_factor(b * s, model.hidden)
    tokens_mb = b * s  # tokens of one micro-batch in one DP replica

    # compute: FLOPs of one micro-batch on one GPU (split over tp × pp)
    hw_flops_tok = training_flops_per_token(model, setup, layout.checkpointing)
    if setup.method == "qlora":
        hw_flops_tok *= a.qlora_dequant_factor
    compute_mb = hw_flops_tok * tokens_mb / (layout.tp * layout.pp) / (peak * 1e12 * eff)

    # tensor parallel: 4 all-reduces of b·s·h (2-byte) per layer per micro-batch (Megatron §3),
    # +2 with full recompute; on the intra-node link
    tp_mb = 0.0
    if layout.tp > 1:
        layers_stage = math.ceil(model.layers / layout.pp)
        tp_msgs = 4 + (2 if layout.checkpointing == "full" else 0)
        tp_bw = gpu.intra_node_bw_gb_s * a.link_efficiency
        tp_mb = layers_stage * tp_msgs * ring_allreduce_s(
            tokens_mb * model.hidden * COMM_BYTES, layout.tp, tp_bw, a.small_message_latency_s)

    # pipeline: activation send forward + gradient send backward per micro-batch per boundary
    pp_mb = 0.0
    if layout.pp > 1:
        pp_spans_nodes = layout.tp * layout.pp > cluster.gpus_per_node
        pp_bw = (cluster.inter_node_gbps / 8.0 if pp_spans_nodes else gpu.intra_node_bw_gb_s) \
            * a.link_efficiency
        pp_mb = 2 * p2p_s(tokens_mb * model.hidden * COMM_BYTES / layout.tp, pp_bw,
                          a.small_message_latency_s)
    return compute_mb, tp_mb, pp_mb, eff


def training_step_time(model: ModelSpec, setup: TrainingSetup, layout: Layout, cluster: Cluster,
                       assumptions: PerfAssumptions | None = None,
                       microbatch: tuple[float, float, float, float] | None = None) -> StepTime:
    """Seconds per optimizer step of `layout` on `cluster`, with breakdown.

    step = m·(compute + TP comm + PP p2p) per micro-batch + (p−1) micro-batches of bubble
           + exposed DP communication + optimizer update (memory-bound).
    `microbatch` passes a precomputed microbatch_times_s(...) result (the planner caches it).
    """
    a = assumptions or PerfAssumptions()
    gpu, s, m = cluster.gpu, setup.seq_len, layout.grad_accum
    peak = gpu.peak_tflops(setup.precision) or 0.0
    calibrated = compute_efficiency(gpu, setup.precision, a)[1]
    compute_mb, tp_mb, pp_mb, eff = microbatch or microbatch_times_s(model, setup, layout,
                                                                     cluster, a)
    per_mb = compute_mb + tp_mb + pp_mb
    bubble = (layout.pp - 1) * per_mb

    # data parallel: gradient (and ZeRO-3 parameter) traffic, bf16 (2 B) values
    dp_spans_nodes = layout.gpus > cluster.gpus_per_node
    dp_bw = dp_bus_bandwidth_gb_s(cluster, dp_spans_nodes, a)
    held = params_per_gpu(model, layout)  # parameters of this GPU's stage / tp slice
    trained = held
    if setup.is_adapter:

        trained = lora_params(model, setup.lora_rank, setup.lora_targets) / (layout.tp * layout.pp)
    grad_bytes = trained * COMM_BYTES
    lat = a.small_message_latency_s
    if layout.zero_stage >= 3:
        # ZeRO-3/FSDP: all-gather the (sharded) weights in forward and backward of every
        # micro-batch + grad reduce-scatter (Rajbhandari 2020 §7: 1.5× the all-reduce volume
        # per step). Adapter methods shard and gather the frozen base too (NF4 for QLoRA).
        weight_bytes = held * COMM_BYTES
        if setup.method == "qlora":
            weight_bytes = held * qlora_bytes_per_param()
        gathers = 2 * m * ring_allgather_s(weight_bytes, layout.dp, dp_bw, lat)
        dp_comm = gathers + ring_reduce_scatter_s(grad_bytes, layout.dp, dp_bw, lat)
    else:
        # DDP / ZeRO-1/2: one all-reduce (or reduce-scatter + all-gather) per step
        dp_comm = ring_allreduce_s(grad_bytes, layout.dp, dp_bw, lat)
    backward_compute = compute_mb * (2.0 / 3.0)  # last micro-batch's backward hides the reduce
    if layout.zero_stage >= 3:
        backward_compute = compute_mb * m  # gathers prefetch during the whole step
    hidden = min(dp_comm * a.dp_overlap, backward_compute)
    dp_exposed = dp_comm - hidden

    # optimizer update: read+write fp32 master and moments, memory-bound (16 B/param r+w)
    shard = layout.dp if layout.zero_stage >= 1 else 1
    opt_s = trained / shard * ADAM_STATE_BYTES * 2 / (gpu.mem_bandwidth_gb_s * GB * a.bw_efficiency)
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
    return StepTime(
        time_s=time_s, compute_s=compute_s + opt_s, communication_s=comm_s, bubble_s=bubble,
        tokens_per_s=tokens_per_s, tokens_per_s_per_gpu=tokens_per_s / gpus, mfu=mfu, hfu=hfu,
        efficiency=eff, calibrated=calibrated,
        parts_s={"compute": compute_s, "optimizer": opt_s, "tp": m * tp_mb, "pp": m * pp_mb,
                 "dp_total": dp_comm, "dp_exposed": dp_exposed, "bubble": bubble},
    )
