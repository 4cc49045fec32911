"""Inference performance of one replica: prefill (compute-bound) and decode (bandwidth-bound).

Roofline view (Williams et al. 2009) as applied to LLM inference in Pope et al. 2022
("Efficiently Scaling Transformer Inference", §2): prefill costs 2·N FLOPs per prompt token;
each decode step reads all weights plus the KV cache of every sequence in the batch once.
Continuous batching (Yu et al. 2022, Orca; vLLM) interleaves prefills with decode steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from optimizer.model.comms import ring_allreduce_s
from optimizer.model.efficiency import default_efficiency, hidden_half, serve_multipliers
from optimizer.model.hardware import GpuSpec
from optimizer.model.memory import kv_cache_bytes_per_token, serving_memory, serving_weight_bytes
from optimizer.model.setup import PerfAssumptions, ServeSetup
from optimizer.model.spec import ModelSpec
from optimizer.model.stacks import get_stack
from optimizer.units import GB

__all__ = ["ServePerf", "serving_perf", "compute_precision_for_weights", "serving_max_batch"]


@dataclass(frozen=True)
class ServePerf:
    """Latency and throughput of one replica at a fixed concurrency."""

    ttft_s: float  # time to first token of a request (its prefill + one step)
    tpot_s: float  # time per output token seen by a request, prefills interleaved
    decode_step_s: float  # one decode step of the whole batch
    prefill_s: float  # prefill of one request
    output_tokens_per_s: float
    requests_per_s: float
    bound: str  # "memory" or "compute" for the decode step
    parts_s: dict[str, float] = field(default_factory=dict)  # per-iteration terms (seconds)


def compute_precision_for_weights(gpu: GpuSpec, weight_precision: str) -> str:
    """Matmul precision: fp8/int8 weights use the 8-bit path where the GPU has one; weight-only
    4-bit formats dequantise to fp16 (AWQ/GPTQ kernels)."""
    if weight_precision in ("fp8", "int8") and gpu.fp8_tflops:
        return "fp8"
    if gpu.bf16_tflops and weight_precision == "bf16":
        return "bf16"
    return "fp16" if gpu.fp16_tflops else "bf16"


def serving_perf(model: ModelSpec, serve: ServeSetup, gpu: GpuSpec, tp: int,
                 prompt_tokens: int, output_tokens: int,
                 assumptions: PerfAssumptions | None = None) -> ServePerf:
    """Steady-state performance of a replica of `tp` GPUs serving `serve.batch` sequences."""
    a = assumptions or PerfAssumptions()
    precision = compute_precision_for_weights(gpu, serve.weight_precision)
    peak = (gpu.peak_tflops(precision) or gpu.fp32_tflops or 1.0) * 1e12 * tp
    fit = serve_multipliers(gpu, serve.stack, a)  # fitted per generation × stack, GPU class
    eff = min(1.0, (a.efficiency if a.efficiency is not None else a.calibrated.get(
        (gpu.gpu_id, precision), default_efficiency(gpu, precision))) * fit.flops)
    # GEMMs of a tp-way split replica are tp times narrower per GPU: the training size curve
    # (efficiency.size_factor, h/(h + half)) at width hidden/tp, relative to the full width
    width = model.hidden / tp
    eff *= width / (width + hidden_half(a)) * (model.hidden + hidden_half(a)) / model.hidden
    bw_eff = min(1.0, a.bw_efficiency * fit.bandwidth)
    n_active = model.active_params()
    # MoE: the routed expert GEMMs (grouped GEMMs of B·k/E tokens each) run at fit.moe × the
    # dense efficiency; counted as extra equivalent parameters (Fedus et al. 2022 §2: per
    # token only k experts' FFN FLOPs; the grouped-GEMM efficiency is the fitted part)
    if model.is_moe:
        expert = model.layers * model.moe_active * model.mlp_params()
        n_active += expert * (1.0 / fit.moe - 1.0)
    link_bw = gpu.intra_node_bw_gb_s * a.link_efficiency * fit.comm
    lat = a.small_message_latency_s

    # prefill: 2·N per token + causal attention 2·s²·(a·d) per layer (half of the full s×s)
    p = prompt_tokens
    prefill_flops = 2.0 * n_active * p + 2.0 * model.layers * p * p * model.q_dim
    prefill_comm = 2 * model.layers * ring_allreduce_s(p * model.hidden * 2, tp, link_bw, lat)
    prefill_s = prefill_flops / (peak * eff) + prefill_comm

    # decode: read weights once + KV of every sequence (mean context p + o/2) per step
    batch = serve.batch
    context = p + output_tokens / 2.0
    bytes_step = serving_weight_bytes(model, serve.weight_precision) \
        + kv_cache_bytes_per_token(model, serve.kv_precision) * batch * context
    mem_s = bytes_step / (gpu.mem_bandwidth_gb_s * GB * bw_eff * tp)
    flops_step = 2.0 * n_active * batch + 4.0 * model.layers * context * model.q_dim * batch
    comp_s = flops_step / (peak * eff)
    comm_s = 2 * model.layers * ring_allreduce_s(batch * model.hidden * 2, tp, link_bw, lat)
    step_s = max(mem_s, comp_s) + comm_s

    # continuous batching: per request cycle the replica spends B prefills + O decode steps
    cycle_s = batch * prefill_s + output_tokens * step_s
    if get_stack(serve.stack).fused_prefill:
        # in-flight batching fuses prompt chunks into the decode iterations (TensorRT-LLM IFB,
        # vLLM chunked prefill; Agrawal et al. 2024 "Sarathi-Serve" §3): each of the O
        # iterations carries B/O prompts' tokens, shares one weight read, one all-reduce
        iter_flops = flops_step + batch * prefill_flops / output_tokens
        iter_tokens = batch * (1.0 + p / output_tokens)
        iter_comm = 2 * model.layers * ring_allreduce_s(iter_tokens * model.hidden * 2, tp,
                                                        link_bw, lat)
        cycle_s = output_tokens * (max(mem_s, iter_flops / (peak * eff)) + iter_comm)
    requests_per_s = batch / cycle_s
    tpot_s = cycle_s / output_tokens
    return ServePerf(
        ttft_s=prefill_s + step_s, tpot_s=tpot_s, decode_step_s=step_s, prefill_s=prefill_s,
        output_tokens_per_s=requests_per_s * output_tokens, requests_per_s=requests_per_s,
        bound="memory" if mem_s >= comp_s else "compute",
        parts_s={"weights_kv_read": mem_s, "decode_flops": comp_s, "decode_comm": comm_s,
                 "prefill": prefill_s, "cycle": cycle_s},
    )


def serving_max_batch(model: ModelSpec, serve: ServeSetup, gpu: GpuSpec, tp: int = 1,
                      assumptions: PerfAssumptions | None = None, cap: int | None = None) -> int:
    """Largest concurrent batch a replica holds (`--batch max`): KV memory of the stack's
    budget, at the stack's KV occupancy, capped by its scheduler limit (stacks.toml max_batch).

    The budget is kv_memory_fraction × the card (vLLM gpu_memory_utilization) minus weights,
    activations and the stack's reserve; `serve.batch` is ignored. Returns 0 when not even one
    sequence fits.
    """
    a = assumptions or PerfAssumptions()
    prof = get_stack(serve.stack)
    limit = min(prof.max_batch, cap) if cap else prof.max_batch
    budget = gpu.memory_gib * prof.kv_memory_fraction

    def fits(batch: int) -> bool:
        mem = serving_memory(model, replace(serve, batch=batch), tp, a)
        return mem.total + mem.context <= budget

    if not fits(1):
        return 0
    lo, hi = 1, limit
    if fits(hi):
        return hi
    while hi - lo > 1:  # invariant: fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo
